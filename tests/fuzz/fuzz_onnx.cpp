// libFuzzer: the ONNX loader on arbitrary bytes - binary protobuf, or ONNX's text syntax
// when the input starts with '<' - then constant folding of a graph it accepts. The loader
// reads a path (it maps the file and resolves external data beside it), so each input is
// written to a file in /dev/shm first.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "compiler/frontends/onnx/OnnxFold.h"
#include "compiler/frontends/onnx/OnnxLoad.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path =
      "/dev/shm/kiln-fuzz-onnx-" + std::to_string(::getpid()) + ".onnx";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  std::string error;
  if (auto graph = kiln::onnx::loadOnnx(path, error))
    kiln::onnx::foldConstants(*graph, error);
  return 0;
}
