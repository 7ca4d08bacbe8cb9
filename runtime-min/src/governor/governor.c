/* The governor: the policy is described in kiln/governor.h. */
#include "kiln/governor.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "../exec/session_internal.h"
#include "../platform/error.h"
#include "sensors.h"

#define MAX_TRACKED_THREADS 64 /* per-thread-count speeds kept; more threads are not probed */
#define BACKOFF 0.85           /* pace factor per period over a ceiling */
#define RELEASE 1.02           /* pace factor per period below every ceiling's band */
#define CREEP 1.01             /* ... in the band and cooling since the last cut */
#define TEMP_SETTLE_S 15.0     /* a cut's effect on temperature takes this long to show */
#define TEMP_STILL_RISING_C 0.15 /* ... unless it climbs this far past where it was cut */
#define THREAD_SLACK 0.03      /* unpaced: fewer threads if they keep 97% of the speed */
#define PROBE_BLOCK_S 30.0     /* after a probe that lost speed, stay put this long, */
#define PROBE_BLOCK_MAX_S 480.0 /* doubled per failed probe in a row up to this */
#define PROBE_UP_AFTER_S 60.0  /* unpaced: retry one thread more when its speed is this old */

struct kiln_governor_s {
  kiln_governor_config_t cfg;
  kiln_allocator_t alloc;
  char zones[KILN_GOVERNOR_MAX_ZONES][KILN_SENSOR_PATH_MAX];
  kiln_sensor_track_t zone_track[KILN_GOVERNOR_MAX_ZONES];
  uint32_t n_zones;
  int want_temp, want_power;
  char power_path[KILN_SENSOR_PATH_MAX];
  kiln_sensor_track_t temp_hook_track, power_track;
  kiln_ndk_thermal_t ndk;
  double t0, period_start, next_start;
  double sum_compute;
  uint32_t tokens, threads_run;
  /* speeds per thread count, [0] on the fastest cores, [1] with skip_fastest left out */
  double best[2][MAX_TRACKED_THREADS + 1], recent[2][MAX_TRACKED_THREADS + 1],
      recent_at[2][MAX_TRACKED_THREADS + 1];
  uint32_t threads, max_threads, probe_from;
  uint32_t skip;         /* cores the threads leave: 0 or cfg.skip_fastest */
  uint32_t skip_applied; /* what the session last did with it (pace_after) */
  double probe_blocked_until, probe_block_s;
  double cap;  /* pace the ceilings allow; 0 = none */
  double temp_cut_at, temp_cut_c; /* the last cut for temperature: when, at what reading */
  double pace; /* min(target, cap); 0 = unpaced */
  kiln_governor_decision_t last;
  kiln_session_t *session;
};

static double real_clock(void *user) {
  (void)user;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void real_sleep(void *user, double seconds) {
  (void)user;
  if (!(seconds > 0))
    return;
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

kiln_governor_config_t kiln_governor_config_default(void) {
  kiln_governor_config_t c;
  memset(&c, 0, sizeof c);
  c.temp_band_c = 2.0;
  c.band = 0.1;
  c.period_s = 1.0;
  c.stale_s = 120.0;
  c.headroom_forecast_s = 10.0;
  c.min_tok_s = 1.0;
  return c;
}

static int bad(double v, double lo, double hi) { return !(v >= lo && v <= hi); }

static kiln_status_t check_config(const kiln_governor_config_t *c, kiln_error_t *err) {
  struct {
    const char *name;
    double v, lo, hi;
  } f[] = {{"target_tok_s", c->target_tok_s, 0, 1e6},  {"max_temp_c", c->max_temp_c, 0, 150},
           {"max_power_w", c->max_power_w, 0, 100},    {"max_headroom", c->max_headroom, 0, 10},
           {"max_slowdown", c->max_slowdown, 0, 100},  {"min_tok_s", c->min_tok_s, 0, 1e6},
           {"temp_band_c", c->temp_band_c, 0, 50},     {"band", c->band, 0, 0.9},
           {"period_s", c->period_s, 0, 3600},         {"stale_s", c->stale_s, 0, 86400},
           {"headroom_forecast_s", c->headroom_forecast_s, 0, 300}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; ++i)
    if (bad(f[i].v, f[i].lo, f[i].hi))
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                            "governor: %s = %g is outside %g..%g", f[i].name, f[i].v, f[i].lo,
                            f[i].hi);
  if (c->max_slowdown > 0 && c->max_slowdown < 1.01)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "governor: max_slowdown = %g must be 0 (off) or at least 1.01",
                          c->max_slowdown);
  if (c->skip_fastest > 1024)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "governor: skip_fastest = %u is above 1024", c->skip_fastest);
  if (c->max_threads > 1024 || (c->max_threads && c->min_threads > c->max_threads))
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "governor: threads %u..%u: need min <= max <= 1024", c->min_threads,
                          c->max_threads);
  if (!c->read_power_w && c->power_path && strlen(c->power_path) >= KILN_SENSOR_PATH_MAX)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "governor: power_path is longer than %d bytes",
                          KILN_SENSOR_PATH_MAX - 1);
  return KILN_STATUS_OK;
}

static void add_paths(kiln_governor_t *g, const char *list) {
  for (const char *p = list; *p && g->n_zones < KILN_GOVERNOR_MAX_ZONES;) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0 && len < KILN_SENSOR_PATH_MAX) {
      memcpy(g->zones[g->n_zones], p, len);
      g->zones[g->n_zones++][len] = '\0';
    }
    p += len + (end != NULL);
  }
}

kiln_status_t kiln_governor_create(const kiln_governor_config_t *config,
                                   const kiln_allocator_t *allocator,
                                   kiln_governor_t **out_governor, kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!out_governor)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "out_governor is NULL");
  *out_governor = NULL;
  kiln_governor_config_t c = config ? *config : kiln_governor_config_default();
  KILN_RETURN_IF_ERROR(check_config(&c, out_error));
  const kiln_governor_config_t d = kiln_governor_config_default();
  if (c.temp_band_c == 0) c.temp_band_c = d.temp_band_c;
  if (c.band == 0) c.band = d.band;
  if (c.period_s == 0) c.period_s = d.period_s;
  if (c.stale_s == 0) c.stale_s = d.stale_s;
  if (c.headroom_forecast_s == 0) c.headroom_forecast_s = d.headroom_forecast_s;
  if (c.min_tok_s == 0) c.min_tok_s = d.min_tok_s;
  if (!c.clock_s) c.clock_s = real_clock;
  if (!c.sleep_s) c.sleep_s = real_sleep;
  kiln_allocator_t alloc;
  KILN_RETURN_IF_ERROR(kiln_allocator_resolve(allocator, &alloc, out_error));
  kiln_governor_t *g = kiln_mem_alloc(&alloc, sizeof *g, 64, "the governor", out_error);
  if (!g)
    return out_error ? out_error->status : KILN_STATUS_OUT_OF_MEMORY;
  memset(g, 0, sizeof *g);
  g->alloc = alloc;
  g->cfg = c;
  g->want_temp = c.read_temp_c != NULL;
  if (!c.read_temp_c) {
    if (!c.thermal_paths) {
      g->want_temp = 1;
      g->n_zones = kiln_sensor_find_zones(c.sysfs_root ? c.sysfs_root : "/sys",
                                          c.thermal_types ? c.thermal_types
                                                          : "cpu:soc:skin:x86_pkg",
                                          g->zones, KILN_GOVERNOR_MAX_ZONES);
    } else if (*c.thermal_paths) {
      g->want_temp = 1;
      add_paths(g, c.thermal_paths);
    }
  }
  g->want_power = c.read_power_w != NULL || (c.power_path && *c.power_path);
  if (!c.read_headroom)
    kiln_ndk_thermal_open(&g->ndk);
  if (c.power_path) /* copied: the caller's strings need not outlive create */
    strcpy(g->power_path, c.power_path);
  g->cfg.thermal_paths = g->cfg.thermal_types = g->cfg.sysfs_root = g->cfg.power_path = NULL;
  g->max_threads = c.max_threads;
  g->threads = c.max_threads;
  g->pace = c.target_tok_s;
  g->temp_cut_at = -1e300;
  g->t0 = g->period_start = c.clock_s(c.hook_user);
  *out_governor = g;
  return KILN_STATUS_OK;
}

void kiln_governor_destroy(kiln_governor_t *g) {
  if (!g)
    return;
  if (g->session)
    kiln_session_set_governor(g->session, NULL, NULL);
  kiln_ndk_thermal_close(&g->ndk);
  kiln_allocator_t alloc = g->alloc;
  kiln_mem_free(&alloc, g, sizeof *g);
}

/* A hook's reading: the same checks as a file's (range, frozen). */
static kiln_sensor_state_t from_hook(int (*read)(void *, double *), void *user, double lo,
                                     double hi, kiln_sensor_track_t *track, double now,
                                     double stale_s, double *out) {
  double v;
  if (read(user, &v) != 0)
    return KILN_SENSOR_MISSING;
  if (v != v)
    return KILN_SENSOR_GARBAGE;
  if (v < lo || v > hi)
    return KILN_SENSOR_RANGE;
  kiln_sensor_state_t st = kiln_sensor_track(track, v, now, stale_s);
  if (st == KILN_SENSOR_OK)
    *out = v;
  return st;
}

/* The hottest trusted zone; the state is OK when one is trusted, else the first zone's. */
static kiln_sensor_state_t read_temp(kiln_governor_t *g, double now, double *out) {
  const kiln_governor_config_t *c = &g->cfg;
  if (!g->want_temp)
    return KILN_SENSOR_NONE;
  if (c->read_temp_c)
    return from_hook(c->read_temp_c, c->hook_user, -40, 150, &g->temp_hook_track, now,
                     c->stale_s, out);
  kiln_sensor_state_t first = KILN_SENSOR_MISSING;
  int any = 0;
  for (uint32_t i = 0; i < g->n_zones; ++i) {
    double t;
    kiln_sensor_state_t st = kiln_sensor_read_temp_c(g->zones[i], &t);
    if (st == KILN_SENSOR_OK)
      st = kiln_sensor_track(&g->zone_track[i], t, now, c->stale_s);
    if (st == KILN_SENSOR_OK) {
      *out = any ? fmax(*out, t) : t;
      any = 1;
    } else if (i == 0) {
      first = st;
    }
  }
  return any ? KILN_SENSOR_OK : first;
}

static kiln_sensor_state_t read_power(kiln_governor_t *g, double now, double *out) {
  const kiln_governor_config_t *c = &g->cfg;
  if (!g->want_power)
    return KILN_SENSOR_NONE;
  if (c->read_power_w)
    return from_hook(c->read_power_w, c->hook_user, 0, 100, &g->power_track, now, c->stale_s,
                     out);
  double w;
  kiln_sensor_state_t st = kiln_sensor_read_power_w(g->power_path, &w);
  if (st == KILN_SENSOR_OK)
    st = kiln_sensor_track(&g->power_track, w, now, c->stale_s);
  if (st == KILN_SENSOR_OK)
    *out = w;
  return st;
}

static double read_headroom(kiln_governor_t *g) {
  const kiln_governor_config_t *c = &g->cfg;
  double h = NAN;
  if (c->read_headroom) {
    if (c->read_headroom(c->hook_user, &h) != 0)
      h = NAN;
  } else if (g->ndk.headroom) {
    h = g->ndk.headroom(g->ndk.manager, (int)c->headroom_forecast_s);
  }
  return (h >= 0 && h <= 10) ? h : NAN; /* NaN (called too often, no data) stays absent */
}

static double rate_at(const kiln_governor_t *g, uint32_t n) {
  const double *recent = g->recent[g->skip > 0];
  return n <= MAX_TRACKED_THREADS && recent[n] > 0 ? 1.0 / recent[n] : 0;
}

/* The ceilings' cap on the pace, from this period's readings. */
static const char *update_cap(kiln_governor_t *g, const kiln_governor_decision_t *d,
                              double delivered, double now) {
  const kiln_governor_config_t *c = &g->cfg;
  const char *over = NULL;
  int hold = 0, temp_over = 0;
  if (c->max_temp_c > 0 && d->temp_c == d->temp_c) {
    if (d->temp_c > c->max_temp_c)
      temp_over = 1;
    else if (d->temp_c > c->max_temp_c - c->temp_band_c)
      hold = 1;
  }
  if (c->max_power_w > 0 && d->power_w == d->power_w) {
    if (d->power_w > c->max_power_w)
      over = over ? over : "power over the ceiling";
    else if (d->power_w > c->max_power_w * (1 - c->band))
      hold = 1;
  }
  if (c->max_headroom > 0 && d->headroom == d->headroom) {
    if (d->headroom > c->max_headroom)
      over = over ? over : "thermal headroom forecast over the ceiling";
    else if (d->headroom > c->max_headroom * (1 - c->band))
      hold = 1;
  }
  if (c->max_slowdown > 0 && d->token_s > 0 && d->best_token_s > 0 &&
      d->token_s > c->max_slowdown * d->best_token_s)
    over = over ? over : "tokens slower than max_slowdown x the best: clocks cut or cores "
                         "shared";
  if (!over && temp_over) {
    /* Power shows at once; temperature lags it (a phone's skin by minutes). Cutting every
     * period until the reading turns would run the pace down to the floor, so cut again
     * only once the last cut had time to show, or while the reading still climbs. */
    if (now - g->temp_cut_at < TEMP_SETTLE_S &&
        d->temp_c <= g->temp_cut_c + TEMP_STILL_RISING_C)
      return "temperature over the ceiling: the last cut is still taking effect";
    over = "temperature over the ceiling";
    g->temp_cut_at = now;
    g->temp_cut_c = d->temp_c;
  }
  if (over) {
    double base = d->token_s > 0 ? 1.0 / d->token_s : 0;
    if (delivered > 0 && (base == 0 || delivered < base))
      base = delivered;
    if (g->cap > 0 && (base == 0 || g->cap < base))
      base = g->cap;
    if (base > 0)
      g->cap = fmax(c->min_tok_s, base * BACKOFF);
    return over;
  }
  if (hold && g->cap > 0 && d->temp_c == d->temp_c && d->temp_c < g->temp_cut_c - 0.5 &&
      now - g->temp_cut_at >= TEMP_SETTLE_S) {
    /* in the band but well under where it was last cut: the cut overshot, give back a
     * little each period instead of waiting to fall out of the band */
    g->cap *= CREEP;
    return "inside the hysteresis band, cooling: pace creeps up";
  }
  if (hold)
    return g->cap > 0 ? "inside the hysteresis band: pace held" : "near a ceiling";
  if (g->cap > 0) {
    g->cap *= RELEASE;
    double fastest = 0;
    for (uint32_t k = 1; k <= MAX_TRACKED_THREADS; ++k)
      for (int p = 0; p < 2; ++p)
        if (g->best[p][k] > 0)
          fastest = fmax(fastest, 1.0 / g->best[p][k]);
    if (fastest > 0 && g->cap > fastest * (1 + c->band)) {
      g->cap = 0;
      return "below every ceiling: unpaced";
    }
    return "below every ceiling: pace rises";
  }
  return NULL;
}

/* The thread count for the next period. */
static const char *choose_threads(kiln_governor_t *g, double now) {
  const kiln_governor_config_t *c = &g->cfg;
  const uint32_t lo = c->min_threads ? c->min_threads : 1;
  const uint32_t hi = g->max_threads < MAX_TRACKED_THREADS ? g->max_threads : MAX_TRACKED_THREADS;
  const double need = g->pace > 0 ? g->pace * (1 + c->band) : 0;
  uint32_t n = g->threads;
  if (hi <= lo || n == 0)
    return NULL;
  if (g->probe_from) {
    const uint32_t from = g->probe_from;
    g->probe_from = 0;
    const double r = rate_at(g, n), r0 = rate_at(g, from);
    int keep = r > 0 && r >= need;
    if (keep && g->pace == 0)
      keep = n < from ? r >= (1 - THREAD_SLACK) * r0 : r >= (1 + THREAD_SLACK) * r0;
    if (keep) {
      g->probe_block_s = 0;
      return n < from ? "one thread fewer holds the speed" : "one thread more is faster";
    }
    /* Each probe costs a period at the slower count: the same answer twice, ask half as
     * often. */
    g->threads = from;
    g->probe_block_s = g->probe_block_s > 0 ? fmin(2 * g->probe_block_s, PROBE_BLOCK_MAX_S)
                                            : PROBE_BLOCK_S;
    g->probe_blocked_until = now + g->probe_block_s;
    return "the probed thread count was slower: back";
  }
  const double r = rate_at(g, n);
  if (r > 0 && g->pace > 0 && r < g->pace && n < hi) {
    g->threads = n + 1;
    g->probe_block_s = 0;
    return "too slow for the pace: one thread more";
  }
  if (now < g->probe_blocked_until || r == 0)
    return NULL;
  if (n > lo && (g->pace == 0 || r >= need)) {
    g->probe_from = n;
    g->threads = n - 1;
    return "trying one thread fewer";
  }
  if (g->pace == 0 && n < hi && now - g->recent_at[g->skip > 0][n + 1] > PROBE_UP_AFTER_S) {
    g->probe_from = n;
    g->threads = n + 1;
    return "trying one thread more";
  }
  return NULL;
}

static void decide(kiln_governor_t *g, double now) {
  const kiln_governor_config_t *c = &g->cfg;
  kiln_governor_decision_t d;
  memset(&d, 0, sizeof d);
  const uint32_t n = g->threads_run ? g->threads_run : g->threads;
  d.t_s = now - g->t0;
  d.tokens = g->tokens;
  d.token_s = g->tokens ? g->sum_compute / g->tokens : 0;
  const int placed = g->skip > 0; /* where this period's tokens ran */
  if (d.token_s > 0 && n >= 1 && n <= MAX_TRACKED_THREADS) {
    if (g->best[placed][n] == 0 || d.token_s < g->best[placed][n])
      g->best[placed][n] = d.token_s;
    g->recent[placed][n] = d.token_s;
    g->recent_at[placed][n] = now;
  }
  d.best_token_s = n <= MAX_TRACKED_THREADS ? g->best[placed][n] : 0;
  d.temp_c = d.power_w = NAN;
  double v = NAN;
  kiln_sensor_state_t ts = read_temp(g, now, &v);
  if (ts == KILN_SENSOR_OK)
    d.temp_c = v;
  kiln_sensor_state_t ps = read_power(g, now, &v);
  if (ps == KILN_SENSOR_OK)
    d.power_w = v;
  d.temp_state = kiln_sensor_state_name(ts);
  d.power_state = kiln_sensor_state_name(ps);
  d.headroom = read_headroom(g);
  const double elapsed = now - g->period_start;
  const double delivered = elapsed > 0 && g->tokens ? g->tokens / elapsed : 0;
  const char *why = update_cap(g, &d, delivered, now);
  g->pace = c->target_tok_s;
  if (g->cap > 0 && (g->pace == 0 || g->cap < g->pace))
    g->pace = g->cap;
  /* Placement first; a period on the other cores comes before any thread probe there. */
  const uint32_t skip = g->cap > 0 ? c->skip_fastest : 0;
  const char *threads_why = NULL;
  if (skip != g->skip) {
    g->skip = skip;
    if (g->probe_from)
      g->threads = g->probe_from; /* a probe's answer would be for the other cores */
    g->probe_from = 0;
    threads_why = skip ? "capped by a ceiling: off the fastest cores"
                       : "no ceiling: back on the fastest cores";
  } else {
    threads_why = choose_threads(g, now);
  }
  d.reason = why ? why : threads_why ? threads_why
             : g->pace > 0 && g->pace == c->target_tok_s ? "holding the target pace"
                                                          : "steady";
  d.pace_tok_s = g->pace;
  d.idle_s = g->pace > 0 && d.token_s > 0 ? fmax(0, 1.0 / g->pace - d.token_s) : 0;
  d.threads = g->threads;
  d.skip_cores = g->skip;
  g->last = d;
  if (c->log)
    c->log(c->log_user, &d);
  g->period_start = now;
  g->sum_compute = 0;
  g->tokens = 0;
}

void kiln_governor_on_token(kiln_governor_t *g, double compute_s, uint32_t threads,
                            kiln_governor_action_t *out) {
  const double now = g->cfg.clock_s(g->cfg.hook_user);
  if (compute_s > 0 && compute_s < 3600) {
    g->sum_compute += compute_s;
    g->tokens += 1;
  }
  if (threads > 0) {
    g->threads_run = threads;
    if (g->max_threads == 0 || (!g->cfg.max_threads && !g->session && threads > g->max_threads))
      g->max_threads = threads;
    if (g->threads == 0)
      g->threads = threads;
  }
  if (now - g->period_start >= g->cfg.period_s)
    decide(g, now);
  out->threads = g->threads ? g->threads : threads;
  out->idle_s = g->pace > 0 && compute_s >= 0 ? fmax(0, 1.0 / g->pace - compute_s) : 0;
  out->skip_cores = g->skip;
}

void kiln_governor_last(const kiln_governor_t *g, kiln_governor_decision_t *out) {
  if (g)
    *out = g->last;
  else
    memset(out, 0, sizeof *out);
}

static void pace_before(void *user) {
  kiln_governor_t *g = user;
  const double now = g->cfg.clock_s(g->cfg.hook_user);
  double wait = g->next_start - now;
  const double most = 1.0 / g->cfg.min_tok_s; /* a clock jump never stalls decode */
  if (wait > 0)
    g->cfg.sleep_s(g->cfg.hook_user, wait < most ? wait : most);
}

static void pace_after(void *user, kiln_session_t *s, double compute_s, uint32_t threads) {
  kiln_governor_t *g = user;
  kiln_governor_action_t a;
  kiln_governor_on_token(g, compute_s, threads, &a);
  g->next_start = g->cfg.clock_s(g->cfg.hook_user) + a.idle_s;
  if (a.skip_cores != g->skip_applied) {
    g->skip_applied = a.skip_cores;
    kiln_session_place_threads(s, a.skip_cores);
    threads = 0; /* the placement may have changed how many threads there are room for */
  }
  if (a.threads != threads)
    g->threads = kiln_session_use_threads(s, a.threads);
}

static void pace_detach(void *user) {
  kiln_governor_t *g = user;
  g->session = NULL;
}

kiln_status_t kiln_session_set_governor(kiln_session_t *s, kiln_governor_t *g,
                                        kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!s)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "session is NULL");
  if (g && g->session && g->session != s)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "the governor already paces another session");
  kiln_session_set_pacer(s, NULL);
  kiln_session_place_threads(s, 0);
  kiln_session_use_threads(s, kiln_session_max_threads(s));
  if (!g)
    return KILN_STATUS_OK;
  const uint32_t most = kiln_session_max_threads(s);
  g->session = s;
  g->max_threads = g->cfg.max_threads && g->cfg.max_threads < most ? g->cfg.max_threads : most;
  g->threads = g->max_threads;
  g->next_start = 0;
  g->skip_applied = 0;
  kiln_session_use_threads(s, g->threads);
  kiln_session_pacer_t p = {pace_before, pace_after, pace_detach, g};
  kiln_session_set_pacer(s, &p);
  return KILN_STATUS_OK;
}
