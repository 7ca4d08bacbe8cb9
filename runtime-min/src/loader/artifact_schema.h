/* kiln runtime-min: field slots of runtime-min/schema/artifact.fbs for fb_reader.h.
 *
 * Slot N is the N-th field declared in a table (its vtable entry N). The schema is
 * APPEND-ONLY - fields are never reordered, removed or retyped - so these numbers never
 * change; a field added to the schema gets the next number here. Keep this file in the
 * schema's declaration order. Internal.
 */
#ifndef KILN_LOADER_ARTIFACT_SCHEMA_H_
#define KILN_LOADER_ARTIFACT_SCHEMA_H_

#define KILN_FB_IDENTIFIER "KLN1"

enum kiln_fb_target_slot_e {
  KILN_FB_TARGET_NAME = 0,
  KILN_FB_TARGET_TRIPLE = 1,
  KILN_FB_TARGET_CPU = 2,
  KILN_FB_TARGET_FEATURES = 3,
  KILN_FB_TARGET_ABI_VERSION = 4,
  KILN_FB_TARGET_ENTRY = 5,
};

enum kiln_fb_model_config_slot_e {
  KILN_FB_CONFIG_ARCH = 0,
  KILN_FB_CONFIG_VOCAB_SIZE = 1,
  KILN_FB_CONFIG_DIM = 2,
  KILN_FB_CONFIG_NUM_LAYERS = 3,
  KILN_FB_CONFIG_NUM_HEADS = 4,
  KILN_FB_CONFIG_NUM_KV_HEADS = 5,
  KILN_FB_CONFIG_HEAD_DIM = 6,
  KILN_FB_CONFIG_FFN_DIM = 7,
  KILN_FB_CONFIG_CONTEXT_LENGTH = 8,
  KILN_FB_CONFIG_ROPE_DIMS = 9,
  KILN_FB_CONFIG_ROPE_THETA = 10,
  KILN_FB_CONFIG_RMS_EPS = 11,
  KILN_FB_CONFIG_ROPE_STYLE = 12,
};

enum kiln_fb_tokenizer_slot_e {
  KILN_FB_TOKENIZER_MODEL = 0,
  KILN_FB_TOKENIZER_TOKENS = 1,
  KILN_FB_TOKENIZER_SCORES = 2,
  KILN_FB_TOKENIZER_TYPES = 3,
  KILN_FB_TOKENIZER_BOS_ID = 4,           /* default -1 */
  KILN_FB_TOKENIZER_EOS_ID = 5,           /* default -1 */
  KILN_FB_TOKENIZER_UNK_ID = 6,           /* default -1 */
  KILN_FB_TOKENIZER_ADD_SPACE_PREFIX = 7, /* default true */
  KILN_FB_TOKENIZER_ADD_BOS = 8,          /* default true */
  KILN_FB_TOKENIZER_MERGES = 9,
  KILN_FB_TOKENIZER_PRETOKENIZER = 10,
  KILN_FB_TOKENIZER_IGNORE_MERGES = 11,   /* default false */
  KILN_FB_TOKENIZER_EOT_ID = 12,          /* default -1 */
  KILN_FB_TOKENIZER_CHAT_TEMPLATE = 13,
  KILN_FB_TOKENIZER_CHAT_TEMPLATE_SOURCE = 14,
};

enum kiln_fb_tensor_slot_e {
  KILN_FB_TENSOR_NAME = 0,
  KILN_FB_TENSOR_FORMAT = 1,
  KILN_FB_TENSOR_SHAPE = 2,
  KILN_FB_TENSOR_PADDED_ROW_LENGTH = 3,
  KILN_FB_TENSOR_ROW_STRIDE = 4,
  KILN_FB_TENSOR_OFFSET = 5,
  KILN_FB_TENSOR_SIZE = 6,
  KILN_FB_TENSOR_PADDING_BYTES = 7,
};

enum kiln_fb_memory_plan_slot_e {
  KILN_FB_MEMORY_SCRATCH_BYTES = 0,
  KILN_FB_MEMORY_KV_BYTES = 1,
  KILN_FB_MEMORY_KV_BYTES_PER_TOKEN = 2,
  KILN_FB_MEMORY_MAX_BATCH = 3,
  KILN_FB_MEMORY_MAX_CTX = 4,
  KILN_FB_MEMORY_WEIGHT_BYTES_PER_TOKEN = 5,
  KILN_FB_MEMORY_KV_K_FORMAT = 6,
  KILN_FB_MEMORY_KV_V_FORMAT = 7,
};

enum kiln_fb_pass_record_slot_e {
  KILN_FB_PASS_NAME = 0,
  KILN_FB_PASS_PARAMS = 1,
  KILN_FB_PASS_EFFECTS = 2,
};

enum kiln_fb_provenance_slot_e {
  KILN_FB_PROVENANCE_SOURCE_FILE = 0,
  KILN_FB_PROVENANCE_SOURCE_SHA256 = 1,
  KILN_FB_PROVENANCE_COMPILER_VERSION = 2,
  KILN_FB_PROVENANCE_PASSES = 3,
};

enum kiln_fb_section_slot_e {
  KILN_FB_SECTION_KIND = 0,
  KILN_FB_SECTION_OFFSET = 1,
  KILN_FB_SECTION_SIZE = 2,
  KILN_FB_SECTION_XXH64 = 3,
  KILN_FB_SECTION_ALIGNMENT = 4,
};

enum kiln_fb_artifact_slot_e {
  KILN_FB_ARTIFACT_FORMAT_VERSION = 0,
  KILN_FB_ARTIFACT_TARGET = 1,
  KILN_FB_ARTIFACT_CONFIG = 2,
  KILN_FB_ARTIFACT_TOKENIZER = 3,
  KILN_FB_ARTIFACT_TENSORS = 4,
  KILN_FB_ARTIFACT_MEMORY = 5,
  KILN_FB_ARTIFACT_PROVENANCE = 6,
  KILN_FB_ARTIFACT_SECTIONS = 7,
};

#endif /* KILN_LOADER_ARTIFACT_SCHEMA_H_ */
