# Writes OUTPUT, a C file defining `const uint32_t NAME[]` with the SPIR-V module INPUT's
# little-endian words (words, not bytes, so the module is 4-byte aligned as Vulkan needs)
# and `const size_t NAME_words`.
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
file(WRITE ${OUTPUT}
  "/* Generated from ${INPUT}; do not edit. */\n#include <stddef.h>\n#include <stdint.h>\n"
  "const uint32_t ${NAME}[] = {${words}};\n"
  "const size_t ${NAME}_words = sizeof(${NAME}) / 4;\n")
