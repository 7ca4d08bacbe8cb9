/* The governor's sensors: sysfs thermal zones and power supplies, the NDK headroom. */
#include "sensors.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *kiln_sensor_state_name(kiln_sensor_state_t s) {
  switch (s) {
  case KILN_SENSOR_OK: return "ok";
  case KILN_SENSOR_MISSING: return "missing";
  case KILN_SENSOR_GARBAGE: return "garbage";
  case KILN_SENSOR_RANGE: return "out of range";
  case KILN_SENSOR_FROZEN: return "frozen";
  case KILN_SENSOR_NONE: return "none";
  }
  return "?";
}

kiln_sensor_state_t kiln_sensor_track(kiln_sensor_track_t *t, double v, double now,
                                      double stale_s) {
  if (!t->have || v != t->last) {
    t->last = v;
    t->changed_at = now;
    t->have = 1;
    return KILN_SENSOR_OK;
  }
  return now - t->changed_at >= stale_s ? KILN_SENSOR_FROZEN : KILN_SENSOR_OK;
}

/* At most cap - 1 bytes of a small file, NUL-terminated; -1 when it cannot be read.
 * O_NONBLOCK: a sysfs attribute never blocks, a FIFO put in its place must not either. */
static int read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n;
  do
    n = read(fd, buf, cap - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return (int)n;
}

kiln_sensor_state_t kiln_sensor_read_integer(const char *path, long long *out) {
  char buf[64];
  if (read_small(path, buf, sizeof buf) < 0)
    return KILN_SENSOR_MISSING;
  const char *p = buf;
  while (*p == ' ' || *p == '\t')
    ++p;
  const char *digits = p + (*p == '-' || *p == '+');
  if (!isdigit((unsigned char)*digits))
    return KILN_SENSOR_GARBAGE;
  errno = 0;
  char *end;
  long long v = strtoll(p, &end, 10);
  if (errno == ERANGE)
    return KILN_SENSOR_RANGE;
  while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
    ++end;
  if (*end != '\0')
    return KILN_SENSOR_GARBAGE;
  *out = v;
  return KILN_SENSOR_OK;
}

kiln_sensor_state_t kiln_sensor_read_temp_c(const char *path, double *out_c) {
  long long v;
  kiln_sensor_state_t st = kiln_sensor_read_integer(path, &v);
  if (st != KILN_SENSOR_OK)
    return st;
  double c = (v > 200 || v < -200) ? (double)v / 1000.0 : (double)v;
  if (c < -40.0 || c > 150.0)
    return KILN_SENSOR_RANGE;
  *out_c = c;
  return KILN_SENSOR_OK;
}

kiln_sensor_state_t kiln_sensor_read_power_w(const char *path, double *out_w) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  long long v;
  kiln_sensor_state_t st = kiln_sensor_read_integer(path, &v);
  if (st != KILN_SENSOR_OK)
    return st;
  double w;
  if (strcmp(base, "current_now") == 0) {
    char vpath[KILN_SENSOR_PATH_MAX];
    int n = snprintf(vpath, sizeof vpath, "%.*svoltage_now", (int)(base - path), path);
    if (n < 0 || (size_t)n >= sizeof vpath)
      return KILN_SENSOR_MISSING;
    long long uv;
    if ((st = kiln_sensor_read_integer(vpath, &uv)) != KILN_SENSOR_OK)
      return st;
    w = (double)llabs(v) * 1e-6 * ((double)llabs(uv) * 1e-6); /* discharge is negative */
  } else {
    w = (double)llabs(v) * 1e-6;
  }
  if (w > 100.0)
    return KILN_SENSOR_RANGE;
  *out_w = w;
  return KILN_SENSOR_OK;
}

static int type_matches(const char *type, const char *types) {
  for (const char *t = types; *t;) {
    const char *end = strchr(t, ':');
    size_t len = end ? (size_t)(end - t) : strlen(t);
    if (len > 0)
      for (const char *s = type; *s; ++s)
        if (strncasecmp(s, t, len) == 0)
          return 1;
    t += len + (end != NULL);
  }
  return 0;
}

uint32_t kiln_sensor_find_zones(const char *root, const char *types,
                                char (*out)[KILN_SENSOR_PATH_MAX], uint32_t max) {
  uint32_t n = 0;
  for (int zone = 0; zone < 256 && n < max; ++zone) {
    char path[KILN_SENSOR_PATH_MAX], type[64];
    snprintf(path, sizeof path, "%s/class/thermal/thermal_zone%d/type", root, zone);
    if (read_small(path, type, sizeof type) < 0)
      continue;
    type[strcspn(type, "\n")] = '\0';
    if (!type_matches(type, types))
      continue;
    int len = snprintf(out[n], KILN_SENSOR_PATH_MAX, "%s/class/thermal/thermal_zone%d/temp",
                       root, zone);
    if (len > 0 && len < KILN_SENSOR_PATH_MAX)
      ++n;
  }
  return n;
}

void kiln_ndk_thermal_open(kiln_ndk_thermal_t *t) {
  memset(t, 0, sizeof *t);
  t->lib = dlopen("libandroid.so", RTLD_NOW | RTLD_LOCAL);
  if (!t->lib)
    return;
  void *(*acquire)(void) = (void *(*)(void))dlsym(t->lib, "AThermal_acquireManager");
  float (*headroom)(void *, int) =
      (float (*)(void *, int))dlsym(t->lib, "AThermal_getThermalHeadroom");
  t->release = (void (*)(void *))dlsym(t->lib, "AThermal_releaseManager");
  if (acquire && headroom && t->release && (t->manager = acquire()) != NULL) {
    t->headroom = headroom;
    return;
  }
  dlclose(t->lib);
  memset(t, 0, sizeof *t);
}

void kiln_ndk_thermal_close(kiln_ndk_thermal_t *t) {
  if (t->manager && t->release)
    t->release(t->manager);
  if (t->lib)
    dlclose(t->lib);
  memset(t, 0, sizeof *t);
}
