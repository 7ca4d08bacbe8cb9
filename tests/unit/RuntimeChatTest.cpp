// runtime-min's chat templates (kiln/chat.h): each family's text for one conversation,
// the size contract, the refusals, detection, and through an artifact: the recorded
// template, kiln_artifact_chat_format with the vocabulary's BOS/EOS texts, and
// KILN_ENCODE_SPECIAL turning "<s>" / "</s>" into their ids. tests/e2e/chat_templates.py
// checks the same renderers against Hugging Face's Jinja on the real templates.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/unit/RuntimeFakeArtifact.h"

using namespace kiln::test;

namespace {

const kiln_chat_message_t kConversation[] = {{"system", "Be brief."},
                                             {"user", " Hi \n"},
                                             {"assistant", "Hello!"},
                                             {"user", "Bye"}};

std::string render(kiln_chat_template_t t, const kiln_chat_message_t *m, size_t n, int gen,
                   kiln_status_t *status = nullptr) {
  size_t len = 0;
  kiln_status_t st = kiln_chat_format(t, "<s>", "</s>", m, n, gen, nullptr, 0, &len);
  if (status)
    *status = st;
  if (st != KILN_STATUS_OK && st != KILN_STATUS_BUFFER_TOO_SMALL)
    return "<refused>";
  std::string out(len, '\0');
  st = kiln_chat_format(t, "<s>", "</s>", m, n, gen, out.data(), len, &len);
  EXPECT_EQ(st, KILN_STATUS_OK);
  if (status)
    *status = st;
  return out;
}

TEST(RuntimeChat, EachFamilyRendersItsTemplate) {
  EXPECT_EQ(render(KILN_CHAT_TEMPLATE_LLAMA3, kConversation, 4, 1),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render(KILN_CHAT_TEMPLATE_LLAMA2, kConversation, 4, 1),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(render(KILN_CHAT_TEMPLATE_ZEPHYR, kConversation, 4, 1),
            "<|system|>\nBe brief.</s>\n<|user|>\n Hi \n</s>\n<|assistant|>\nHello!</s>\n"
            "<|user|>\nBye</s>\n<|assistant|>\n");
  EXPECT_EQ(render(KILN_CHAT_TEMPLATE_CHATML, kConversation, 4, 0),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi \n<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n");
  // Llama 2's strip() runs over the system block and an all-space user text together.
  const kiln_chat_message_t blank[] = {{"system", "S"}, {"user", "  \n"}};
  EXPECT_EQ(render(KILN_CHAT_TEMPLATE_LLAMA2, blank, 2, 1), "[INST] <<SYS>>\nS\n<</SYS>> [/INST]");
}

TEST(RuntimeChat, SizeContract) {
  const std::string full = render(KILN_CHAT_TEMPLATE_CHATML, kConversation, 4, 1);
  for (size_t cap : {size_t(0), size_t(1), full.size() / 2, full.size() - 1}) {
    std::string out(cap, '#');
    size_t len = 0;
    EXPECT_EQ(kiln_chat_format(KILN_CHAT_TEMPLATE_CHATML, "<s>", "</s>", kConversation, 4, 1,
                               cap ? out.data() : nullptr, cap, &len),
              KILN_STATUS_BUFFER_TOO_SMALL);
    EXPECT_EQ(len, full.size());
    EXPECT_EQ(out, full.substr(0, cap)); // what fits is written, nothing past cap
  }
}

TEST(RuntimeChat, Refusals) {
  kiln_status_t st;
  const kiln_chat_message_t twoUsers[] = {{"user", "a"}, {"user", "b"}};
  render(KILN_CHAT_TEMPLATE_LLAMA2, twoUsers, 2, 1, &st);
  EXPECT_EQ(st, KILN_STATUS_INVALID_ARGUMENT); // roles must alternate
  const kiln_chat_message_t tool[] = {{"tool", "x"}};
  render(KILN_CHAT_TEMPLATE_ZEPHYR, tool, 1, 1, &st);
  EXPECT_EQ(st, KILN_STATUS_INVALID_ARGUMENT); // the template would drop it in silence
  render(KILN_CHAT_TEMPLATE_CHATML, tool, 1, 1, &st);
  EXPECT_EQ(st, KILN_STATUS_OK);
  const kiln_chat_message_t null[] = {{"user", nullptr}};
  render(KILN_CHAT_TEMPLATE_CHATML, null, 1, 1, &st);
  EXPECT_EQ(st, KILN_STATUS_INVALID_ARGUMENT);
  size_t len;
  EXPECT_EQ(kiln_chat_format(KILN_CHAT_TEMPLATE_NONE, "", "", kConversation, 1, 1, nullptr, 0,
                             &len),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_chat_format(kiln_chat_template_t(9), "", "", kConversation, 1, 1, nullptr, 0,
                             &len),
            KILN_STATUS_INVALID_ARGUMENT);
}

TEST(RuntimeChat, Detection) {
  auto detect = [](const std::string &s) { return kiln_chat_template_detect(s.data(), s.size()); };
  EXPECT_EQ(detect("chatml"), KILN_CHAT_TEMPLATE_CHATML); // a bare name, as llama.cpp takes it
  EXPECT_EQ(detect("{{ '<|im_start|>' + m.role }}"), KILN_CHAT_TEMPLATE_CHATML);
  EXPECT_EQ(detect("{{ '<|im_start|>' + m.role + '<|im_sep|>' }}"), KILN_CHAT_TEMPLATE_NONE);
  EXPECT_EQ(detect("<|start_header_id|>{{ r }}<|end_header_id|>"), KILN_CHAT_TEMPLATE_LLAMA3);
  EXPECT_EQ(detect("<|user|>{{ c + eos_token }}<|assistant|>"), KILN_CHAT_TEMPLATE_ZEPHYR);
  EXPECT_EQ(detect("<|user|>{{ c }}<|end|><|assistant|>"), KILN_CHAT_TEMPLATE_NONE); // Phi-3
  EXPECT_EQ(detect("{{ bos_token + '[INST] ' + content.strip() }} <<SYS>>"),
            KILN_CHAT_TEMPLATE_LLAMA2);
  EXPECT_EQ(detect("{{ '[INST] ' + m.content + ' [/INST]' }}"), KILN_CHAT_TEMPLATE_NONE);
  EXPECT_EQ(detect(""), KILN_CHAT_TEMPLATE_NONE);
  EXPECT_EQ(kiln_chat_template_detect(nullptr, 5), KILN_CHAT_TEMPLATE_NONE);
  kiln_chat_template_t t;
  EXPECT_EQ(kiln_chat_template_from_name("zephyr", &t), KILN_STATUS_OK);
  EXPECT_EQ(t, KILN_CHAT_TEMPLATE_ZEPHYR);
  EXPECT_EQ(kiln_chat_template_from_name("jinja", &t), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_chat_template_from_name(nullptr, &t), KILN_STATUS_UNSUPPORTED);
  EXPECT_STREQ(kiln_chat_template_name(KILN_CHAT_TEMPLATE_LLAMA2), "llama2");
  EXPECT_EQ(kiln_chat_template_name(kiln_chat_template_t(5)), nullptr);
}

// The fake artifact with a template recorded.
struct Opened {
  explicit Opened(const kiln::artifact::ArtifactContents &c)
      : file(kiln::artifact::serializeArtifact(c)) {
    kiln_error_t err;
    status = kiln_artifact_open(file.path().c_str(), nullptr, &a, &err);
    message = err.message;
    if (a)
      kiln_artifact_info(a, &info);
  }
  ~Opened() { kiln_artifact_close(a); }
  TempFile file;
  kiln_artifact_t *a = nullptr;
  kiln_artifact_info_t info{};
  kiln_status_t status;
  std::string message;
};

std::vector<int32_t> tokenize(kiln_artifact_t *a, const std::string &text, unsigned flags) {
  size_t n = 0;
  kiln_error_t err;
  kiln_artifact_tokenize_ex(a, text.data(), text.size(), flags, nullptr, 0, &n, &err);
  std::vector<int32_t> ids(n);
  EXPECT_EQ(kiln_artifact_tokenize_ex(a, text.data(), text.size(), flags, ids.data(), n, &n,
                                      &err),
            KILN_STATUS_OK)
      << err.message;
  return ids;
}

TEST(RuntimeChat, ThroughTheArtifact) {
  kiln::artifact::ArtifactContents c = fakeContents();
  c.tokenizer.chatTemplate = "llama2";
  c.tokenizer.chatTemplateSource = "{{ bos_token + '[INST] ' }}";
  Opened o(c);
  ASSERT_EQ(o.status, KILN_STATUS_OK) << o.message;
  EXPECT_EQ(o.info.chat_template, uint32_t(KILN_CHAT_TEMPLATE_LLAMA2));
  EXPECT_STREQ(o.info.chat_template_source, "{{ bos_token + '[INST] ' }}");
  size_t len = 0;
  const char *eos = kiln_artifact_token_text(o.a, 2, &len);
  ASSERT_NE(eos, nullptr);
  EXPECT_EQ(std::string(eos, len), "</s>");
  EXPECT_EQ(kiln_artifact_token_text(o.a, int32_t(o.info.vocab_size), &len), nullptr);

  const kiln_chat_message_t m[] = {{"user", "hello"}, {"assistant", "world"}, {"user", "x"}};
  char buf[128];
  kiln_error_t err;
  ASSERT_EQ(kiln_artifact_chat_format(o.a, m, 3, 1, buf, sizeof buf, &len, &err),
            KILN_STATUS_OK)
      << err.message;
  const std::string text(buf, len);
  EXPECT_EQ(text, "[INST] hello [/INST] world </s><s>[INST] x [/INST]");
  // With KILN_ENCODE_SPECIAL "</s>" and "<s>" are EOS and BOS; without, they are spelled.
  const std::vector<int32_t> special =
      tokenize(o.a, text, KILN_ENCODE_SPECIAL | KILN_ENCODE_ADD_BOS);
  const std::vector<int32_t> plain = tokenize(o.a, text, KILN_ENCODE_ADD_BOS);
  auto count = [](const std::vector<int32_t> &v, int32_t id) {
    return std::count(v.begin(), v.end(), id);
  };
  EXPECT_EQ(count(special, 1), 2); // the added BOS and the one in the text
  EXPECT_EQ(count(special, 2), 1);
  EXPECT_EQ(count(plain, 1), 1);
  EXPECT_EQ(count(plain, 2), 0);
  EXPECT_GT(plain.size(), special.size());
  EXPECT_EQ(kiln_artifact_tokenize_ex(o.a, "x", 1, 4u, nullptr, 0, &len, &err),
            KILN_STATUS_INVALID_ARGUMENT); // an unknown flag
  // Llama 2's rule through the artifact: one line saying which roles.
  const kiln_chat_message_t bad[] = {{"assistant", "first"}};
  EXPECT_EQ(kiln_artifact_chat_format(o.a, bad, 1, 1, buf, sizeof buf, &len, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("user and assistant in turn"), std::string::npos)
      << err.message;
  const kiln_chat_message_t null[] = {{"user", nullptr}};
  EXPECT_EQ(kiln_artifact_chat_format(o.a, null, 1, 1, buf, sizeof buf, &len, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("message 0"), std::string::npos) << err.message;
}

TEST(RuntimeChat, ArtifactWithoutOrWithAnUnknownTemplate) {
  Opened plain(fakeContents());
  ASSERT_EQ(plain.status, KILN_STATUS_OK);
  EXPECT_EQ(plain.info.chat_template, uint32_t(KILN_CHAT_TEMPLATE_NONE));
  EXPECT_STREQ(plain.info.chat_template_source, "");
  size_t len;
  kiln_error_t err;
  EXPECT_EQ(kiln_artifact_chat_format(plain.a, kConversation, 1, 1, nullptr, 0, &len, &err),
            KILN_STATUS_UNSUPPORTED);
  kiln::artifact::ArtifactContents c = fakeContents();
  c.tokenizer.chatTemplate = "jinja2";
  Opened unknown(c);
  EXPECT_EQ(unknown.status, KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(unknown.message.find("chat template 'jinja2'"), std::string::npos) << unknown.message;
}

} // namespace
