//===- ChatTemplateChoice.h - which chat template an artifact records ------===//
#ifndef KILN_TOOLS_KILN_CHATTEMPLATECHOICE_H
#define KILN_TOOLS_KILN_CHATTEMPLATECHOICE_H

#include <string>

#include "compiler/artifact/ArtifactWriter.h"

namespace kiln::tool {

// Resolves `kiln compile --chat-template`: "auto" (the default) recognises the model's
// Jinja template (rec.chatTemplateSource) as one of runtime-min's families and refuses one
// it does not know, naming it; a family name (llama3, llama2, zephyr, chatml) is taken as
// given; "none" records no chat. Sets rec.chatTemplate, and for ChatML and Llama 3 the end
// of turn (<|im_end|>, <|eot_id|>) when the vocabulary has it and the file named none.
bool chooseChatTemplate(const std::string &option, artifact::TokenizerRecord &rec,
                        std::string &error);

} // namespace kiln::tool

#endif
