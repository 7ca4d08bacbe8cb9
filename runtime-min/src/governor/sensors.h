/* kiln runtime-min: the governor's sensors. Internal.
 * Every read is one small file read (or one NDK call) and says what went wrong instead of
 * passing a bad value on: the governor must never stall or crash on a sensor. */
#ifndef KILN_GOVERNOR_SENSORS_H_
#define KILN_GOVERNOR_SENSORS_H_

#include <stdint.h>

typedef enum {
  KILN_SENSOR_OK = 0,
  KILN_SENSOR_MISSING,   /* cannot be opened or read */
  KILN_SENSOR_GARBAGE,   /* not a number */
  KILN_SENSOR_RANGE,     /* a number no such sensor gives */
  KILN_SENSOR_FROZEN,    /* unchanged for stale_s */
  KILN_SENSOR_NONE,      /* not configured */
} kiln_sensor_state_t;

const char *kiln_sensor_state_name(kiln_sensor_state_t s);

#define KILN_SENSOR_PATH_MAX 256
#define KILN_GOVERNOR_MAX_ZONES 32

/* One value, with when it last changed (for frozen files). */
typedef struct {
  double last, changed_at;
  int have;
} kiln_sensor_track_t;

/* v read at `now`: FROZEN when it equals the last value for stale_s or longer. */
kiln_sensor_state_t kiln_sensor_track(kiln_sensor_track_t *t, double v, double now,
                                      double stale_s);

/* A whole-number file (sysfs style: optional sign, digits, trailing whitespace). */
kiln_sensor_state_t kiln_sensor_read_integer(const char *path, long long *out);

/* A thermal zone's temperature in degrees C: sysfs gives millidegrees; a few vendors give
 * degrees (a magnitude under 200 is taken as degrees). RANGE outside -40..150 C. */
kiln_sensor_state_t kiln_sensor_read_temp_c(const char *path, double *out_c);

/* power_now (microwatts) or current_now (microamps, times voltage_now beside it). RANGE
 * outside 0..100 W. */
kiln_sensor_state_t kiln_sensor_read_power_w(const char *path, double *out_w);

/* The temp files of <root>/class/thermal/thermal_zone<N> whose type contains one of the
 * ':'-separated `types` (case-insensitive). Returns how many were written (at most max). */
uint32_t kiln_sensor_find_zones(const char *root, const char *types,
                                char (*out)[KILN_SENSOR_PATH_MAX], uint32_t max);

/* The NDK thermal headroom (Android 12+), looked up in libandroid.so at run time. */
typedef struct {
  void *lib, *manager;
  float (*headroom)(void *manager, int forecast_s);
  void (*release)(void *manager);
} kiln_ndk_thermal_t;
void kiln_ndk_thermal_open(kiln_ndk_thermal_t *t);   /* leaves t->headroom NULL if absent */
void kiln_ndk_thermal_close(kiln_ndk_thermal_t *t);

#endif /* KILN_GOVERNOR_SENSORS_H_ */
