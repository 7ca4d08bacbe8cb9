/* kiln-run --governor SPEC [--governor-log FILE]: paces generate, chat and bench with
 * runtime-min's governor (kiln/governor.h; SPEC as kiln_governor_config_parse reads it).
 * Every decision is written to the log (stderr when none is given), one line each. */
#include <stdio.h>

#include "kiln-run.h"
#include "kiln/governor.h"

static kiln_governor_t *g_governor;
static FILE *g_log;
static char g_spec[1024]; /* the strings the config points into */

static void log_decision(void *user, const kiln_governor_decision_t *d) {
  FILE *f = user;
  char line[512];
  kiln_governor_format_decision(d, line, sizeof line);
  fprintf(f, "%s\n", line);
  fflush(f);
}

int run_governor_attach(const run_options_t *o, const kiln_artifact_t *a, kiln_session_t *s) {
  if (!o->governor)
    return 0;
  /* The chip's defaults from the artifact first (skip=1 on a phone with one prime core),
   * then --governor's keys, which override. */
  kiln_artifact_info_t info;
  kiln_artifact_info(a, &info);
  char spec[sizeof g_spec];
  const int n = snprintf(spec, sizeof spec, "%s%s%s", info.governor_defaults,
                         *info.governor_defaults ? "," : "", o->governor);
  if (n < 0 || (size_t)n >= sizeof spec)
    return run_fail("--governor: the spec is longer than %zu bytes", sizeof spec - 1);
  kiln_governor_config_t c;
  kiln_error_t err;
  if (kiln_governor_config_parse(spec, &c, g_spec, sizeof g_spec, &err) != KILN_STATUS_OK)
    return run_fail("--governor: %s", err.message);
  g_log = stderr;
  if (o->governor_log && !(g_log = fopen(o->governor_log, "w")))
    return run_fail("cannot write the governor log '%s'", o->governor_log);
  c.log = log_decision;
  c.log_user = g_log;
  if (kiln_governor_create(&c, NULL, &g_governor, &err) != KILN_STATUS_OK ||
      kiln_session_set_governor(s, g_governor, &err) != KILN_STATUS_OK)
    return run_fail("%s", err.message);
  return 0;
}

void run_governor_close(void) {
  kiln_governor_destroy(g_governor);
  g_governor = NULL;
  if (g_log && g_log != stderr)
    fclose(g_log);
  g_log = NULL;
}
