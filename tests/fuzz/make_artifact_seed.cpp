// Writes the runtime tests' fake artifact (tests/unit/RuntimeFakeArtifact.h: a 2-token
// vocabulary, one tensor, every header table) as the artifact harness's seed, about 30 KB
// instead of a real model's megabytes, so the fuzzer mutates the header, not the weights.
// The code section is any small file (the harness never loads code).
//   make-artifact-seed OUT CODE_FILE
#include <cstdio>

static const char *g_code_file;
#define KILN_FAKE_MODEL_SO g_code_file
#include "tests/unit/RuntimeFakeArtifact.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make-artifact-seed OUT CODE_FILE\n");
    return 2;
  }
  g_code_file = argv[2];
  const std::vector<uint8_t> bytes = kiln::test::fakeArtifact();
  FILE *f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    return 1;
  return std::fclose(f) == 0 ? 0 : 1;
}
