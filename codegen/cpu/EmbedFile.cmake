# Writes OUTPUT, a C file defining `const unsigned char NAME[]` with INPUT's bytes and
# `const size_t NAME_size`. Used to embed micro-kernel bitcode in the compiler.
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUTPUT}
  "/* Generated from ${INPUT}; do not edit. */\n#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {${bytes}};\n"
  "const size_t ${NAME}_size = sizeof(${NAME});\n")
