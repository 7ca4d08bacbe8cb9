/* The Unicode general categories byte-level BPE's pre-tokenizer regexes name: \p{L} and
 * \p{N} as sorted, disjoint code point ranges, generated at configure time from Python's
 * unicodedata (gen_unicode_classes.py; kiln_unicode_version says which Unicode). */
#ifndef KILN_TOKENIZER_UNICODE_CLASSES_H_
#define KILN_TOKENIZER_UNICODE_CLASSES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_code_range_s {
  uint32_t lo, hi;
} kiln_code_range_t;

extern const char kiln_unicode_version[];
extern const kiln_code_range_t kiln_unicode_letters[];
extern const size_t kiln_unicode_letters_count;
extern const kiln_code_range_t kiln_unicode_numbers[];
extern const size_t kiln_unicode_numbers_count;

#ifdef __cplusplus
}
#endif

#endif /* KILN_TOKENIZER_UNICODE_CLASSES_H_ */
