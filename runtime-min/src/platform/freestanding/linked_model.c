/* The model linked into a freestanding program (../platform.h, kiln_linked_model_t): built
 * by the program with the header `kiln compile --emit=obj -o model.o` writes beside the
 * object, found as "model.h" on the include path. */
#include "../platform.h"

#include "model.h"

const kiln_linked_model_t kiln_linked_model = {
    kiln_model_forward,     kiln_model_weights,      KILN_MODEL_WEIGHT_BYTES,
    KILN_MODEL_SCRATCH_BYTES, KILN_MODEL_KV_BYTES,   KILN_MODEL_VOCAB,
    KILN_MODEL_MAX_CTX,     KILN_MODEL_MAX_BATCH,    KILN_MODEL_TARGET,
};
