/* kiln runtime-min: a small bounds-checked FlatBuffers reader (read-only, no flatcc).
 *
 * FlatBuffers wire format, as far as this reader uses it (all little-endian):
 *   buffer:  uoffset32 to the root table at byte 0, the 4-byte file_identifier at 4.
 *   table:   soffset32 at its start; vtable = table_pos - soffset. Then the fields.
 *   vtable:  uint16 vtable size in bytes, uint16 table inline size, then one uint16 per
 *            field slot (slot N = the N-th field declared in the schema): the field's
 *            offset from the table start, 0 = absent (the schema default applies).
 *   offset fields (tables, strings, vectors): a uoffset32 relative to the field itself.
 *   string:  uint32 length, the bytes, a NUL.   vector: uint32 count, the elements
 *            (scalars inline; tables and strings as uoffset32 relative to the element).
 * Every accessor checks every offset and length against the buffer before reading, with
 * overflow-safe arithmetic, and reads through memcpy (no alignment assumption), so a
 * hostile buffer yields KILN_STATUS_CORRUPT, never an out-of-bounds read. Internal.
 */
#ifndef KILN_LOADER_FB_READER_H_
#define KILN_LOADER_FB_READER_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

typedef struct kiln_fb_table_s {
  const uint8_t *buf;
  size_t size;      /* of the whole buffer */
  size_t pos;       /* table start */
  size_t vt_pos;    /* vtable start */
  uint16_t vt_size; /* vtable bytes */
  uint16_t inline_size;
} kiln_fb_table_t;

typedef struct kiln_fb_string_s {
  const char *data; /* NUL-terminated inside the buffer; "" when absent */
  uint32_t len;
} kiln_fb_string_t;

typedef struct kiln_fb_vector_s {
  const uint8_t *buf;
  size_t size;
  size_t pos;       /* first element */
  uint32_t count;   /* 0 when absent */
  uint32_t elem_size;
} kiln_fb_vector_t;

/* The root table; KILN_STATUS_CORRUPT when the buffer is too small, the identifier is not
 * `ident` (4 characters) or the root table is out of bounds. */
kiln_status_t kiln_fb_root(const uint8_t *buf, size_t size, const char *ident,
                           kiln_fb_table_t *out_table);

/* Scalars: `def` when the field is absent, KILN_STATUS_CORRUPT when it lies outside. */
kiln_status_t kiln_fb_u8(const kiln_fb_table_t *t, unsigned slot, uint8_t def, uint8_t *out);
kiln_status_t kiln_fb_u32(const kiln_fb_table_t *t, unsigned slot, uint32_t def,
                          uint32_t *out);
kiln_status_t kiln_fb_i32(const kiln_fb_table_t *t, unsigned slot, int32_t def, int32_t *out);
kiln_status_t kiln_fb_u64(const kiln_fb_table_t *t, unsigned slot, uint64_t def,
                          uint64_t *out);
kiln_status_t kiln_fb_f32(const kiln_fb_table_t *t, unsigned slot, float def, float *out);

/* Sub-table; *out_present = 0 (and out zeroed) when absent. */
kiln_status_t kiln_fb_table(const kiln_fb_table_t *t, unsigned slot, kiln_fb_table_t *out,
                            int *out_present);
/* String; "" with length 0 when absent. */
kiln_status_t kiln_fb_string(const kiln_fb_table_t *t, unsigned slot, kiln_fb_string_t *out);
/* Vector of elem_size-byte elements (4 for tables, strings and 32-bit scalars); count 0
 * when absent. */
kiln_status_t kiln_fb_vector(const kiln_fb_table_t *t, unsigned slot, uint32_t elem_size,
                             kiln_fb_vector_t *out);

/* Elements (i < v->count, checked). */
uint32_t kiln_fb_vec_u32(const kiln_fb_vector_t *v, uint32_t i);
int32_t kiln_fb_vec_i32(const kiln_fb_vector_t *v, uint32_t i);
uint64_t kiln_fb_vec_u64(const kiln_fb_vector_t *v, uint32_t i);
float kiln_fb_vec_f32(const kiln_fb_vector_t *v, uint32_t i);
kiln_status_t kiln_fb_vec_string(const kiln_fb_vector_t *v, uint32_t i, kiln_fb_string_t *out);
kiln_status_t kiln_fb_vec_table(const kiln_fb_vector_t *v, uint32_t i, kiln_fb_table_t *out);

#endif /* KILN_LOADER_FB_READER_H_ */
