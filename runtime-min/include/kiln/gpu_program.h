/* kiln runtime-min: the GPU program section of an artifact (KILN_SECTION_GPU).
 *
 * `kiln compile --target <cpu>+vulkan` writes it beside the CPU code: the SPIR-V kernels the
 * model uses and the list of dispatches of one forward pass. A GPU backend (kiln/backend.h)
 * records the list into a command buffer; the CPU code in the same artifact runs when no
 * GPU backend is chosen. docs/artifact-format.md, "GPU program", has the byte layout; all
 * words are little-endian uint32.
 *
 *   header    magic KILN_GPU_MAGIC, version, kernel count, dispatch count,
 *             gpu scratch bytes (low, high word), api (KILN_GPU_API_*)
 *   kernel    name length, name (padded to 4 bytes), replaces (the index of the kernel this
 *             one may stand in for on a device that has what it needs, else
 *             KILN_GPU_NO_KERNEL), word count, SPIR-V words
 *   dispatch  kernel index, when (KILN_GPU_WHEN_*), op (its place in the model: the CPU code's
 *             per-op entry, KILN_OP_ENTRY_PREFIX in kiln/abi.h, computes the same), constant
 *             count, constants, binding count, bindings
 *             (KILN_GPU_BUF_*), push word count, push words as (a, b) pairs,
 *             groups x, y, z as (a, b, div) triples, then its weights window: the bytes
 *             [lo, hi) of the weights section it reads (lo, hi as low, high word pairs;
 *             0, 0 when it reads none) and the push words holding an offset into it, as a
 *             count and (word index, divisor) pairs - a backend that binds the weights
 *             buffer from a byte `base` at or below lo (maxStorageBufferRange) subtracts
 *             base / divisor from each
 *
 * A push word is a * n + b (mod 2^32; a is signed) and a group count ceil((a * n + b) / div),
 * n being the batch's token count: one list serves every batch size.
 */
#ifndef KILN_GPU_PROGRAM_H_
#define KILN_GPU_PROGRAM_H_

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_GPU_MAGIC 0x314B5047u /* "GPK1" */
#define KILN_GPU_VERSION 3u /* 2: kernel variants (the replaces word); 3: weights windows */
#define KILN_GPU_NO_KERNEL 0xffffffffu
#define KILN_GPU_API_VULKAN_1_1 1u

/* Which batches a dispatch belongs to: a decode step (n == 1) and a prefill batch can take
 * different kernels for the same op (linear.comp's reduction, matmul.comp's tiles). */
#define KILN_GPU_WHEN_ALWAYS 0u
#define KILN_GPU_WHEN_DECODE 1u  /* n == 1 */
#define KILN_GPU_WHEN_PREFILL 2u /* n > 1 */

/* What a dispatch binds: storage buffers the backend owns for the session. */
typedef enum kiln_gpu_buffer_e {
  KILN_GPU_BUF_WEIGHTS = 0,   /* the weights section, as the CPU code reads it */
  KILN_GPU_BUF_SCRATCH = 1,   /* activations: the memory plan's scratch (offsets as the CPU's) */
  KILN_GPU_BUF_KV = 2,        /* the KV cache: the memory plan's planes */
  KILN_GPU_BUF_TOKENS = 3,    /* [max_batch] int32 token ids */
  KILN_GPU_BUF_POSITIONS = 4, /* [max_batch] int32 positions */
  KILN_GPU_BUF_LOGITS = 5,    /* [max_batch, vocab] f32 */
  KILN_GPU_BUF_GPU_SCRATCH = 6, /* the program's own scratch (attention scores) */
  KILN_GPU_BUF_COUNT = 7
} kiln_gpu_buffer_t;

#define KILN_GPU_MAX_KERNELS 64u
#define KILN_GPU_MAX_DISPATCHES 65536u
#define KILN_GPU_MAX_CONSTANTS 16u
#define KILN_GPU_MAX_BINDINGS 8u
#define KILN_GPU_MAX_PUSH_WORDS 32u

#ifdef __cplusplus
}
#endif
#endif /* KILN_GPU_PROGRAM_H_ */
