/* kiln runtime-min: the opened artifact, shared by the loader (artifact.c,
 * artifact_header.c) and the executor (src/exec). Internal. */
#ifndef KILN_LOADER_ARTIFACT_INTERNAL_H_
#define KILN_LOADER_ARTIFACT_INTERNAL_H_

#include <stdint.h>

#include "../platform/platform.h"
#include "fb_reader.h"
#include "kiln/abi.h"
#include "kiln/kiln.h"
#include "kiln/tokenizer.h"

/* Upper bound for any one buffer the memory plan asks for: beyond it the plan is treated as
 * corrupt rather than passed to an allocator (sizes are summed and multiplied later). */
#define KILN_MAX_PLAN_BYTES ((uint64_t)(SIZE_MAX / 8))

struct kiln_artifact_s {
  kiln_allocator_t alloc;
  kiln_file_map_t map;
  kiln_fb_table_t root;          /* the verified header */
  const uint8_t *weights;        /* inside map, page-aligned */
  uint64_t weights_size;
  uint64_t weights_xxh64;        /* the section's checksum, verified at open */
  const uint8_t *code;           /* inside map */
  uint64_t code_size;
  const uint8_t *gpu;            /* the GPU program section, or NULL (kiln/gpu_program.h) */
  uint64_t gpu_size;
  kiln_fb_string_t entry;        /* Target.entry */
  kiln_artifact_info_t info;     /* strings point into the map */
  kiln_tokenizer_t *tokenizer;
  void *code_handle;             /* from kiln_platform_load_code */
  kiln_model_forward_fn_t forward;
  uint64_t content_end;          /* where the sections may end: the signature trailer or EOF */
};

/* artifact_header.c: each reads and checks one part of the header into a. read_target
 * also checks the ABI version, the triple's ISA and every required CPU feature. */
kiln_status_t kiln_loader_read_target(kiln_artifact_t *a, kiln_error_t *err);
kiln_status_t kiln_loader_read_config(kiln_artifact_t *a, kiln_error_t *err);
kiln_status_t kiln_loader_read_memory_plan(kiln_artifact_t *a, kiln_error_t *err);
kiln_status_t kiln_loader_read_tensors(kiln_artifact_t *a, kiln_error_t *err);
kiln_status_t kiln_loader_build_tokenizer(kiln_artifact_t *a, kiln_error_t *err);
/* artifact.c: the file's container on a->map - preamble, signature, header, sections (a
 * module, kiln/module.h, has no code section; a model must not be a module, nor the reverse)
 * and the tensor table's ranges. */
kiln_status_t kiln_loader_verify_container(kiln_artifact_t *a, const uint8_t *public_key,
                                           int module, kiln_error_t *err);
/* artifact.c: every check of kiln_artifact_open short of loading the code, on a->map (the
 * fuzz harness calls it on bytes in memory); fills a's tables and tokenizer. */
kiln_status_t kiln_loader_verify(kiln_artifact_t *a, const uint8_t *public_key,
                                 kiln_error_t *err);
/* artifact_signature.c: the trailer, checked against public_key (may be NULL); sets
 * content_end and info.signature / signer_key. Needs a checked preamble. */
kiln_status_t kiln_loader_check_signature(kiln_artifact_t *a, const uint8_t *public_key,
                                          kiln_error_t *err);

#endif /* KILN_LOADER_ARTIFACT_INTERNAL_H_ */
