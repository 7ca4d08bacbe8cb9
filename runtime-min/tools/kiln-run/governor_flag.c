/* kiln-run --governor SPEC [--governor-log FILE]: paces generate, chat and bench with
 * runtime-min's governor (kiln/governor.h). SPEC is key=value pairs separated by commas:
 *   tok-s=T        hold T tokens/s          temp=C      temperature ceiling (deg C)
 *   power=W        power ceiling (W)        headroom=H  NDK headroom ceiling (Android)
 *   slowdown=X     tokens X times slower than the best count as over a ceiling
 *   period=S       control period (s)       stale=S     unchanged this long: not trusted
 *   min-threads=N  max-threads=N            zones=P1:P2 temperature files
 *   zone-types=T1:T2 (thermal zone types to read)   power-path=P (power_now/current_now)
 * Every decision is written to the log (stderr when none is given), one line each. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln-run.h"
#include "kiln/governor.h"

static kiln_governor_t *g_governor;
static FILE *g_log;
static char g_spec[1024]; /* the strings the config points into */

static void log_decision(void *user, const kiln_governor_decision_t *d) {
  FILE *f = user;
  fprintf(f,
          "governor t=%.3f temp=%.1f(%s) power=%.2f(%s) headroom=%.2f token_ms=%.3f "
          "best_ms=%.3f tokens=%u pace=%.2f idle_ms=%.3f threads=%u: %s\n",
          d->t_s, d->temp_c, d->temp_state, d->power_w, d->power_state, d->headroom,
          d->token_s * 1e3, d->best_token_s * 1e3, d->tokens, d->pace_tok_s, d->idle_s * 1e3,
          d->threads, d->reason);
  fflush(f);
}

static int number(const char *key, const char *v, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !(x >= lo && x <= hi))
    return run_fail("--governor %s=%s: expected a number in %g..%g", key, v, lo, hi);
  *out = x;
  return 0;
}

int run_governor_parse(const char *spec, kiln_governor_config_t *c) {
  *c = kiln_governor_config_default();
  if (strlen(spec) >= sizeof g_spec)
    return run_fail("--governor: the spec is longer than %zu bytes", sizeof g_spec - 1);
  strcpy(g_spec, spec);
  for (char *item = strtok(g_spec, ","); item; item = strtok(NULL, ",")) {
    char *v = strchr(item, '=');
    if (!v)
      return run_fail("--governor: '%s' is not key=value (keys: tok-s, temp, power, "
                      "headroom, slowdown, period, stale, min-threads, max-threads, zones, "
                      "zone-types, power-path)", item);
    *v++ = '\0';
    double x = 0;
    int bad = 0;
    if (!strcmp(item, "tok-s"))
      bad = number(item, v, 0.01, 1e6, &c->target_tok_s);
    else if (!strcmp(item, "temp"))
      bad = number(item, v, 1, 150, &c->max_temp_c);
    else if (!strcmp(item, "power"))
      bad = number(item, v, 0.01, 100, &c->max_power_w);
    else if (!strcmp(item, "headroom"))
      bad = number(item, v, 0.01, 10, &c->max_headroom);
    else if (!strcmp(item, "slowdown"))
      bad = number(item, v, 1.01, 100, &c->max_slowdown);
    else if (!strcmp(item, "period"))
      bad = number(item, v, 0.001, 3600, &c->period_s);
    else if (!strcmp(item, "stale"))
      bad = number(item, v, 0.1, 86400, &c->stale_s);
    else if (!strcmp(item, "min-threads") || !strcmp(item, "max-threads")) {
      bad = number(item, v, 1, 1024, &x);
      if (!bad && x != floor(x))
        bad = run_fail("--governor %s=%s: expected a whole number", item, v);
      *(item[1] == 'i' ? &c->min_threads : &c->max_threads) = (uint32_t)x;
    } else if (!strcmp(item, "zones"))
      c->thermal_paths = v;
    else if (!strcmp(item, "zone-types"))
      c->thermal_types = v;
    else if (!strcmp(item, "power-path"))
      c->power_path = v;
    else
      return run_fail("--governor: unknown key '%s'", item);
    if (bad)
      return 1;
  }
  return 0;
}

int run_governor_attach(const run_options_t *o, kiln_session_t *s) {
  if (!o->governor)
    return 0;
  kiln_governor_config_t c;
  if (run_governor_parse(o->governor, &c))
    return 1;
  g_log = stderr;
  if (o->governor_log && !(g_log = fopen(o->governor_log, "w")))
    return run_fail("cannot write the governor log '%s'", o->governor_log);
  c.log = log_decision;
  c.log_user = g_log;
  kiln_error_t err;
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
