/* kiln-run's --governor where the build has no governor (the freestanding Hexagon build:
 * no sysfs, no clock to sleep on): the flag is refused with a message. */
#include "kiln-run.h"

int run_governor_attach(const run_options_t *o, const kiln_artifact_t *a, kiln_session_t *s) {
  (void)a;
  (void)s;
  return o->governor ? run_fail("--governor: this build of kiln-run has no governor") : 0;
}

void run_governor_close(void) {}
