// Writes the runtime tests' fake artifact (RuntimeFakeArtifact.h) with a chat template, for
// tests/e2e/kiln_run_chat.py's pseudo-terminal session. The fake model predicts token + 1,
// so a Llama 2 prompt, which ends in "]" (byte token 96), is answered "^_`a" (97..100) and
// the turn ends at token 101, the end of turn here.
//   make-fake-chat-artifact OUT
#include <cstdio>

#include "tests/unit/RuntimeFakeArtifact.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make-fake-chat-artifact OUT\n");
    return 2;
  }
  kiln::artifact::ArtifactContents c = kiln::test::fakeContents();
  c.tokenizer.chatTemplate = "llama2";
  c.tokenizer.eotId = 101;
  const std::vector<uint8_t> bytes = kiln::artifact::serializeArtifact(c);
  FILE *f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    return 1;
  return std::fclose(f) == 0 ? 0 : 1;
}
