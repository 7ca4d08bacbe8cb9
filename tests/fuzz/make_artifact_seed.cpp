// Writes the runtime tests' fake artifact (tests/unit/RuntimeFakeArtifact.h: a 2-token
// vocabulary, one tensor, every header table) as the artifact harness's seed, about 30 KB
// instead of a real model's megabytes, so the fuzzer mutates the header, not the weights.
// The code section is any small file (the harness never loads code). With MODULE_OUT, also
// a module of it (kiln/module.h: its tensor replaced, two bans).
//   make-artifact-seed OUT CODE_FILE [MODULE_OUT]
#include <cstdio>

static const char *g_code_file;
#define KILN_FAKE_MODEL_SO g_code_file
#include "tests/unit/RuntimeFakeArtifact.h"

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: make-artifact-seed OUT CODE_FILE [MODULE_OUT]\n");
    return 2;
  }
  g_code_file = argv[2];
  const kiln::artifact::ArtifactContents base = kiln::test::fakeContents();
  auto write = [](const char *path, const std::vector<uint8_t> &bytes) {
    FILE *f = std::fopen(path, "wb");
    const bool ok = f && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return (f ? std::fclose(f) == 0 : false) && ok;
  };
  if (!write(argv[1], kiln::artifact::serializeArtifact(base)))
    return 1;
  if (argc == 3)
    return 0;
  kiln::artifact::ArtifactContents m;
  m.target = base.target;
  m.config = base.config;
  m.module = kiln::artifact::ModuleRecord{
      "adapter", "seed", "1", kiln_xxh64(base.weights.data(), base.weights.size()),
      base.weights.size(), {5, 7}};
  m.tensors = base.tensors;
  m.tensors[0].offset = 0;
  m.weights.assign(base.weights.begin() + int64_t(base.tensors[0].offset),
                   base.weights.begin() + int64_t(base.tensors[0].offset + base.tensors[0].size));
  return write(argv[3], kiln::artifact::serializeArtifact(m)) ? 0 : 1;
}
