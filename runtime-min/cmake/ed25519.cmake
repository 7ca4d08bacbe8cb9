# Ed25519 for signed artifacts: the few files of libsodium 1.0.18 (Debian's source package
# with Debian's patches, fetched by scripts/install-deps.sh) that verify signatures, built as
# an object library (kiln_ed25519) that kiln_runtime and any other build of runtime-min's
# sources take in, and the two that sign (kiln_ed25519_sign), for the compiler. Each
# function gets its own section so a link keeps only what it calls: verification alone is
# ~17 KB (docs/perf.md). Every global symbol is renamed to ksodium_*
# (src/sign/sodium_names.h) so an app that also links libsodium sees no clash.
#   KILN_ED25519_SOURCES  the files to compile
#   KILN_ED25519_FLAGS    the flags they need (include paths, configuration, the renames);
#                         add -DHAVE_TI_MODE where the compiler has __int128 (faster fe_51)
set(KILN_LIBSODIUM_SRC "$ENV{HOME}/.cache/kiln/libsodium-1.0.18-1+deb12u1" CACHE PATH
    "libsodium source tree (Debian 1.0.18-1+deb12u1, patched) from scripts/install-deps.sh")
set(_s ${KILN_LIBSODIUM_SRC}/src/libsodium)
if(NOT EXISTS ${KILN_LIBSODIUM_SRC}/.kiln-patched OR
   NOT EXISTS ${_s}/crypto_sign/ed25519/ref10/open.c)
  message(FATAL_ERROR "libsodium's source is not at KILN_LIBSODIUM_SRC (${KILN_LIBSODIUM_SRC}): "
                      "run scripts/install-deps.sh, or point KILN_LIBSODIUM_SRC at its tree")
endif()
set(KILN_ED25519_SOURCES
  ${_s}/crypto_sign/ed25519/ref10/open.c
  ${_s}/crypto_sign/ed25519/ref10/sign.c   # verification's hash setup lives here too
  ${_s}/crypto_core/ed25519/ref10/ed25519_ref10.c
  ${_s}/crypto_hash/sha512/cp/hash_sha512_cp.c
  ${_s}/crypto_verify/sodium/verify.c
  ${CMAKE_CURRENT_LIST_DIR}/../src/sign/sodium_utils.c
  ${CMAKE_CURRENT_LIST_DIR}/../src/sign/ed25519.c
  CACHE INTERNAL "")
# Signing: the compiler's side only (kiln_ed25519_sign, linked by kiln_artifact_writer).
set(KILN_ED25519_SIGN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../src/sign/ed25519_sign.c
  CACHE INTERNAL "")
# 64-bit field arithmetic (fe_51) where the compiler has 128-bit integers, else fe_25_5.
include(CheckCSourceCompiles)
check_c_source_compiles("int main(void) { unsigned __int128 x = 1; return (int)(x >> 64); }"
                        KILN_HAVE_INT128)
set(KILN_ED25519_FLAGS -I${_s}/include/sodium -I${_s}/include -DCONFIGURED=1
    -DNATIVE_LITTLE_ENDIAN -include ${CMAKE_CURRENT_LIST_DIR}/../src/sign/sodium_names.h
    -ffunction-sections -fdata-sections -w
    CACHE INTERNAL "")
add_library(kiln_ed25519 OBJECT ${KILN_ED25519_SOURCES})
add_library(kiln_ed25519_sign OBJECT ${KILN_ED25519_SIGN_SOURCES})
foreach(t kiln_ed25519 kiln_ed25519_sign)
  target_compile_options(${t} PRIVATE ${KILN_ED25519_FLAGS})
  if(KILN_HAVE_INT128)
    target_compile_definitions(${t} PRIVATE HAVE_TI_MODE)
  endif()
  set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endforeach()
