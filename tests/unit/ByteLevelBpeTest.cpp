// Byte-level BPE from a Hugging Face tokenizer.json (compiler/frontends/hf/ByteLevelBpe.h).
//
// Oracle: tests/onnx/byte_bpe_reference.py (pure Python + the `regex` module) trains a
// small byte-level vocabulary on tinystories-calib.txt, writes it as a Llama-3-style
// tokenizer.json, and encodes text with its own BPE; the C++ ids must equal its ids on every
// line of tinystories-dev.txt and on edge strings, and decode back to the text. The
// scanner's Unicode classes are checked against `regex` on every assigned code point. Then a
// hand-written vocabulary with ids worked out by hand, the pre-tokenizer on hand-split
// strings, and the errors.
#include "compiler/frontends/hf/ByteLevelBpe.h"
#include "compiler/frontends/hf/TokenizerJson.h"
#include "tests/unit/TestPaths.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

using kiln::hf::ByteLevelBpe;
using Ids = std::vector<int32_t>;
using Pieces = std::vector<std::string>;

namespace {

std::string makeTempDir() {
  std::string base = ::testing::TempDir();
  if (base.empty() || base.back() != '/')
    base += '/';
  std::string tmpl = base + "kiln-bbpe-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return ::mkdtemp(buf.data()) ? std::string(buf.data()) : std::string();
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string join(const Ids &ids) {
  std::string s;
  for (int32_t id : ids)
    s += (s.empty() ? "" : " ") + std::to_string(id);
  return "[" + s + "]";
}

std::string hex(const std::string &s) {
  static const char *d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h += d[c >> 4];
    h += d[c & 15];
  }
  return h;
}

// Strings the dev text does not have: the regex's corners, other scripts, specials.
const std::vector<std::string> &edgeStrings() {
  static const std::vector<std::string> texts = {
      "",
      " ",
      "  ",
      "   leading spaces",
      "trailing spaces   ",
      "trailing space ",
      "many     spaces  between   words",
      "\n",
      "\n\n",
      "first line\nsecond line\n",
      "windows\r\nline\r\n\r\nends\r\n",
      "\ttab\t\tand  \t mixed \n \n whitespace",
      "it's they're we've I'm you'll he'd don't",
      "IT'S THEY'RE WE'VE I'M YOU'LL HE'D DON'T It'S",
      "'s 't 're 've 'm 'll 'd 'x ''s",
      "1234567 12 1 123456789012 3.14159 -42 1,000,000",
      "numbers9and8letters7 x2 2x",
      "punctuation!!! ...?! ;-) (a) [b] {c} \"quoted\" --dash-- !!\n\n",
      "a...\r\n\r\nb",
      "\xF0\x9F\x98\x80 emoji \xF0\x9F\x8E\x89\xF0\x9F\x8E\x89 "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9", // ZWJ sequence
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
      "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\x85ngstr\xC3\xB6m stra\xC3\x9F" "e",
      "e\xCC\x81 combining accent", // e + U+0301 (Mn: not a letter)
      "mixed \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xCE\xB3\xCE\xB5\xCE\xB9\xCE\xB1 "
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D"
      "\xE0\xA4\xA4\xE0\xA5\x87 \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4" "abc123",
      "\xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4 \xE2\x85\xA0\xE2\x85\xA1 \xC2\xBD", // Arabic-Indic, Roman, 1/2
      "no\xC2\xA0" "break\xE2\x80\x83" "em\xE3\x80\x80ideographic space",
      "'\xC5\xBF" "ong 'Sure", // U+017F folds to s under (?i): "'ſ" "ong"
      "<|begin_of_text|>Once upon a time<|end_of_text|>",
      "x<|reserved_special_token_0|><|begin_of_text|>y",
      "a [kiln] b[kiln]c <|begin_of_text",
      "Once upon a time, there was a little girl named Lily.",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "thethethethe the the  the   the",
  };
  return texts;
}

// ---- oracle: a vocabulary trained by the Python reference ----

struct Variant {
  const char *name;
  const char *args; // byte_bpe_reference.py options
};
void PrintTo(const Variant &v, std::ostream *os) { *os << v.name; }

// One trained tokenizer.json per variant, shared by its tests, removed at exit.
struct TrainedFiles {
  std::map<std::string, std::string> dirs; // variant -> directory with tokenizer.json
  ~TrainedFiles() {
    for (const auto &kv : dirs) {
      std::remove((kv.second + "/tokenizer.json").c_str());
      ::rmdir(kv.second.c_str());
    }
  }
};
TrainedFiles &trained() {
  static TrainedFiles t;
  return t;
}

class ByteLevelBpeReference : public ::testing::TestWithParam<Variant> {
protected:
  void SetUp() override {
    calib_ = kiln::test::modelsDir() + "/tinystories-calib.txt";
    dev_ = kiln::test::modelsDir() + "/tinystories-dev.txt";
    KILN_REQUIRE_FILE(calib_);
    KILN_REQUIRE_FILE(dev_);
    dir_ = makeTempDir();
    ASSERT_FALSE(dir_.empty()) << "mkdtemp failed";
    auto it = trained().dirs.find(GetParam().name);
    if (it == trained().dirs.end()) {
      std::string dir = makeTempDir();
      ASSERT_FALSE(dir.empty()) << "mkdtemp failed";
      json_ = dir + "/tokenizer.json";
      ASSERT_NO_FATAL_FAILURE(
          runScript("--train '" + calib_ + "' --merges 400 " + GetParam().args));
      trained().dirs[GetParam().name] = dir;
    } else {
      json_ = it->second + "/tokenizer.json";
    }
    std::string error;
    tok_ = kiln::hf::readByteLevelBpe(json_, error);
    ASSERT_TRUE(tok_) << error;
  }
  void runScript(const std::string &args) {
    std::string cmd = std::string("'") + KILN_PYTHON3 + "' '" + KILN_BYTE_BPE_REFERENCE + "' '" +
                      json_ + "' " + args + " > '" + dir_ + "/log' 2>&1";
    int rc = std::system(cmd.c_str());
    ASSERT_TRUE(rc == 0) << cmd << " failed:\n" << readFile(dir_ + "/log");
  }
  void TearDown() override {
    if (!dir_.empty()) {
      for (const char *f : {"/log", "/ids", "/texts"})
        std::remove((dir_ + f).c_str());
      ::rmdir(dir_.c_str());
    }
  }
  // The reference's ids for each text.
  std::vector<Ids> referenceIds(const std::vector<std::string> &texts) {
    std::string h;
    for (const std::string &t : texts)
      h += hex(t) + "\n";
    writeFile(dir_ + "/texts", h);
    runScript("--encode-hex '" + dir_ + "/texts' --ids-out '" + dir_ + "/ids'");
    std::vector<Ids> all;
    std::ifstream in(dir_ + "/ids");
    for (std::string line; std::getline(in, line);) {
      Ids ids;
      std::istringstream s(line);
      for (int32_t id; s >> id;)
        ids.push_back(id);
      all.push_back(ids);
    }
    return all;
  }
  // Compares ids and the round trip on every text; returns the number of mismatches.
  size_t compareAll(const std::vector<std::string> &texts, const char *what) {
    std::vector<Ids> want = referenceIds(texts);
    EXPECT_EQ(want.size(), texts.size()) << "the reference wrote too few lines";
    size_t mismatches = 0;
    for (size_t i = 0; i < texts.size() && i < want.size(); ++i) {
      Ids got = tok_->encode(texts[i], false);
      std::string back = tok_->detokenize(got, /*keepSpecial=*/true);
      if (got != want[i] || back != texts[i]) {
        if (++mismatches <= 5)
          ADD_FAILURE() << what << " " << i + 1 << " \"" << texts[i] << "\": reference "
                        << join(want[i]) << " vs C++ " << join(got) << ", decoded \"" << back
                        << "\"";
      }
    }
    std::printf("[ info     ] %s: %zu compared, %zu mismatches\n", what, texts.size(), mismatches);
    return mismatches;
  }

  std::string calib_, dev_, dir_, json_;
  std::unique_ptr<ByteLevelBpe> tok_;
};

// 256 bytes, 400 merges, 16 whole words no merge makes, then the 4 added tokens.
TEST_P(ByteLevelBpeReference, Shape) {
  EXPECT_EQ(tok_->size(), 256u + 400u + 16u + 4u);
  EXPECT_EQ(tok_->numMerges(), 400u);
  EXPECT_EQ(tok_->bos(), 672);
  EXPECT_EQ(tok_->eos(), 673);
  EXPECT_TRUE(tok_->addBos());
  EXPECT_TRUE(tok_->isSpecial(672) && tok_->isSpecial(674) && !tok_->isSpecial(675));
  EXPECT_EQ(tok_->encode("", true), (Ids{672}));
  EXPECT_EQ(tok_->decode(672), "");
  EXPECT_EQ(tok_->decode(675), "[kiln]");
}

TEST_P(ByteLevelBpeReference, DevTextIdsEqualReference) {
  std::ifstream in(dev_);
  std::vector<std::string> lines;
  std::string all;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    all += line + "\n";
  }
  EXPECT_GT(lines.size(), 1000u);
  lines.push_back(all); // the whole text as one string
  EXPECT_EQ(compareAll(lines, "dev lines"), 0u);
}

TEST_P(ByteLevelBpeReference, EdgeStringsIdsEqualReference) {
  EXPECT_EQ(compareAll(edgeStrings(), "edge strings"), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Trained, ByteLevelBpeReference,
    ::testing::Values(
        Variant{"Llama3IgnoreMerges", "--pattern llama3 --ignore-merges true --merge-form pairs"},
        Variant{"Llama3Merges", "--pattern llama3 --ignore-merges false --merge-form string"},
        Variant{"Gpt2", "--pattern gpt2 --ignore-merges false --merge-form pairs"}),
    [](const ::testing::TestParamInfo<Variant> &info) { return std::string(info.param.name); });

// The generated \p{L} / \p{N} tables and the \s list against `regex`, on every code point
// assigned in Python's unicodedata (the reference marks the others "-").
TEST(ByteLevelBpeClasses, EqualRegexModule) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  std::string cmd = std::string("'") + KILN_PYTHON3 + "' '" + KILN_BYTE_BPE_REFERENCE + "' '" +
                    dir + "/classes' --classes > '" + dir + "/log' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << ":\n" << readFile(dir + "/log");
  std::string want = readFile(dir + "/classes");
  std::remove((dir + "/classes").c_str());
  std::remove((dir + "/log").c_str());
  ::rmdir(dir.c_str());
  ASSERT_EQ(want.size(), 0x110000u);
  size_t compared = 0, mismatches = 0;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    if (want[cp] == '-')
      continue;
    ++compared;
    char got = ByteLevelBpe::charClass(cp);
    if (got != want[cp] && ++mismatches <= 5)
      ADD_FAILURE() << "U+" << std::hex << cp << ": regex " << want[cp] << ", kiln " << got;
  }
  EXPECT_GT(compared, 100000u);
  EXPECT_EQ(mismatches, 0u);
  std::printf("[ info     ] Unicode %s: %zu code points compared, %zu mismatches\n",
              ByteLevelBpe::unicodeVersion(), compared, mismatches);
}

// ---- the pre-tokenizer, split by hand from the regex ----

TEST(ByteLevelBpePreTokenize, Llama3) {
  auto split = [](const std::string &s) {
    return ByteLevelBpe::preTokenize(s, ByteLevelBpe::Pattern::Llama3);
  };
  EXPECT_EQ(split(""), Pieces{});
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  // ' ' before a space is \s+(?!\S) without its last space; a run at the end is all \s+.
  EXPECT_EQ(split("I'm  here  "), (Pieces{"I", "'m", " ", " here", "  "}));
  EXPECT_EQ(split("you're 3"), (Pieces{"you", "'re", " ", "3"}));
  EXPECT_EQ(split("DON'T It'S"), (Pieces{"DON", "'T", " It", "'S"}));
  EXPECT_EQ(split("'\xC5\xBFx"), (Pieces{"'\xC5\xBF", "x"}));
  EXPECT_EQ(split("'x"), (Pieces{"'x"})); // [^\r\n\p{L}\p{N}]?\p{L}+
  EXPECT_EQ(split("1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("a\r\n\r\nb"), (Pieces{"a", "\r\n\r\n", "b"}));
  EXPECT_EQ(split("a \n  b"), (Pieces{"a", " \n", " ", " b"}));
  EXPECT_EQ(split("hi!!\n\nthere"), (Pieces{"hi", "!!\n\n", "there"}));
  EXPECT_EQ(split("x ...y"), (Pieces{"x", " ...", "y"}));
  EXPECT_EQ(split("\t\tfoo"), (Pieces{"\t", "\tfoo"}));
  EXPECT_EQ(split("\nfoo"), (Pieces{"\n", "foo"})); // \n cannot lead a word
  EXPECT_EQ(split("(foo)"), (Pieces{"(foo", ")"}));
  EXPECT_EQ(split("x\xFF" "y"), (Pieces{"x", "\xFFy"})); // an invalid byte is "other"
}

TEST(ByteLevelBpePreTokenize, Gpt2) {
  auto split = [](const std::string &s) {
    return ByteLevelBpe::preTokenize(s, ByteLevelBpe::Pattern::Gpt2);
  };
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("I'M it's"), (Pieces{"I", "'", "M", " it", "'s"})); // case-sensitive
  EXPECT_EQ(split("x  1234567"), (Pieces{"x", " ", " 1234567"}));
  EXPECT_EQ(split("a\r\n\r\nb"), (Pieces{"a", "\r\n\r", "\n", "b"}));
  EXPECT_EQ(split("(foo) !!"), (Pieces{"(", "foo", ")", " !!"}));
}

TEST(ByteLevelBpePreTokenize, SmolLM) {
  auto split = [](const std::string &s) {
    return ByteLevelBpe::preTokenize(s, ByteLevelBpe::Pattern::SmolLM);
  };
  EXPECT_EQ(split(""), Pieces{});
  // every digit alone; GPT-2's regex between them, a digit ending its stretch (so the two
  // spaces before one are a whole \s+(?!\S), where GPT-2 alone gives " ", " 1234567")
  EXPECT_EQ(split("x  1234567"), (Pieces{"x", "  ", "1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(split("Hello world 2024!"),
            (Pieces{"Hello", " world", " ", "2", "0", "2", "4", "!"}));
  EXPECT_EQ(split("a1b 3.14"), (Pieces{"a", "1", "b", " ", "3", ".", "1", "4"}));
  EXPECT_EQ(split("x \xC2\xBD y"), (Pieces{"x", " ", "\xC2\xBD", " y"})); // U+00BD is \p{N}
  EXPECT_EQ(split("I'M it's"), (Pieces{"I", "'", "M", " it", "'s"}));
  EXPECT_EQ(split("a\r\n\r\nb"), (Pieces{"a", "\r\n\r", "\n", "b"}));
}

// ---- a hand-written vocabulary ----
//
// Ids 0..255: the byte characters (GPT-2's bytes_to_unicode, id = byte value; byte 0x20 is
// "Ġ"). Merges by rank: 0 b+c -> bc 256, 1 a+b -> ab 257, 2 ab+c -> abc 258, 3 Ġ+a -> Ġa 259,
// 4 Ġa+b -> Ġab 260. Added: 261 <|begin_of_text|> (special, BOS by the template),
// 262 <|end_of_text|> (special).
std::string byteChar(int b) {
  bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  int cp = b;
  if (!printable) {
    cp = 256;
    for (int x = 0; x < b; ++x)
      if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE))
        ++cp;
  }
  std::string u;
  if (cp < 0x80) {
    u += char(cp);
  } else {
    u += char(0xC0 | (cp >> 6));
    u += char(0x80 | (cp & 0x3F));
  }
  return u;
}

std::string jsonString(const std::string &s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      q += buf;
    } else {
      q += char(c);
    }
  }
  return q + "\"";
}

struct Fixture {
  const std::string G = byteChar(' ');
  std::string extraVocab = ", \"bc\": 256, \"ab\": 257, \"abc\": 258, \"" + G + "a\": 259, \"" +
                           G + "ab\": 260";
  std::string merges = "[\"b\", \"c\"], [\"a\", \"b\"], [\"ab\", \"c\"], [\"" + G + "\", \"a\"], "
                       "[\"" + G + "a\", \"b\"]";
  std::string model = "\"type\": \"BPE\", \"byte_fallback\": false, \"ignore_merges\": false, "
                      "\"dropout\": null, \"unk_token\": null";
  std::string added = "{\"id\": 261, \"content\": \"<|begin_of_text|>\", \"special\": true, "
                      "\"normalized\": false}, {\"id\": 262, \"content\": \"<|end_of_text|>\", "
                      "\"special\": true, \"normalized\": false}";
  std::string normalizer = "null";
  std::string preTokenizer =
      "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
      "{\"Regex\": " +
      jsonString(ByteLevelBpe::kLlama3Regex) +
      "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
      "\"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]}";
  std::string postProcessor =
      "{\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"}, {\"type\": "
      "\"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<|begin_of_text|>\", "
      "\"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": "
      "{\"<|begin_of_text|>\": {\"id\": \"<|begin_of_text|>\", \"ids\": [261], \"tokens\": "
      "[\"<|begin_of_text|>\"]}}}]}";
  std::string decoder = "{\"type\": \"ByteLevel\"}";

  std::string str() const {
    std::string vocab;
    for (int b = 0; b < 256; ++b)
      vocab += (b ? ", " : "") + jsonString(byteChar(b)) + ": " + std::to_string(b);
    return "{\"version\": \"1.0\", \"added_tokens\": [" + added +
           "], \"normalizer\": " + normalizer + ", \"pre_tokenizer\": " + preTokenizer +
           ", \"post_processor\": " + postProcessor + ", \"decoder\": " + decoder +
           ", \"model\": {" + model + ", \"vocab\": {" + vocab + extraVocab +
           "}, \"merges\": [" + merges + "]}}";
  }
};

std::unique_ptr<ByteLevelBpe> parseOk(const Fixture &f, const std::string &config = "") {
  std::string error;
  std::unique_ptr<ByteLevelBpe> t = ByteLevelBpe::parse(f.str(), config, "fixture", error);
  EXPECT_TRUE(t) << error;
  return t;
}

std::string parseError(const std::string &json, const std::string &config = "") {
  std::string error;
  EXPECT_FALSE(ByteLevelBpe::parse(json, config, "fixture", error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  return error;
}

// Worked by hand (lowest rank first, leftmost on ties):
//   "abc": a b c: (b,c) r0 beats (a,b) r1 -> a bc; (a,bc) is no merge -> [97 256]
//   " ab": one piece; Ġ a b: (a,b) r1 beats (Ġ,a) r3 -> Ġ ab; (Ġ,ab) no merge -> [32 257]
//   "abcab": a b c a b: (b,c) r0 -> a bc a b -> (a,b) r1 at the end -> [97 256 257]
//   " a": Ġ a -> r3 -> [259]; "ca": no merge -> [99 97]
//   "it's": pieces "it" "'s" -> [105 116 39 115]
//   "<|begin_of_text|>ab<|end_of_text|>": [261 257 262]
TEST(ByteLevelBpeFixture, HandCheckedIds) {
  std::unique_ptr<ByteLevelBpe> t = parseOk(Fixture());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->size(), 263u);
  EXPECT_EQ(t->pattern(), ByteLevelBpe::Pattern::Llama3);
  EXPECT_FALSE(t->ignoreMerges());
  EXPECT_EQ(t->encode("abc", false), (Ids{97, 256}));
  EXPECT_EQ(t->encode(" ab", false), (Ids{32, 257}));
  EXPECT_EQ(t->encode("abcab", false), (Ids{97, 256, 257}));
  EXPECT_EQ(t->encode(" a", false), (Ids{259}));
  EXPECT_EQ(t->encode("ca", false), (Ids{99, 97}));
  EXPECT_EQ(t->encode("it's", false), (Ids{105, 116, 39, 115}));
  EXPECT_EQ(t->encode("<|begin_of_text|>ab<|end_of_text|>", false), (Ids{261, 257, 262}));
  EXPECT_EQ(t->encode("ab", true), (Ids{261, 257}));
  EXPECT_EQ(t->encode("\xC3\xA9", false), (Ids{0xC3, 0xA9})); // é: two byte tokens
  EXPECT_EQ(t->bos(), 261);
  EXPECT_EQ(t->eos(), 262);
  EXPECT_EQ(t->detokenize({32, 257}), " ab");
  EXPECT_EQ(t->detokenize({261, 97, 256, 262}), "abc");
  EXPECT_EQ(t->detokenize({261, 97, 262}, true), "<|begin_of_text|>a<|end_of_text|>");
  EXPECT_EQ(t->decode(0xC3) + t->decode(0xA9), "\xC3\xA9");
  EXPECT_EQ(t->decode(10), "\n");
  EXPECT_EQ(t->decode(-1), "");
  EXPECT_EQ(t->decode(263), "");
}

// ignore_merges: a piece that is a vocabulary token is that token: "abc" -> [258] where
// the merges alone give [97 256]; " abc" is no token, so it still goes through the merges:
// Ġ a b c -> (b,c) r0: Ġ a bc -> (Ġ,a) r3: Ġa bc -> [259 256].
TEST(ByteLevelBpeFixture, IgnoreMerges) {
  Fixture f;
  f.model = "\"type\": \"BPE\", \"ignore_merges\": true";
  std::unique_ptr<ByteLevelBpe> t = parseOk(f);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->ignoreMerges());
  EXPECT_EQ(t->encode("abc", false), (Ids{258}));
  EXPECT_EQ(t->encode(" abc", false), (Ids{259, 256}));
}

// Merges given as "a b" strings; GPT-2's lone ByteLevel pre-tokenizer; no post-processor.
TEST(ByteLevelBpeFixture, Gpt2Shape) {
  Fixture f;
  f.merges = "\"b c\", \"a b\", \"ab c\", \"" + f.G + " a\", \"" + f.G + "a b\"";
  f.preTokenizer = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
  f.postProcessor = "{\"type\": \"ByteLevel\"}";
  f.added = "{\"id\": 261, \"content\": \"<|endoftext|>\", \"special\": true}, "
            "{\"id\": 262, \"content\": \"<x>\", \"special\": false}";
  std::unique_ptr<ByteLevelBpe> t = parseOk(f);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pattern(), ByteLevelBpe::Pattern::Gpt2);
  EXPECT_FALSE(t->addBos());
  EXPECT_EQ(t->bos(), -1);
  EXPECT_EQ(t->eos(), 261);
  EXPECT_EQ(t->encode("abc", true), (Ids{97, 256}));
  EXPECT_EQ(t->encode("I'M", false), (Ids{73, 39, 77}));
  EXPECT_EQ(t->encode("a<x>b", false), (Ids{97, 262, 98}));
  EXPECT_EQ(t->decode(262), "<x>");
  // the Split form of the same regex
  f.preTokenizer =
      "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
      "{\"Regex\": " +
      jsonString(ByteLevelBpe::kGpt2Regex) +
      "}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
      "\"use_regex\": false}]}";
  t = parseOk(f);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pattern(), ByteLevelBpe::Pattern::Gpt2);
  // SmolLM's: digits alone, then GPT-2's regex
  f.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", "
                   "\"individual_digits\": true}, {\"type\": \"ByteLevel\", "
                   "\"add_prefix_space\": false, \"use_regex\": true}]}";
  t = parseOk(f);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pattern(), ByteLevelBpe::Pattern::SmolLM);
  EXPECT_EQ(t->encode("ab 12", false), (Ids{257, 32, 49, 50}));
  f.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", "
                   "\"individual_digits\": false}, {\"type\": \"ByteLevel\", "
                   "\"add_prefix_space\": false, \"use_regex\": true}]}";
  EXPECT_EQ(parseError(f.str()), "fixture: pre_tokenizer.pretokenizers[0].individual_digits: "
                                 "must be true (runs of digits as one piece are not supported)");
}

TEST(ByteLevelBpeFixture, Config) {
  Fixture f;
  std::unique_ptr<ByteLevelBpe> t =
      parseOk(f, "{\"bos_token\": \"<|end_of_text|>\", \"eos_token\": {\"content\": "
                 "\"<|begin_of_text|>\"}, \"add_bos_token\": false}");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bos(), 262);
  EXPECT_EQ(t->eos(), 261);
  EXPECT_FALSE(t->addBos());
  EXPECT_EQ(t->encode("a", true), (Ids{262, 97}));
  EXPECT_EQ(parseError(f.str(), "{\"eos_token\": \"<nope>\"}"),
            "tokenizer_config.json: eos_token: \"<nope>\" is not a token");
}

// Both kinds through one door, and the SentencePiece reader still refuses byte-level files.
TEST(ByteLevelBpeFixture, LoadEitherKind) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  writeFile(dir + "/tokenizer.json", Fixture().str());
  writeFile(dir + "/tokenizer_config.json", "{\"eos_token\": \"<|begin_of_text|>\"}");
  kiln::artifact::TokenizerRecord rec;
  std::string error;
  std::unique_ptr<kiln::hf::TextTokenizer> t =
      kiln::hf::loadTokenizerJson(dir + "/tokenizer.json", rec, error);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(dynamic_cast<ByteLevelBpe *>(t.get()));
  EXPECT_EQ(t->encode(" ab", true), (Ids{261, 32, 257}));
  EXPECT_EQ(t->eos(), 261);
  EXPECT_EQ(rec.model, "gpt2");
  EXPECT_EQ(rec.tokens.size(), 263u);
  EXPECT_TRUE(kiln::hf::isByteLevelTokenizerJson(Fixture().str()));
  EXPECT_FALSE(kiln::hf::readTokenizerJson(dir + "/tokenizer.json", rec, error));
  EXPECT_NE(error.find("byte-level BPE tokenizers (Llama 3 style) are not supported"),
            std::string::npos)
      << error;
  std::unique_ptr<ByteLevelBpe> direct = kiln::hf::readByteLevelBpe(dir + "/tokenizer.json", error);
  ASSERT_TRUE(direct) << error;
  EXPECT_EQ(direct->eos(), 261);
  // An SPM-style file gives runtime-min's tokenizer.
  writeFile(dir + "/tokenizer.json",
            "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"<unk>\": 0, "
            "\"<s>\": 1, \"</s>\": 2, \"\xE2\x96\x81\": 3, \"a\": 4}, \"merges\": []}, "
            "\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
            "\"content\": \"\xE2\x96\x81\"}}");
  std::remove((dir + "/tokenizer_config.json").c_str());
  t = kiln::hf::loadTokenizerJson(dir + "/tokenizer.json", rec, error);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(dynamic_cast<kiln::hf::RuntimeTextTokenizer *>(t.get()));
  EXPECT_EQ(rec.model, "llama");
  EXPECT_EQ(t->encode("a a", false), (Ids{4, 3, 4}));
  std::remove((dir + "/tokenizer.json").c_str());
  EXPECT_FALSE(kiln::hf::loadTokenizerJson(dir + "/tokenizer.json", rec, error));
  EXPECT_EQ(error, dir + "/tokenizer.json: cannot open: No such file or directory");
  ::rmdir(dir.c_str());
}

// Every proper prefix of a good file is an error of one line, never a crash.
TEST(ByteLevelBpeFixture, TruncatedAtEveryByte) {
  const std::string full = Fixture().str();
  for (size_t n = 0; n < full.size(); ++n) {
    std::string error;
    ASSERT_FALSE(ByteLevelBpe::parse(full.substr(0, n), "", "fixture", error)) << n;
    ASSERT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(ByteLevelBpeFixture, Errors) {
  auto with = [](auto edit) {
    Fixture f;
    edit(f);
    return f.str();
  };
  EXPECT_EQ(parseError("[1]"), "fixture: expected a JSON object at the top, got array");
  EXPECT_EQ(parseError("{}"), "fixture: model: missing");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.decoder = "null"; })),
            "fixture: decoder: null is not supported (byte-level BPE needs ByteLevel)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.normalizer = "{\"type\": \"NFC\"}"; })),
            "fixture: normalizer: NFC is not supported (byte-level BPE with no normalizer only)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                               "\"Punctuation\"}, {\"type\": \"ByteLevel\"}]}";
            })),
            "fixture: pre_tokenizer: Sequence[Punctuation, ByteLevel] is not supported (byte-level "
            "BPE needs Sequence[Split(Llama 3 or GPT-2 regex, Isolated), ByteLevel(use_regex "
            "false)], ByteLevel(use_regex true) or Sequence[Digits(individual_digits true), "
            "ByteLevel(use_regex true)])");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                               "\"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"behavior\": "
                               "\"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": "
                               "false, \"use_regex\": false}]}";
            })),
            "fixture: pre_tokenizer.pretokenizers[0].pattern.Regex: \"\\\\s+\" is not supported "
            "(only Llama 3's and GPT-2's regex)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              size_t at = f.preTokenizer.find("Isolated");
              f.preTokenizer.replace(at, 8, "Removed");
            })),
            "fixture: pre_tokenizer.pretokenizers[0].behavior: \"Removed\" is not supported "
            "(only \"Isolated\")");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.preTokenizer = "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}";
            })),
            "fixture: pre_tokenizer.add_prefix_space: must be false (a space prepended to the "
            "text is not supported)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              size_t at = f.preTokenizer.find("\"use_regex\": false");
              f.preTokenizer.replace(at, 18, "\"use_regex\": true");
            })),
            "fixture: pre_tokenizer.pretokenizers[1].use_regex: must be false (the Split before "
            "it already splits)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.model = "\"type\": \"WordPiece\""; })),
            "fixture: model.type: \"WordPiece\" is not supported (byte-level tokenizers need "
            "\"BPE\")");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.model = "\"type\": \"BPE\", \"byte_fallback\": true";
            })),
            "fixture: model.byte_fallback: true is not supported (a byte-level vocabulary has "
            "every byte; byte_fallback is SentencePiece's)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.model = "\"type\": \"BPE\", \"dropout\": 0.1"; })),
            "fixture: model.dropout: BPE dropout is not supported (it makes encoding random)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.model = "\"type\": \"BPE\", \"ignore_merges\": \"yes\"";
            })),
            "fixture: model.ignore_merges: expected bool, got string");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.merges += ", [\"c\", \"a\"]"; })),
            "fixture: model.merges[5]: \"ca\" (\"c\" + \"a\") is not in model.vocab");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.merges += ", [\"zz\", \"a\"]"; })),
            "fixture: model.merges[5]: \"zz\" is not in model.vocab");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.merges += ", \"abc\""; })),
            "fixture: model.merges[5]: \"abc\" is not two tokens separated by one space");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.merges += ", 7"; })),
            "fixture: model.merges[5]: expected string \"a b\" or pair [a, b], got number");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.extraVocab += ", \"zz\": 264"; })),
            "fixture: model.vocab: id 263 has no token (ids must run from 0 to the highest, 264)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.extraVocab += ", \"zz\": 260"; })),
            "fixture: model.vocab: \"zz\" and \"" + Fixture().G + "ab\" both have id 260");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.added += ", {\"id\": 263, \"content\": \"abc\", \"special\": false}";
            })),
            "fixture: added_tokens: tokens 258 and 263 have the same text \"abc\"");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.added += ", {\"id\": 263, \"content\": \"<x>\", \"lstrip\": true}";
            })),
            "fixture: added_tokens[2].lstrip: true is not supported (only exact matches of "
            "added tokens)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.postProcessor = "{\"type\": \"RobertaProcessing\"}";
            })),
            "fixture: post_processor: RobertaProcessing is not supported (only ByteLevel and one "
            "TemplateProcessing)");
  // A byte with no token: drop "!" (byte 0x21, id 33) by renaming it.
  std::string noBang = Fixture().str();
  size_t at = noBang.find("\"!\": 33");
  ASSERT_NE(at, std::string::npos);
  noBang.replace(at, 7, "\"!!\": 33");
  EXPECT_EQ(parseError(noBang), "fixture: model.vocab: byte 0x21 (\"!\") has no token (a "
                                "byte-level vocabulary needs all 256)");
  EXPECT_EQ(parseError(Fixture().str(), "{\"add_bos_token\": 1}"),
            "tokenizer_config.json: add_bos_token: expected bool, got number");
  std::string error;
  EXPECT_FALSE(kiln::hf::readByteLevelBpe("/nonexistent/tokenizer.json", error));
  EXPECT_EQ(error, "/nonexistent/tokenizer.json: cannot open: No such file or directory");
}

} // namespace
