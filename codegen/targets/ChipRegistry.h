//===- ChipRegistry.h - the chip profiles built into kiln -----------------===//
//
// codegen/targets/*.yaml are compiled into the binary (CMake embeds their text), so a
// `kiln` copied anywhere, e.g. into a CI image, needs no data files beside it. A profile
// not built in can be checked and used from a file (`kiln targets --file F.yaml`).
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_CHIPREGISTRY_H
#define KILN_CODEGEN_TARGETS_CHIPREGISTRY_H

#include <optional>
#include <string>
#include <vector>

#include "codegen/targets/ChipProfile.h"

namespace kiln::codegen {

struct BuiltinProfile {
  std::string file; // codegen/targets/snapdragon-8-gen-3.yaml
  std::string text; // the YAML as committed, comments included
  ChipProfile profile;
};

// Every built-in profile, sorted by name. Parsed once; a bad built-in profile fails the
// build's tests (ChipProfileTest), so here it is a fatal error naming the file.
const std::vector<BuiltinProfile> &builtinProfiles();
const BuiltinProfile *findBuiltinProfile(const std::string &name);

// parseChipProfile plus the sources rule: every line that gives a number or a yes/no
// carries a comment with `[id]` tags, each naming an entry of `sources:`.
std::optional<ChipProfile> loadChipProfile(const std::string &yamlText, const std::string &file,
                                           std::string &error);
std::optional<ChipProfile> loadChipProfileFile(const std::string &path, std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_CHIPREGISTRY_H
