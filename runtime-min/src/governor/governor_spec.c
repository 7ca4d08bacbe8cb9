/* The governor's text forms: a config from "key=value,..." and a decision as one line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../platform/error.h"
#include "kiln/governor.h"

static kiln_status_t number(const char *key, const char *v, double lo, double hi, int whole,
                            double *out, kiln_error_t *err) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !(x >= lo && x <= hi) || (whole && x != floor(x)))
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "%s=%s: expected a %s in %g..%g", key, v,
                          whole ? "whole number" : "number", lo, hi);
  *out = x;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_governor_config_parse(const char *spec, kiln_governor_config_t *c,
                                         char *storage, size_t cap, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!spec || !c || !storage)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL spec, config or storage");
  *c = kiln_governor_config_default();
  if (strlen(spec) >= cap)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "the spec is longer than its storage (%zu bytes)", cap - 1);
  strcpy(storage, spec);
  char *save = NULL;
  for (char *item = strtok_r(storage, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *v = strchr(item, '=');
    if (!v)
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' is not key=value (keys: tok-s, temp, power, headroom, "
                            "slowdown, period, stale, min-threads, max-threads, skip, zones, "
                            "zone-types, power-path)", item);
    *v++ = '\0';
    double x = 0;
    kiln_status_t st = KILN_STATUS_OK;
    if (!strcmp(item, "tok-s"))
      st = number(item, v, 0.01, 1e6, 0, &c->target_tok_s, err);
    else if (!strcmp(item, "temp"))
      st = number(item, v, 1, 150, 0, &c->max_temp_c, err);
    else if (!strcmp(item, "power"))
      st = number(item, v, 0.01, 100, 0, &c->max_power_w, err);
    else if (!strcmp(item, "headroom"))
      st = number(item, v, 0.01, 10, 0, &c->max_headroom, err);
    else if (!strcmp(item, "slowdown"))
      st = number(item, v, 1.01, 100, 0, &c->max_slowdown, err);
    else if (!strcmp(item, "period"))
      st = number(item, v, 0.001, 3600, 0, &c->period_s, err);
    else if (!strcmp(item, "stale"))
      st = number(item, v, 0.1, 86400, 0, &c->stale_s, err);
    else if (!strcmp(item, "skip")) {
      st = number(item, v, 0, 1024, 1, &x, err);
      c->skip_fastest = (uint32_t)x;
    } else if (!strcmp(item, "min-threads") || !strcmp(item, "max-threads")) {
      st = number(item, v, 1, 1024, 1, &x, err);
      *(item[1] == 'i' ? &c->min_threads : &c->max_threads) = (uint32_t)x;
    } else if (!strcmp(item, "zones"))
      c->thermal_paths = v;
    else if (!strcmp(item, "zone-types"))
      c->thermal_types = v;
    else if (!strcmp(item, "power-path"))
      c->power_path = v;
    else
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "unknown key '%s'", item);
    if (st != KILN_STATUS_OK)
      return st;
  }
  if (c->max_threads && c->min_threads > c->max_threads)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "min-threads %u is above max-threads %u", c->min_threads,
                          c->max_threads);
  return KILN_STATUS_OK;
}

int kiln_governor_format_decision(const kiln_governor_decision_t *d, char *out, size_t cap) {
  return snprintf(out, cap,
                  "governor t=%.3f temp=%.1f(%s) power=%.2f(%s) headroom=%.2f token_ms=%.3f "
                  "best_ms=%.3f tokens=%u pace=%.2f idle_ms=%.3f threads=%u%s%.0u: %s",
                  d->t_s, d->temp_c, d->temp_state, d->power_w, d->power_state, d->headroom,
                  d->token_s * 1e3, d->best_token_s * 1e3, d->tokens, d->pace_tok_s,
                  d->idle_s * 1e3, d->threads, d->skip_cores ? " skip=" : "", d->skip_cores,
                  d->reason);
}
