/* The model linked into a freestanding program (../platform.h, kiln_linked_model_t): built
 * by the program with the header `kiln compile --emit=obj -o model.o` writes beside the
 * object, found as "model.h" on the include path. */
#include "../platform.h"

#include "model.h"

const kiln_linked_model_t kiln_linked_model = {
    .forward = kiln_model_forward,
    .weights_xxh64 = KILN_MODEL_WEIGHTS_XXH64,
    .weights_bytes = KILN_MODEL_WEIGHT_BYTES,
    .scratch_bytes = KILN_MODEL_SCRATCH_BYTES,
    .kv_bytes = KILN_MODEL_KV_BYTES,
    .vocab = KILN_MODEL_VOCAB,
    .max_ctx = KILN_MODEL_MAX_CTX,
    .max_batch = KILN_MODEL_MAX_BATCH,
    .target = KILN_MODEL_TARGET,
};
