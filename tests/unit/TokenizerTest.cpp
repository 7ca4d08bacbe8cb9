// Tokenizer tests: runtime-min's SPM tokenizer (kiln/tokenizer.h) and the GGUF glue
// (GgufVocab.h). Expected ids follow llama.cpp's llm_tokenizer_spm (parse_special = false);
// those for stories260K were produced by a line-by-line Python port of it.
#include "compiler/frontends/gguf/GgufVocab.h"
#include "kiln/tokenizer.h"
#include "tests/unit/TestPaths.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using kiln::gguf::GgufFile;
using kiln::gguf::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

const std::string kSp = "\xE2\x96\x81"; // U+2581, SentencePiece's space

// ---- the real vocabulary (stories260K: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>) ----

class TokenizerStories : public ::testing::Test {
protected:
  void SetUp() override {
    const std::string path = kiln::test::modelsDir() + "/stories260K.gguf";
    KILN_REQUIRE_FILE(path);
    std::string error;
    file_ = GgufFile::open(path, error);
    ASSERT_TRUE(file_) << error;
    tok_ = Tokenizer::fromGguf(*file_, error);
    ASSERT_TRUE(tok_) << error;
  }
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(TokenizerStories, Metadata) {
  EXPECT_EQ(tok_->size(), 512u);
  EXPECT_EQ(tok_->bos(), 1);
  EXPECT_EQ(tok_->eos(), 2);
  EXPECT_TRUE(tok_->addBos());         // key absent: llama.cpp's default
  EXPECT_TRUE(tok_->addSpacePrefix()); // likewise
}

TEST_F(TokenizerStories, OnceUponATime) {
  EXPECT_EQ(tok_->encode("Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok_->encode("Once upon a time", false), (Ids{403, 407, 261, 378}));
}

TEST_F(TokenizerStories, EmptyTextGetsNoSpacePrefix) {
  EXPECT_EQ(tok_->encode("", true), (Ids{1}));
  EXPECT_EQ(tok_->encode("", false), Ids{});
}

TEST_F(TokenizerStories, Spaces) {
  EXPECT_EQ(tok_->encode(" ", true), (Ids{1, 410, 410})); // prefix + the space itself
  EXPECT_EQ(tok_->encode("  hello  world", true),
            (Ids{1, 410, 410, 281, 306, 414, 410, 263, 304, 341}));
}

TEST_F(TokenizerStories, NewlineIsAByteToken) {
  EXPECT_EQ(tok_->encode("\n", true), (Ids{1, 410, 13})); // "▁" then <0x0A>
  EXPECT_EQ(tok_->encode("a\nb", false), (Ids{261, 13, 430}));
  EXPECT_EQ(tok_->decode(13), "\n");
}

TEST_F(TokenizerStories, NonAsciiFallsBackToBytes) {
  // "é" is a token (485); the snowman U+2603 (E2 98 83) is not, so it becomes <0xE2><0x98><0x83>.
  EXPECT_EQ(tok_->encode("caf\xC3\xA9 \xE2\x98\x83", true),
            (Ids{1, 280, 412, 431, 485, 410, 3 + 0xE2, 3 + 0x98, 3 + 0x83}));
}

TEST_F(TokenizerStories, Punctuation) {
  EXPECT_EQ(tok_->encode("Hello, world! It's 42.", true),
            (Ids{1, 346, 306, 414, 432, 263, 304, 341, 443, 359, 413, 439, 419, 410, 484, 479, 426}));
  EXPECT_EQ(tok_->encode("Lily said, \"Mom!\"\n\nThe end.", true),
            (Ids{1, 317, 336, 432, 313, 446, 287, 443, 436, 13, 13, 434, 260, 344, 264, 426}));
}

TEST_F(TokenizerStories, InvalidUtf8) {
  // A lead byte's length comes from its high bits, clamped to the end of the text.
  EXPECT_EQ(tok_->encode("a\xC3", true), (Ids{1, 261, 3 + 0xC3}));
  EXPECT_EQ(tok_->encode("\xFF\xFE", true), (Ids{1, 410, 3 + 0xFF, 3 + 0xFE}));
  EXPECT_EQ(tok_->encode("\xF0\x9F\x98", true), (Ids{1, 410, 3 + 0xF0, 3 + 0x9F, 3 + 0x98}));
  // E2 swallows the first two bytes of the following escaped space ("\xE2\x96\x81").
  EXPECT_EQ(tok_->encode("\xE2 x", true), (Ids{1, 410, 3 + 0xE2, 3 + 0xE2, 3 + 0x96, 3 + 0x81, 444}));
}

TEST_F(TokenizerStories, Pieces) {
  EXPECT_EQ(tok_->decode(403), " Once");
  EXPECT_EQ(tok_->decode(410), " ");
  EXPECT_EQ(tok_->decode(0), "");  // UNKNOWN: llama.cpp gives nothing unless special
  EXPECT_EQ(tok_->decode(1), "");  // CONTROL
  EXPECT_EQ(tok_->decode(2), "");
  EXPECT_EQ(tok_->decode(3), std::string(1, '\0'));
  EXPECT_EQ(tok_->decode(258), "\xFF");
  EXPECT_EQ(tok_->decode(-1), "");
  EXPECT_EQ(tok_->decode(512), "");
}

// llama.cpp's rule: every piece concatenated is " " + s (the space prefix), and
// llama_detokenize drops one leading space from the first token only, so without BOS the
// text comes back exactly and with BOS (an empty piece that uses up the strip) as " " + s.
// Holds for any bytes except two lossy cases: a literal U+2581 decodes as a space, and an
// invalid lead byte right before a space swallows part of its U+2581 into byte tokens.
TEST_F(TokenizerStories, RoundTrip) {
  std::vector<std::string> texts = {
      "Once upon a time", " leading", "  two leading", "trailing  ", "a\nb\n\n", "x",
      "caf\xC3\xA9 \xE2\x98\x83", "\xFF\xFE", "a\xC3", std::string("nul\0byte", 8),
      "Tom's dog, Max, said: \"Woof!\" 123 + 456 = 579.\t(tab)"};
  const std::string dev = kiln::test::modelsDir() + "/tinystories-dev.txt";
  KILN_REQUIRE_FILE(dev);
  std::ifstream in(dev, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  texts.push_back(ss.str().substr(0, 4000));
  for (const std::string &s : texts) {
    SCOPED_TRACE(s);
    Ids noBos = tok_->encode(s, false), withBos = tok_->encode(s, true);
    ASSERT_FALSE(noBos.empty());
    EXPECT_EQ(withBos.front(), 1);
    EXPECT_EQ(Ids(withBos.begin() + 1, withBos.end()), noBos);
    std::string pieces;
    for (int32_t id : noBos)
      pieces += tok_->decode(id);
    EXPECT_EQ(pieces, " " + s);
    EXPECT_EQ(tok_->detokenize(noBos), s);
    EXPECT_EQ(tok_->detokenize(withBos), " " + s);
  }
  EXPECT_EQ(tok_->detokenize(tok_->encode(kSp, false)), " ");
  EXPECT_EQ(tok_->detokenize(tok_->encode("\xE2 x", false)), "\xE2\xE2\x96\x81x");
}

TEST_F(TokenizerStories, BufferTooSmall) {
  int32_t ids[5] = {-7, -7, -7, -7, -7};
  size_t n = 0;
  EXPECT_EQ(kiln_tokenizer_encode(tok_->get(), "Once upon a time", 16, 1, ids, 2, &n),
            KILN_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(ids[0], 1); // the first `cap` ids are written, nothing past them
  EXPECT_EQ(ids[1], 403);
  EXPECT_EQ(ids[2], -7);
  EXPECT_EQ(kiln_tokenizer_encode(tok_->get(), "Once upon a time", 16, 1, nullptr, 0, &n),
            KILN_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(kiln_tokenizer_encode(tok_->get(), "Once upon a time", 16, 1, ids, 5, &n),
            KILN_STATUS_OK);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(ids[4], 378);
}

// ---- synthetic vocabularies built through kiln_vocab_desc_t ----

struct Vocab {
  std::vector<std::string> texts;
  std::vector<float> scores;
  std::vector<int32_t> types;
  int32_t bos = -1, eos = -1, unk = -1;
  bool spacePrefix = false;

  int32_t add(const std::string &t, float score = 0, int32_t type = KILN_TOKEN_TYPE_NORMAL) {
    texts.push_back(t);
    scores.push_back(score);
    types.push_back(type);
    return static_cast<int32_t>(texts.size() - 1);
  }
  void addBytes() {
    char name[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      add(name, 0, KILN_TOKEN_TYPE_BYTE);
    }
  }
  int32_t id(const std::string &t) const {
    for (size_t i = 0; i < texts.size(); ++i)
      if (texts[i] == t)
        return static_cast<int32_t>(i);
    return -1;
  }
  // Fills `desc`; the pointer arrays live in `ptrs`/`lens`.
  kiln_vocab_desc_t desc(std::vector<const char *> &ptrs, std::vector<uint32_t> &lens) const {
    ptrs.clear();
    lens.clear();
    for (const std::string &t : texts) {
      ptrs.push_back(t.data());
      lens.push_back(static_cast<uint32_t>(t.size()));
    }
    kiln_vocab_desc_t d = {};
    d.n_tokens = static_cast<uint32_t>(texts.size());
    d.texts = ptrs.data();
    d.text_lens = lens.data();
    d.scores = scores.data();
    d.types = types.data();
    d.bos_id = bos;
    d.eos_id = eos;
    d.unk_id = unk;
    d.add_space_prefix = spacePrefix;
    return d;
  }
  std::unique_ptr<Tokenizer> build() const {
    std::vector<const char *> ptrs;
    std::vector<uint32_t> lens;
    std::string error;
    auto t = Tokenizer::fromDesc(desc(ptrs, lens), bos >= 0, error);
    EXPECT_TRUE(t) << error;
    return t;
  }
  kiln_status_t create() const {
    std::vector<const char *> ptrs;
    std::vector<uint32_t> lens;
    kiln_vocab_desc_t d = desc(ptrs, lens);
    kiln_tokenizer_t *t = reinterpret_cast<kiln_tokenizer_t *>(&ptrs); // must be overwritten
    kiln_status_t st = kiln_tokenizer_create(&d, &t);
    if (st == KILN_STATUS_OK)
      kiln_tokenizer_destroy(t);
    else
      EXPECT_EQ(t, nullptr);
    return st;
  }
};

Vocab abc() {
  Vocab v;
  v.add("a");
  v.add("b");
  v.add("c");
  return v;
}

TEST(TokenizerSynthetic, HighestScoreMergesFirst) {
  Vocab v = abc();
  int32_t ab = v.add("ab", 1), bc = v.add("bc", 2);
  EXPECT_EQ(v.build()->encode("abc", false), (Ids{0, bc}));
  v.scores[ab] = 3;
  EXPECT_EQ(v.build()->encode("abc", false), (Ids{ab, 2}));
}

TEST(TokenizerSynthetic, TiesGoLeftmost) {
  Vocab v = abc();
  int32_t ab = v.add("ab", 1);
  v.add("bc", 1);
  EXPECT_EQ(v.build()->encode("abc", false), (Ids{ab, 2}));
  Vocab w;
  int32_t a = w.add("a"), aa = w.add("aa", 5);
  EXPECT_EQ(w.build()->encode("aaa", false), (Ids{aa, a}));
  EXPECT_EQ(w.build()->encode("aaaa", false), (Ids{aa, aa}));
}

TEST(TokenizerSynthetic, MergesChainButNeedEveryStep) {
  Vocab v = abc();
  int32_t abc3 = v.add("abc", 10);
  EXPECT_EQ(v.build()->encode("abc", false), (Ids{0, 1, 2})); // no 2-symbol step reaches it
  int32_t bc = v.add("bc", -5);
  EXPECT_EQ(v.build()->encode("abc", false), (Ids{abc3}));
  EXPECT_EQ(v.build()->encode("abcbc", false), (Ids{abc3, bc}));
}

TEST(TokenizerSynthetic, SpacePrefixAndEscaping) {
  Vocab v;
  int32_t sp = v.add(kSp), a = v.add("a"), spA = v.add(kSp + "a", 1);
  v.spacePrefix = true;
  auto t = v.build();
  EXPECT_EQ(t->encode("a", false), (Ids{spA}));
  EXPECT_EQ(t->encode("a a", false), (Ids{spA, spA}));
  EXPECT_EQ(t->encode("a  ", false), (Ids{spA, sp, sp}));
  EXPECT_EQ(t->encode(kSp + "a", false), (Ids{sp, spA})); // a literal U+2581 is just text
  v.spacePrefix = false;
  EXPECT_EQ(v.build()->encode("a", false), (Ids{a}));
  EXPECT_EQ(v.build()->encode(" a", false), (Ids{spA}));
}

TEST(TokenizerSynthetic, ByteFallback) {
  Vocab v;
  v.unk = v.add("<unk>", 0, KILN_TOKEN_TYPE_UNKNOWN);
  int32_t a = v.add("a");
  int32_t x41 = v.add("<0x41>", 0, KILN_TOKEN_TYPE_BYTE);
  int32_t c3 = v.add("\xC3"); // no <0xC3>: llama.cpp falls back to the one-byte text
  auto t = v.build();
  EXPECT_EQ(t->encode("aA", false), (Ids{a, x41}));
  EXPECT_EQ(t->encode("\xC3\xA9", false), (Ids{c3, v.unk})); // no token at all for A9: unk
  EXPECT_EQ(t->encode("\xC3", false), (Ids{c3}));            // a 1-byte symbol matches directly
  // Without an unk token a byte that nothing covers cannot be encoded.
  Vocab w;
  w.add("a");
  auto u = w.build();
  std::vector<int32_t> ids;
  std::string error;
  EXPECT_FALSE(u->encode("ab", false, ids, error));
  EXPECT_NE(error.find("unsupported"), std::string::npos) << error;
}

TEST(TokenizerSynthetic, ControlAndUnusedTokensAreNotMatched) {
  Vocab v;
  v.addBytes();
  v.bos = v.add("<s>", 0, KILN_TOKEN_TYPE_CONTROL);
  int32_t lt = v.add("<"), s = v.add("s"), gt = v.add(">"), lts = v.add("<s", 1);
  int32_t q = v.add("q", 0, KILN_TOKEN_TYPE_UNUSED);
  v.add("z", 0, KILN_TOKEN_TYPE_CONTROL);
  auto t = v.build();
  EXPECT_EQ(t->encode("<s>", true), (Ids{v.bos, lts, gt}));
  EXPECT_EQ(t->encode("s<", false), (Ids{s, lt}));
  EXPECT_EQ(t->encode("qz", false), (Ids{'q', 'z'})); // byte tokens: ids 0..255 here
  EXPECT_EQ(t->decode(q), "");
  EXPECT_EQ(t->decode(v.bos), "");
}

TEST(TokenizerSynthetic, UserDefinedTokensAreCutOutFirst) {
  Vocab v;
  int32_t sp = v.add(kSp), x = v.add("x"), y = v.add("y");
  int32_t tag = v.add("<tag>", 0, KILN_TOKEN_TYPE_USER_DEFINED);
  int32_t ab = v.add("ab", 0, KILN_TOKEN_TYPE_USER_DEFINED);
  int32_t abc = v.add("abc", 0, KILN_TOKEN_TYPE_USER_DEFINED);
  v.spacePrefix = true;
  auto t = v.build();
  // llama.cpp prefixes a space to each text fragment that follows a special token.
  EXPECT_EQ(t->encode("x<tag>y", false), (Ids{sp, x, tag, sp, y}));
  EXPECT_EQ(t->encode("<tag>", false), (Ids{tag}));
  EXPECT_EQ(t->encode("abcab", false), (Ids{abc, ab})); // longest first
  EXPECT_EQ(t->decode(tag), "<tag>");
  Vocab w;
  int32_t ud = w.add(kSp + "u", 0, KILN_TOKEN_TYPE_USER_DEFINED);
  EXPECT_EQ(w.build()->decode(ud), kSp + "u"); // raw text, no unescaping
}

TEST(TokenizerSynthetic, Pieces) {
  Vocab v;
  int32_t n = v.add(kSp + "a" + kSp), b = v.add("<0x41>", 0, KILN_TOKEN_TYPE_BYTE);
  int32_t unk = v.add("<unk>", 0, KILN_TOKEN_TYPE_UNKNOWN), e = v.add("");
  int32_t undef = v.add("u", 0, KILN_TOKEN_TYPE_UNDEFINED), part = v.add("\xE2\x96");
  auto t = v.build();
  EXPECT_EQ(t->decode(n), " a ");
  EXPECT_EQ(t->decode(b), "A");
  EXPECT_EQ(t->decode(unk), "");
  EXPECT_EQ(t->decode(e), "[EMPTY_3]"); // llama.cpp's name for an empty text
  EXPECT_EQ(t->decode(undef), "");
  EXPECT_EQ(t->decode(part), "\xE2\x96");
}

TEST(TokenizerSynthetic, PieceBufferContract) {
  Vocab v;
  v.add(kSp + "hello");
  auto t = v.build();
  char buf[8] = "#######";
  size_t n = 0;
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), 0, nullptr, 0, &n), KILN_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), 0, buf, 5, &n), KILN_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(std::string(buf), "#######"); // nothing written
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), 0, buf, 6, &n), KILN_STATUS_OK);
  EXPECT_EQ(std::string(buf, n), " hello");
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), 1, buf, 8, &n), KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), -1, buf, 8, &n), KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), 0, buf, 8, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_piece(t->get(), 0, nullptr, 8, &n), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_piece(nullptr, 0, buf, 8, &n), KILN_STATUS_INVALID_ARGUMENT);
}

TEST(TokenizerSynthetic, BadDescriptorsAreRejected) {
  Vocab v = abc();
  EXPECT_EQ(v.create(), KILN_STATUS_OK);
  kiln_tokenizer_t *t = nullptr;
  EXPECT_EQ(kiln_tokenizer_create(nullptr, &t), KILN_STATUS_INVALID_ARGUMENT);
  std::vector<const char *> ptrs;
  std::vector<uint32_t> lens;
  kiln_vocab_desc_t d = v.desc(ptrs, lens);
  EXPECT_EQ(kiln_tokenizer_create(&d, nullptr), KILN_STATUS_INVALID_ARGUMENT);
  auto expectBad = [&](kiln_vocab_desc_t bad) {
    kiln_tokenizer_t *out = nullptr;
    EXPECT_EQ(kiln_tokenizer_create(&bad, &out), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(out, nullptr);
  };
  kiln_vocab_desc_t bad = d;
  bad.n_tokens = 0;
  expectBad(bad);
  bad = d;
  bad.texts = nullptr;
  expectBad(bad);
  bad = d;
  bad.text_lens = nullptr;
  expectBad(bad);
  for (int32_t id : {-2, 3}) {
    bad = d;
    bad.bos_id = id;
    expectBad(bad);
    bad = d;
    bad.eos_id = id;
    expectBad(bad);
    bad = d;
    bad.unk_id = id;
    expectBad(bad);
  }
  const char *withNull[3] = {"a", nullptr, "c"};
  bad = d;
  bad.texts = withNull;
  expectBad(bad);
  for (int32_t type : {-1, 7}) {
    Vocab w = abc();
    w.types[1] = type;
    EXPECT_EQ(w.create(), KILN_STATUS_INVALID_ARGUMENT);
  }
  Vocab dup = abc();
  dup.add("b");
  EXPECT_EQ(dup.create(), KILN_STATUS_INVALID_ARGUMENT); // llama.cpp asserts texts are unique
  Vocab empties = abc();
  empties.add("");
  empties.add(""); // "[EMPTY_3]" and "[EMPTY_4]": distinct
  EXPECT_EQ(empties.create(), KILN_STATUS_OK);
  // NULL scores/types mean all 0 / all NORMAL; a NULL text of length 0 is an empty text.
  const char *nullEmpty[3] = {"a", nullptr, "c"};
  uint32_t lens0[3] = {1, 0, 1};
  kiln_vocab_desc_t ok = d;
  ok.texts = nullEmpty;
  ok.text_lens = lens0;
  ok.scores = nullptr;
  ok.types = nullptr;
  ASSERT_EQ(kiln_tokenizer_create(&ok, &t), KILN_STATUS_OK);
  kiln_tokenizer_destroy(t);
  kiln_tokenizer_destroy(nullptr);
}

TEST(TokenizerSynthetic, BadEncodeArguments) {
  Vocab v = abc();
  auto t = v.build();
  int32_t ids[4];
  size_t n = 99;
  EXPECT_EQ(kiln_tokenizer_encode(nullptr, "a", 1, 0, ids, 4, &n), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_encode(t->get(), "a", 1, 0, ids, 4, nullptr),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_encode(t->get(), nullptr, 1, 0, ids, 4, &n),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_encode(t->get(), "a", 1, 0, nullptr, 4, &n),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_encode(t->get(), "a", 1, 1, ids, 4, &n), // no BOS token
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tokenizer_encode(t->get(), nullptr, 0, 0, nullptr, 0, &n), KILN_STATUS_OK);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(kiln_tokenizer_vocab_size(nullptr), 0u);
  EXPECT_EQ(kiln_tokenizer_bos(nullptr), -1);
}

TEST(TokenizerSynthetic, AllBytesRoundTrip) {
  Vocab v;
  v.addBytes();
  v.spacePrefix = true;
  v.add(kSp); // byte tokens of an escaped space would decode as U+2581, not " "
  v.add(kSp + "a", 1);
  auto t = v.build();
  std::string all;
  for (int b = 255; b >= 0; --b)
    all += static_cast<char>(b);
  all += "\xF0\xE0\xC0"; // truncated leads at the very end
  EXPECT_EQ(t->detokenize(t->encode(all, false)), all);
}

// ---- GgufVocab: metadata problems are one line naming the key ----

class GgufImage {
public:
  void str(const std::string &key, const std::string &v) {
    head(key, 8);
    putStr(v);
  }
  void u32(const std::string &key, uint32_t v) {
    head(key, 4);
    put(v);
  }
  void i32(const std::string &key, int32_t v) {
    head(key, 5);
    put(v);
  }
  void boolean(const std::string &key, bool v) {
    head(key, 7);
    bytes_.push_back(v ? 1 : 0);
  }
  void strs(const std::string &key, const std::vector<std::string> &v) {
    arrayHead(key, 8, v.size());
    for (const std::string &s : v)
      putStr(s);
  }
  void f32s(const std::string &key, const std::vector<float> &v) {
    arrayHead(key, 6, v.size());
    for (float f : v)
      put(f);
  }
  void i32s(const std::string &key, const std::vector<int32_t> &v) {
    arrayHead(key, 5, v.size());
    for (int32_t i : v)
      put(i);
  }
  std::unique_ptr<GgufFile> parse() {
    image_.clear();
    appendTo(image_, uint32_t(0x46554747)); // "GGUF"
    appendTo(image_, uint32_t(3));
    appendTo(image_, uint64_t(0));
    appendTo(image_, nKv_);
    image_.insert(image_.end(), bytes_.begin(), bytes_.end());
    std::string error;
    auto f = GgufFile::parse(image_.data(), image_.size(), error);
    EXPECT_TRUE(f) << error;
    return f;
  }

private:
  template <typename T> static void appendTo(std::vector<uint8_t> &out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    out.insert(out.end(), b, b + sizeof b);
  }
  template <typename T> void put(T v) { appendTo(bytes_, v); }
  void putStr(const std::string &s) {
    put(uint64_t(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void head(const std::string &key, uint32_t type) {
    putStr(key);
    put(type);
    nKv_++;
  }
  void arrayHead(const std::string &key, uint32_t elem, size_t n) {
    head(key, 9);
    put(elem);
    put(uint64_t(n));
  }
  std::vector<uint8_t> bytes_, image_;
  uint64_t nKv_ = 0;
};

// A valid tiny vocabulary, minus the keys named in `skip`.
GgufImage tinyVocab(const std::string &skip = "") {
  GgufImage g;
  if (skip != "model")
    g.str("tokenizer.ggml.model", "llama");
  if (skip != "tokens")
    g.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", kSp, "a", kSp + "a"});
  if (skip != "scores")
    g.f32s("tokenizer.ggml.scores", {0, 0, 0, -3, -2, -1});
  if (skip != "types")
    g.i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
  return g;
}

std::string vocabError(GgufImage g) {
  auto f = g.parse();
  if (!f)
    return "<unparsable>";
  std::string error;
  auto t = Tokenizer::fromGguf(*f, error);
  EXPECT_FALSE(t);
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

TEST(GgufVocab, TinyVocabularyWithDefaults) {
  GgufImage g = tinyVocab(); // parse() does not copy the image
  auto f = g.parse();
  ASSERT_TRUE(f);
  std::string error;
  auto t = Tokenizer::fromGguf(*f, error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->size(), 6u);
  EXPECT_EQ(t->bos(), 1);
  EXPECT_EQ(t->eos(), 2);
  EXPECT_TRUE(t->addBos());
  EXPECT_EQ(t->encode("a a", true), (Ids{1, 5, 5}));
  EXPECT_EQ(t->encode("b", false), (Ids{3, 0})); // no byte tokens: unk
}

TEST(GgufVocab, OptionalKeys) {
  GgufImage g = tinyVocab("scores");
  g.boolean("tokenizer.ggml.add_space_prefix", false);
  g.boolean("tokenizer.ggml.add_bos_token", false);
  g.u32("tokenizer.ggml.bos_token_id", 2);
  g.u32("tokenizer.ggml.eos_token_id", 1);
  auto f = g.parse();
  ASSERT_TRUE(f);
  std::string error;
  auto t = Tokenizer::fromGguf(*f, error);
  ASSERT_TRUE(t) << error;
  EXPECT_FALSE(t->addBos());
  EXPECT_FALSE(t->addSpacePrefix());
  EXPECT_EQ(t->bos(), 2);
  EXPECT_EQ(t->eos(), 1);
  EXPECT_EQ(t->encode("a", true), (Ids{2, 4}));
  EXPECT_EQ(t->detokenize({5, 5}), " a a"); // no prefix to strip
}

TEST(GgufVocab, Errors) {
  auto has = [](const std::string &error, const std::string &what) {
    EXPECT_NE(error.find(what), std::string::npos) << error;
  };
  std::string e = vocabError(tinyVocab("model"));
  has(e, "tokenizer.ggml.model");
  has(e, "missing");

  GgufImage g = tinyVocab("model");
  g.str("tokenizer.ggml.model", "bert");
  e = vocabError(g);
  has(e, "tokenizer.ggml.model");
  has(e, "bert");

  // Byte-level BPE needs its merges and a pre-tokenizer kiln knows.
  g = tinyVocab("model");
  g.str("tokenizer.ggml.model", "gpt2");
  has(vocabError(g), "tokenizer.ggml.merges: missing");
  g.strs("tokenizer.ggml.merges", {});
  g.str("tokenizer.ggml.pre", "qwen2");
  e = vocabError(g);
  has(e, "tokenizer.ggml.pre: \"qwen2\" is not supported");
  has(e, "\"smollm\"");

  g = tinyVocab("model");
  g.u32("tokenizer.ggml.model", 1);
  has(vocabError(g), "tokenizer.ggml.model: expected string, got u32");

  has(vocabError(tinyVocab("tokens")), "tokenizer.ggml.tokens: missing");

  g = tinyVocab("tokens");
  g.i32s("tokenizer.ggml.tokens", {1, 2});
  has(vocabError(g), "tokenizer.ggml.tokens: expected array of string, got array of i32");

  g = tinyVocab("tokens");
  g.strs("tokenizer.ggml.tokens", {});
  has(vocabError(g), "tokenizer.ggml.tokens");

  g = tinyVocab("tokens");
  g.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b", "a"});
  e = vocabError(g);
  has(e, "tokenizer.ggml.tokens");
  has(e, "token 5 has the same text as token 3");

  g = tinyVocab("scores");
  g.f32s("tokenizer.ggml.scores", {0, 0, 0});
  has(vocabError(g), "tokenizer.ggml.scores: has 3 entries but tokenizer.ggml.tokens has 6");

  g = tinyVocab("scores");
  g.i32s("tokenizer.ggml.scores", {0, 0, 0, 0, 0, 0});
  has(vocabError(g), "tokenizer.ggml.scores: expected array of f32, got array of i32");

  g = tinyVocab("types");
  g.i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  has(vocabError(g), "tokenizer.ggml.token_type: has 5 entries");

  g = tinyVocab("types");
  g.i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 9, 1});
  has(vocabError(g), "tokenizer.ggml.token_type: entry 4 is 9");

  g = tinyVocab();
  g.u32("tokenizer.ggml.bos_token_id", 6);
  has(vocabError(g), "tokenizer.ggml.bos_token_id: 6 is out of range");

  g = tinyVocab();
  g.u32("tokenizer.ggml.unknown_token_id", 4294967295u);
  has(vocabError(g), "tokenizer.ggml.unknown_token_id");

  g = tinyVocab();
  g.i32("tokenizer.ggml.eos_token_id", 2);
  has(vocabError(g), "tokenizer.ggml.eos_token_id: expected u32, got i32");

  g = tinyVocab();
  g.u32("tokenizer.ggml.add_space_prefix", 1);
  has(vocabError(g), "tokenizer.ggml.add_space_prefix: expected bool, got u32");
}

} // namespace
