//===- ChatTemplateConfig.h - a model's chat template from its config ------===//
//
// tokenizer_config.json's "chat_template": a Jinja string, or a list of
// {"name", "template"} of which "default" is the one chat uses (the others are tool-use
// variants). The GGUF counterpart is the key tokenizer.chat_template.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_HF_CHATTEMPLATECONFIG_H
#define KILN_FRONTENDS_HF_CHATTEMPLATECONFIG_H

#include <string>

namespace kiln::hf {

// Reads the chat template of the tokenizer.json at `tokenizerPath` from the
// tokenizer_config.json beside it; `out` stays "" when there is none. False with `error`
// when the config exists but cannot be read or its chat_template is malformed.
bool readChatTemplate(const std::string &tokenizerPath, std::string &out, std::string &error);

} // namespace kiln::hf

#endif
