/* kiln-run's --module where the build has no module library (the freestanding Hexagon
 * build: its program links one model's code and weights): the flag is refused. */
#include "kiln-run.h"

int run_modules_apply(const run_options_t *o, const uint8_t *public_key, kiln_session_t *s) {
  (void)public_key;
  (void)s;
  return o->n_modules ? run_fail("--module: this build of kiln-run has no module support") : 0;
}
