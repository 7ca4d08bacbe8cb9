/* kiln runtime-min: the governor, a closed loop that paces decode on heat, power and load.
 *
 * A phone shares its SoC with everything else and heats up; the OS then cuts the clocks,
 * and peak speed for ten seconds turns into stalls at second 42. The governor keeps decode
 * at a pace the device can hold. Once per period it reads three signals:
 *   - the session's own per-token compute time (always there): a rise over the best time
 *     seen at the same thread count means the clocks were cut or the cores are shared,
 *     even while the OS's thermal status still reads "none";
 *   - temperature (the hottest of the thermal zones) and power (a power supply), read from
 *     sysfs files, or from the app's callbacks;
 *   - on Android, the NDK's thermal headroom forecast (AThermal_getThermalHeadroom), looked
 *     up at run time, so nothing links against libandroid.
 * and decides a pace (tokens/s: idle time inserted before a token) and a thread count:
 *   - target_tok_s: hold this pace, never faster (a reader reads ~10 tokens/s; the rest is
 *     heat);
 *   - max_temp_c / max_power_w / max_headroom / max_slowdown: over a ceiling the pace
 *     drops 15% per period (for temperature, which lags, only once the last cut had 15 s
 *     to show or while the reading still climbs), inside the hysteresis band it holds,
 *     below it rises 2% per period until it is released;
 *   - threads: the fewest threads whose measured speed is within 3% of the best (decode is
 *     bandwidth-bound, so past a few cores more threads only add power) and above the pace;
 *   - placement (skip_fastest = N): while a ceiling caps the pace, the threads leave the N
 *     fastest cores (a phone's prime core: several times a performance core's watts for
 *     little more of the memory bandwidth decode is bound by) and run on the next ones,
 *     with a thread more if that is too slow for the pace; back once the cap is released.
 * A sensor that cannot be opened, holds garbage or an absurd value, or has not changed for
 * stale_s, is not trusted (the decision says so); the governor never stops decode.
 * Every decision goes to the log callback with its time and inputs.
 *
 * Opt-in: an app that does not call kiln_session_set_governor links none of this. */
#ifndef KILN_GOVERNOR_H_
#define KILN_GOVERNOR_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_governor_s kiln_governor_t;

/* One decision: what the governor read, what it chose and why. */
typedef struct kiln_governor_decision_s {
  double t_s;           /* seconds since the governor was created (its clock) */
  double temp_c;        /* hottest trusted zone; NaN when none is trusted */
  double power_w;       /* NaN when not trusted or not configured */
  double headroom;      /* NDK forecast (1.0 = throttling); NaN when absent */
  double token_s;       /* mean compute time per token over the period; 0 = no token */
  double best_token_s;  /* best seen at this thread count */
  double pace_tok_s;    /* the pace allowed from now on; 0 = unpaced */
  double idle_s;        /* idle inserted before each token at that pace */
  uint32_t threads;     /* threads from now on */
  uint32_t tokens;      /* tokens in the period */
  const char *reason;   /* static text: "temperature over the ceiling", ... */
  const char *temp_state;  /* "ok", "missing", "garbage", "out of range", "frozen", "none" */
  const char *power_state; /* the same for power */
  uint32_t skip_cores;  /* the fastest cores the threads leave from now on (skip_fastest) */
} kiln_governor_decision_t;

typedef struct kiln_governor_config_s {
  double target_tok_s;  /* pace to hold; 0: as fast as the ceilings allow */
  double max_temp_c;    /* ceiling on the hottest zone; 0: none */
  double max_power_w;   /* ceiling on power; 0: none */
  double max_headroom;  /* ceiling on the NDK forecast (e.g. 0.85); 0: none */
  /* Compute time per token over this multiple of the best seen at the same thread count
   * counts as over a ceiling (clocks cut, cores shared; e.g. 1.3); 0: not a ceiling. */
  double max_slowdown;
  double min_tok_s;     /* the ceilings never pace below this (default 1) */
  double temp_band_c;   /* hysteresis below max_temp_c (default 2) */
  double band;          /* relative hysteresis of pace, power, headroom (default 0.1) */
  double period_s;      /* control period (default 1) */
  /* Unchanged this long: not trusted (default 120: a skin thermistor read to 0.1 C holds
   * one value for tens of seconds under a steady load, and taking a steady hot reading
   * for a dead file releases the pace; docs/perf.md, "Governor: placement"). */
  double stale_s;
  double headroom_forecast_s; /* NDK forecast horizon (default 10) */
  uint32_t min_threads; /* 0: 1 */
  uint32_t max_threads; /* 0: the session's */
  /* Temperature files holding millidegrees C, ':'-separated (sysfs thermal_zone<N>/temp).
   * NULL: every /sys/class/thermal/thermal_zone<N>/temp whose type names a CPU, SoC or
   * skin sensor (thermal_types overrides the match). "" : no temperature. */
  const char *thermal_paths;
  const char *thermal_types; /* ':'-separated substrings of zone types; NULL:
                                cpu:soc:skin:x86_pkg */
  const char *sysfs_root;    /* NULL: "/sys" (tests point it at a fake tree) */
  /* A power supply file: power_now (microwatts), or current_now (microamps, times the
   * voltage_now beside it). NULL or "": no power signal. */
  const char *power_path;
  /* Hooks for tests, simulators and apps with their own sensors; NULL: the real ones.
   * A read returns 0 and the value, or nonzero when it has none. */
  double (*clock_s)(void *user);                   /* monotonic seconds */
  int (*read_temp_c)(void *user, double *out);
  int (*read_power_w)(void *user, double *out);
  int (*read_headroom)(void *user, double *out);
  void (*sleep_s)(void *user, double seconds);
  void *hook_user;
  /* Called with every decision (every period); NULL: none. */
  void (*log)(void *user, const kiln_governor_decision_t *decision);
  void *log_user;
  /* While a ceiling caps the pace, leave this many of the fastest cores (0: never). A
   * session must be created with pin_threads for the threads to move (they are then
   * pinned to the cores after the skipped ones); unpinned, the decision is logged and
   * nothing moves. */
  uint32_t skip_fastest;
} kiln_governor_config_t;

/* No pace, no ceilings, every default above, the real sensors. */
kiln_governor_config_t kiln_governor_config_default(void);

/* Reads a config from "key=value,..." (kiln-run --governor, kiln thermal-sim --governor):
 *   tok-s=T  temp=C  power=W  headroom=H  slowdown=X  period=S  stale=S
 *   min-threads=N  max-threads=N  skip=N  zones=P1:P2  zone-types=T1:T2  power-path=P
 * Everything else is the default. The config's strings point into storage (cap bytes,
 * at least strlen(spec) + 1), which must outlive kiln_governor_create. */
kiln_status_t kiln_governor_config_parse(const char *spec, kiln_governor_config_t *config,
                                         char *storage, size_t cap, kiln_error_t *out_error);

/* A decision as one line, "governor t=... temp=...(ok) ... threads=N: reason"; returns
 * snprintf's count. */
int kiln_governor_format_decision(const kiln_governor_decision_t *decision, char *out,
                                  size_t cap);

/* Checks the config (a negative, NaN or absurd value is KILN_STATUS_INVALID_ARGUMENT) and
 * resolves the sensor files once. A file that is missing now is looked at again each
 * period. Uses malloc (or the allocator); nothing after create allocates. */
kiln_status_t kiln_governor_create(const kiln_governor_config_t *config,
                                   const kiln_allocator_t *allocator,
                                   kiln_governor_t **out_governor, kiln_error_t *out_error);
void kiln_governor_destroy(kiln_governor_t *governor);

/* The action after a token: idle before the next one, and the threads to use. */
typedef struct kiln_governor_action_s {
  double idle_s;
  uint32_t threads;
  uint32_t skip_cores; /* run the threads on the cores after this many of the fastest */
} kiln_governor_action_t;

/* The loop without a session (simulators, other runtimes): a token took compute_s on
 * `threads` threads placed as the last action said; returns what to do next. At the end
 * of each period it reads the sensors and decides. */
void kiln_governor_on_token(kiln_governor_t *governor, double compute_s, uint32_t threads,
                            kiln_governor_action_t *out_action);

/* The last decision (zeros before the first period). */
void kiln_governor_last(const kiln_governor_t *governor, kiln_governor_decision_t *out);

/* Paces a session: each kiln_session_decode reports its time, and the next one waits for
 * the idle time and runs on the chosen threads (at most the session's). NULL detaches.
 * The governor must outlive the session or be detached; one governor per session. */
kiln_status_t kiln_session_set_governor(kiln_session_t *session, kiln_governor_t *governor,
                                        kiln_error_t *out_error);

#ifdef __cplusplus
}
#endif

#endif /* KILN_GOVERNOR_H_ */
