//===- CompileModule.h - kiln compile --base: a module of a base artifact -===//
//
// A module (kiln/module.h) is the difference between a compile with --adapter/--head and
// the base artifact compiled from the same model with the same options: the tensors whose
// bytes changed (derived ones, e.g. a fused QKV matrix, included), plus --ban's token ids.
// The generated code and the tensor table must equal the base's, so the base's code runs
// the module's tensors unchanged; anything else is refused, naming the first difference.
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_COMPILEMODULE_H
#define KILN_TOOLS_KILN_COMPILEMODULE_H

#include <string>
#include <vector>

#include "compiler/artifact/ArtifactWriter.h"

namespace kiln::tool {

struct ModuleRequest {
  std::string base, output;
  artifact::ModuleRecord record; // kind, name, version, bans; base fields filled here
};

// Token ids of --ban entries: "id:N", a vocabulary entry, or a word (every entry spelling
// it alone or after SentencePiece's U+2581 / byte-level BPE's U+0120 space marker).
bool resolveBans(const std::vector<std::string> &bans, const artifact::TokenizerRecord &tok,
                 uint32_t vocabSize, std::vector<int32_t> &ids, std::string &error);

// Writes the module of `whole` (the full compile with the edits) against request.base.
bool writeModule(const artifact::ArtifactContents &whole, ModuleRequest request,
                 std::string &error);

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_COMPILEMODULE_H
