/* Bounds-checked FlatBuffers reader; the wire format is described in fb_reader.h. */
#include "fb_reader.h"

#include <string.h>

static uint16_t rd16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* [pos, pos + n) lies inside [0, size). */
static int in_bounds(size_t size, size_t pos, size_t n) {
  return pos <= size && n <= size - pos;
}

static kiln_status_t table_at(const uint8_t *buf, size_t size, size_t pos,
                              kiln_fb_table_t *out) {
  if (!in_bounds(size, pos, 4))
    return KILN_STATUS_CORRUPT;
  int32_t soff = (int32_t)rd32(buf + pos);
  int64_t vt = (int64_t)pos - (int64_t)soff;
  if (vt < 0 || !in_bounds(size, (size_t)vt, 4))
    return KILN_STATUS_CORRUPT;
  uint16_t vt_size = rd16(buf + vt), inline_size = rd16(buf + vt + 2);
  if (vt_size < 4 || (vt_size & 1) || !in_bounds(size, (size_t)vt, vt_size) ||
      inline_size < 4 || !in_bounds(size, pos, inline_size))
    return KILN_STATUS_CORRUPT;
  out->buf = buf;
  out->size = size;
  out->pos = pos;
  out->vt_pos = (size_t)vt;
  out->vt_size = vt_size;
  out->inline_size = inline_size;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_fb_root(const uint8_t *buf, size_t size, const char *ident,
                           kiln_fb_table_t *out_table) {
  memset(out_table, 0, sizeof *out_table);
  if (!buf || size < 8 || memcmp(buf + 4, ident, 4) != 0)
    return KILN_STATUS_CORRUPT;
  return table_at(buf, size, rd32(buf), out_table);
}

/* Position of a field of `width` bytes, or 0 when absent (a field never sits at the
 * table start, which holds the soffset). */
static kiln_status_t field(const kiln_fb_table_t *t, unsigned slot, size_t width,
                           size_t *out_pos) {
  *out_pos = 0;
  size_t entry = 4 + 2 * (size_t)slot;
  if (!t->buf || entry + 2 > t->vt_size)
    return KILN_STATUS_OK;
  uint16_t off = rd16(t->buf + t->vt_pos + entry);
  if (off == 0)
    return KILN_STATUS_OK;
  if (off < 4 || (size_t)off + width > t->inline_size)
    return KILN_STATUS_CORRUPT;
  *out_pos = t->pos + off; /* inside: checked against inline_size when the table was read */
  return KILN_STATUS_OK;
}

#define KILN_FB_SCALAR_(fn, type)                                                        \
  kiln_status_t fn(const kiln_fb_table_t *t, unsigned slot, type def, type *out) {       \
    size_t pos;                                                                          \
    *out = def;                                                                          \
    KILN_RETURN_IF_ERROR(field(t, slot, sizeof(type), &pos));                            \
    if (pos)                                                                             \
      memcpy(out, t->buf + pos, sizeof(type));                                           \
    return KILN_STATUS_OK;                                                               \
  }
KILN_FB_SCALAR_(kiln_fb_u8, uint8_t)
KILN_FB_SCALAR_(kiln_fb_u32, uint32_t)
KILN_FB_SCALAR_(kiln_fb_i32, int32_t)
KILN_FB_SCALAR_(kiln_fb_u64, uint64_t)
KILN_FB_SCALAR_(kiln_fb_f32, float)
#undef KILN_FB_SCALAR_

/* Follows the uoffset32 at pos; *out_target = pos + offset, checked to hold 4 bytes. */
static kiln_status_t follow(const uint8_t *buf, size_t size, size_t pos, size_t *out_target) {
  if (!in_bounds(size, pos, 4))
    return KILN_STATUS_CORRUPT;
  uint32_t off = rd32(buf + pos);
  if (off == 0 || off > size - pos || !in_bounds(size, pos + off, 4))
    return KILN_STATUS_CORRUPT;
  *out_target = pos + off;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_fb_table(const kiln_fb_table_t *t, unsigned slot, kiln_fb_table_t *out,
                            int *out_present) {
  size_t pos, target;
  memset(out, 0, sizeof *out);
  *out_present = 0;
  KILN_RETURN_IF_ERROR(field(t, slot, 4, &pos));
  if (!pos)
    return KILN_STATUS_OK;
  KILN_RETURN_IF_ERROR(follow(t->buf, t->size, pos, &target));
  KILN_RETURN_IF_ERROR(table_at(t->buf, t->size, target, out));
  *out_present = 1;
  return KILN_STATUS_OK;
}

static kiln_status_t string_at(const uint8_t *buf, size_t size, size_t pos,
                               kiln_fb_string_t *out) {
  uint32_t len = rd32(buf + pos); /* 4 bytes at pos checked by follow() */
  size_t start = pos + 4;
  if (!in_bounds(size, start, (size_t)len + 1) || buf[start + len] != 0)
    return KILN_STATUS_CORRUPT;
  out->data = (const char *)buf + start;
  out->len = len;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_fb_string(const kiln_fb_table_t *t, unsigned slot, kiln_fb_string_t *out) {
  size_t pos, target;
  out->data = "";
  out->len = 0;
  KILN_RETURN_IF_ERROR(field(t, slot, 4, &pos));
  if (!pos)
    return KILN_STATUS_OK;
  KILN_RETURN_IF_ERROR(follow(t->buf, t->size, pos, &target));
  return string_at(t->buf, t->size, target, out);
}

kiln_status_t kiln_fb_vector(const kiln_fb_table_t *t, unsigned slot, uint32_t elem_size,
                             kiln_fb_vector_t *out) {
  size_t pos, target;
  memset(out, 0, sizeof *out);
  out->elem_size = elem_size;
  KILN_RETURN_IF_ERROR(field(t, slot, 4, &pos));
  if (!pos)
    return KILN_STATUS_OK;
  KILN_RETURN_IF_ERROR(follow(t->buf, t->size, pos, &target));
  uint32_t count = rd32(t->buf + target);
  size_t start = target + 4;
  if (elem_size == 0 || (uint64_t)count > (uint64_t)(t->size - start) / elem_size)
    return KILN_STATUS_CORRUPT;
  out->buf = t->buf;
  out->size = t->size;
  out->pos = start;
  out->count = count;
  return KILN_STATUS_OK;
}

/* Element i's position; the whole vector was bounds-checked by kiln_fb_vector. */
static int elem(const kiln_fb_vector_t *v, uint32_t i, uint32_t width, size_t *out_pos) {
  if (i >= v->count || v->elem_size != width)
    return 0;
  *out_pos = v->pos + (size_t)i * width;
  return 1;
}

uint32_t kiln_fb_vec_u32(const kiln_fb_vector_t *v, uint32_t i) {
  size_t p;
  return elem(v, i, 4, &p) ? rd32(v->buf + p) : 0;
}

int32_t kiln_fb_vec_i32(const kiln_fb_vector_t *v, uint32_t i) {
  return (int32_t)kiln_fb_vec_u32(v, i);
}

uint64_t kiln_fb_vec_u64(const kiln_fb_vector_t *v, uint32_t i) {
  size_t p;
  uint64_t x = 0;
  if (elem(v, i, 8, &p))
    memcpy(&x, v->buf + p, 8);
  return x;
}

float kiln_fb_vec_f32(const kiln_fb_vector_t *v, uint32_t i) {
  size_t p;
  float x = 0;
  if (elem(v, i, 4, &p))
    memcpy(&x, v->buf + p, 4);
  return x;
}

kiln_status_t kiln_fb_vec_string(const kiln_fb_vector_t *v, uint32_t i, kiln_fb_string_t *out) {
  size_t p, target;
  out->data = "";
  out->len = 0;
  if (!elem(v, i, 4, &p))
    return KILN_STATUS_OUT_OF_RANGE;
  KILN_RETURN_IF_ERROR(follow(v->buf, v->size, p, &target));
  return string_at(v->buf, v->size, target, out);
}

kiln_status_t kiln_fb_vec_table(const kiln_fb_vector_t *v, uint32_t i, kiln_fb_table_t *out) {
  size_t p, target;
  memset(out, 0, sizeof *out);
  if (!elem(v, i, 4, &p))
    return KILN_STATUS_OUT_OF_RANGE;
  KILN_RETURN_IF_ERROR(follow(v->buf, v->size, p, &target));
  return table_at(v->buf, v->size, target, out);
}
