#include "compiler/tools/kiln/ChatTemplateChoice.h"

#include <cstdio>

#include "kiln/chat.h"

namespace kiln::tool {

namespace {

// The template's first line, at most 80 bytes, control bytes as \xNN: enough to name it.
std::string excerpt(const std::string &t) {
  std::string out;
  for (size_t i = 0; i < t.size() && i < 80 && t[i] != '\n'; ++i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + (t.size() > out.size() ? "..." : "");
}

int32_t tokenId(const artifact::TokenizerRecord &rec, const char *text) {
  for (size_t i = 0; i < rec.tokens.size(); ++i)
    if (rec.tokens[i] == text)
      return int32_t(i);
  return -1;
}

} // namespace

bool chooseChatTemplate(const std::string &option, artifact::TokenizerRecord &rec,
                        std::string &error) {
  kiln_chat_template_t t = KILN_CHAT_TEMPLATE_NONE;
  if (option == "auto") {
    const std::string &src = rec.chatTemplateSource;
    if (!src.empty()) {
      t = kiln_chat_template_detect(src.data(), src.size());
      if (t == KILN_CHAT_TEMPLATE_NONE) {
        error = "the model's chat template (tokenizer.chat_template) is not one kiln renders "
                "(llama3, llama2, zephyr, chatml): \"" + excerpt(src) +
                "\"; pass --chat-template NAME to use one of those, or --chat-template none";
        return false;
      }
      if (t == KILN_CHAT_TEMPLATE_LLAMA3 &&
          src.find("Cutting Knowledge Date") != std::string::npos)
        std::fprintf(stderr, "kiln: note: the chat template is Llama 3's; its tool-use and "
                             "date preamble is not rendered (as in llama.cpp's llama3)\n");
    }
  } else if (kiln_chat_template_from_name(option.c_str(), &t) != KILN_STATUS_OK) {
    error = "--chat-template expects auto, none, llama3, llama2, zephyr or chatml, got '" +
            option + "'";
    return false;
  }
  if (t == KILN_CHAT_TEMPLATE_NONE) {
    rec.chatTemplate.clear();
    rec.chatTemplateSource.clear();
    return true;
  }
  rec.chatTemplate = kiln_chat_template_name(t);
  if (rec.eotId < 0 && t == KILN_CHAT_TEMPLATE_CHATML)
    rec.eotId = tokenId(rec, "<|im_end|>");
  if (rec.eotId < 0 && t == KILN_CHAT_TEMPLATE_LLAMA3)
    rec.eotId = tokenId(rec, "<|eot_id|>");
  return true;
}

} // namespace kiln::tool
