/* Quantises a GGUF with llama.cpp's own llama_model_quantize, from the prebuilt libllama.so
 * that the npm package @node-llama-cpp/linux-x64 ships (no llama.cpp source or build here),
 * to get the Q4_0 / Q8_0 files llama.cpp users run (Q4_0: output.weight q6_K,
 * token_embd.weight q4_0). Not built by CMake:
 *   gcc -O1 tests/bench/llamacpp/quantize.c -o /tmp/llq -ldl
 *   LD_LIBRARY_PATH=<package>/bins/linux-x64 /tmp/llq in-f16.gguf out.gguf FTYPE
 * FTYPE is llama_ftype: 2 = MOSTLY_Q4_0, 7 = MOSTLY_Q8_0.
 *
 * No llama.h: llama_model_quantize_params is taken from llama_model_quantize_default_params
 * into a buffer larger than the struct (returned through a hidden pointer either way, as
 * any struct over 16 bytes on x86-64), and only its first two fields are set, whose place
 * has not changed in llama.h: int32_t nthread, then enum llama_ftype ftype. The defaults
 * are printed first as a check (this build: nthread 0, ftype 7). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  unsigned char bytes[512];
} quantize_params_t;

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s IN.gguf OUT.gguf FTYPE\n", argv[0]);
    return 2;
  }
  void *lib = dlopen("libllama.v0.5.0.so", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s (LD_LIBRARY_PATH: the package's bins/linux-x64)\n", dlerror());
    return 1;
  }
  quantize_params_t (*defaults)(void) =
      (quantize_params_t(*)(void))dlsym(lib, "llama_model_quantize_default_params");
  uint32_t (*quantize)(const char *, const char *, const quantize_params_t *) =
      (uint32_t(*)(const char *, const char *, const quantize_params_t *))dlsym(
          lib, "llama_model_quantize");
  if (!defaults || !quantize) {
    fprintf(stderr, "libllama lacks llama_model_quantize\n");
    return 1;
  }
  quantize_params_t p = defaults();
  int32_t *fields = (int32_t *)p.bytes;
  printf("defaults: nthread %d, ftype %d\n", fields[0], fields[1]);
  fields[0] = 2;
  fields[1] = atoi(argv[3]);
  const uint32_t rc = quantize(argv[1], argv[2], &p);
  printf("llama_model_quantize: %u\n", rc);
  return rc != 0;
}
