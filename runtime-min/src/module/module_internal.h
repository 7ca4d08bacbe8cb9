/* kiln runtime-min: the module loader's checks on bytes in memory (the fuzz harness,
 * tests/fuzz/fuzz_artifact.c). Internal. */
#ifndef KILN_MODULE_MODULE_INTERNAL_H_
#define KILN_MODULE_MODULE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

/* Every check of kiln_module_open on `data` (page-aligned, size bytes), then every tensor
 * record read as kiln_module_check reads them. */
kiln_status_t kiln_module_verify_bytes(const uint8_t *data, size_t size,
                                       const uint8_t *public_key, kiln_error_t *err);

#endif /* KILN_MODULE_MODULE_INTERNAL_H_ */
