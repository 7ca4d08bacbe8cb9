/* kiln-run's --module: modules (kiln/module.h) applied to the session at open. */
#include <stdio.h>

#include "kiln-run.h"
#include "kiln/module.h"

int run_modules_apply(const run_options_t *o, const uint8_t *public_key, kiln_session_t *s) {
  if (!o->n_modules)
    return 0;
  kiln_module_t *mods[RUN_MAX_MODULES] = {0};
  kiln_error_t err;
  int rc = 0;
  uint32_t n = 0;
  for (; n < o->n_modules; ++n)
    if (kiln_module_open(o->modules[n], public_key, NULL, &mods[n], &err) != KILN_STATUS_OK) {
      rc = run_fail("%s", err.message);
      break;
    }
  const double t0 = run_now_s();
  if (!rc && kiln_session_apply_modules(s, (const kiln_module_t *const *)mods, n, &err) !=
                 KILN_STATUS_OK)
    rc = run_fail("%s", err.message);
  const double dt = run_now_s() - t0;
  for (uint32_t i = 0; !rc && i < n; ++i) {
    kiln_module_info_t info;
    kiln_module_info(mods[i], &info);
    fprintf(stderr, "module %s: %s '%s'%s%s, %u tensors (%llu bytes), %u banned tokens\n",
            o->modules[i], info.kind, info.name, *info.version ? " " : "", info.version,
            info.num_tensors, (unsigned long long)info.tensor_bytes, info.num_banned);
  }
  if (!rc)
    fprintf(stderr, "modules applied in %.3f ms\n", dt * 1e3);
  for (uint32_t i = 0; i < n; ++i)
    kiln_module_close(mods[i]);
  return rc;
}
