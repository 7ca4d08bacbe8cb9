// Hugging Face tokenizer.json reader (compiler/frontends/hf/TokenizerJson.h).
//
// Oracle: tests/onnx/gguf_to_tokenizer_json.py writes stories260K.gguf's vocabulary as
// transformers' LlamaConverter would (merges from every split of every piece, ordered by
// score); the tokenizer read back must give the GGUF tokenizer's ids on every line of
// tinystories-dev.txt and on edge strings. Then small hand-written files with ids worked
// out by hand from the BPE rules, and the errors.
#include "compiler/frontends/hf/TokenizerJson.h"
#include "tests/unit/TestPaths.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using kiln::artifact::TokenizerRecord;
using kiln::gguf::GgufFile;
using kiln::gguf::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

const std::string kSp = "\xE2\x96\x81"; // U+2581

std::string makeTempDir() {
  std::string base = ::testing::TempDir();
  if (base.empty() || base.back() != '/')
    base += '/';
  std::string tmpl = base + "kiln-tokjson-XXXXXX";
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

// ---- oracle: stories260K's vocabulary, converted as LlamaConverter does ----

struct Variant {
  const char *name;
  const char *args; // gguf_to_tokenizer_json.py options
};
void PrintTo(const Variant &v, std::ostream *os) { *os << v.name; }

class TokenizerJsonStories : public ::testing::TestWithParam<Variant> {
protected:
  void SetUp() override {
    gguf_ = kiln::test::modelsDir() + "/stories260K.gguf";
    dev_ = kiln::test::modelsDir() + "/tinystories-dev.txt";
    KILN_REQUIRE_FILE(gguf_);
    KILN_REQUIRE_FILE(dev_);
    dir_ = makeTempDir();
    ASSERT_FALSE(dir_.empty()) << "mkdtemp failed";
    json_ = dir_ + "/tokenizer.json";
    ASSERT_NO_FATAL_FAILURE(runScript(""));

    std::string error;
    file_ = GgufFile::open(gguf_, error);
    ASSERT_TRUE(file_) << error;
    ggufTok_ = Tokenizer::fromGguf(*file_, error);
    ASSERT_TRUE(ggufTok_) << error;
    ASSERT_TRUE(kiln::hf::readTokenizerJson(json_, rec_, error)) << error;
    jsonTok_ = kiln::hf::makeTokenizer(rec_, error);
    ASSERT_TRUE(jsonTok_) << error;
  }
  // Writes json_ from the GGUF with the variant's options, plus `extra` ones.
  void runScript(const std::string &extra) {
    std::string cmd = std::string("'") + KILN_PYTHON3 + "' '" + KILN_GGUF_TO_TOKENIZER_JSON +
                      "' '" + gguf_ + "' '" + json_ + "' " + GetParam().args + extra + " > '" +
                      dir_ + "/log' 2>&1";
    int rc = std::system(cmd.c_str());
    ASSERT_TRUE(rc == 0) << cmd << " failed:\n" << readFile(dir_ + "/log");
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::remove((dir_ + "/log").c_str());
      std::remove((dir_ + "/ids").c_str());
      std::remove(json_.c_str());
      ::rmdir(dir_.c_str());
    }
  }

  // Compares both tokenizers on `text` (with and without BOS: ids and detokenized text)
  // and, when `roundTrip`, that detokenize(encode(text)) == text; returns a description of
  // the first difference, or "".
  std::string compare(const std::string &text, bool roundTrip = true) const {
    for (bool bos : {false, true}) {
      Ids want, got;
      std::string e1, e2;
      bool ok1 = ggufTok_->encode(text, bos, want, e1), ok2 = jsonTok_->encode(text, bos, got, e2);
      if (ok1 != ok2 || want != got)
        return "gguf " + join(want) + e1 + " vs tokenizer.json " + join(got) + e2;
      if (jsonTok_->detokenize(got) != ggufTok_->detokenize(want))
        return "detokenize gives \"" + jsonTok_->detokenize(got) + "\" vs gguf \"" +
               ggufTok_->detokenize(want) + "\"";
      if (!bos && roundTrip && jsonTok_->detokenize(got) != text)
        return "detokenize gives \"" + jsonTok_->detokenize(got) + "\"";
    }
    return "";
  }

  std::string gguf_, dev_, dir_, json_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> ggufTok_, jsonTok_;
  TokenizerRecord rec_;
};

TEST_P(TokenizerJsonStories, RecordMatchesGguf) {
  EXPECT_EQ(rec_.tokens.size(), 512u);
  EXPECT_EQ(rec_.model, "llama");
  EXPECT_EQ(rec_.bosId, 1);
  EXPECT_EQ(rec_.eosId, 2);
  EXPECT_EQ(rec_.unkId, 0);
  EXPECT_TRUE(rec_.addBos);
  EXPECT_TRUE(rec_.addSpacePrefix);
  EXPECT_EQ(jsonTok_->size(), ggufTok_->size());
  EXPECT_EQ(jsonTok_->bos(), ggufTok_->bos());
  EXPECT_EQ(jsonTok_->eos(), ggufTok_->eos());
  EXPECT_EQ(jsonTok_->addBos(), ggufTok_->addBos());
  EXPECT_EQ(jsonTok_->addSpacePrefix(), ggufTok_->addSpacePrefix());
  const kiln::gguf::Value *tokens = file_->find("tokenizer.ggml.tokens");
  const kiln::gguf::Value *types = file_->find("tokenizer.ggml.token_type");
  ASSERT_TRUE(tokens && types);
  ASSERT_EQ(rec_.types.size(), rec_.tokens.size());
  for (size_t i = 0; i < rec_.tokens.size(); ++i) {
    EXPECT_EQ(rec_.tokens[i], tokens->array[i].str) << "token " << i;
    EXPECT_EQ(rec_.types[i], types->array[i].i) << "type of token " << i;
  }
}

// Every line of the TinyStories dev text, plus the whole text as one string.
TEST_P(TokenizerJsonStories, DevTextIdsEqualGguf) {
  std::ifstream in(dev_);
  std::string line, all;
  size_t lines = 0, mismatches = 0;
  while (std::getline(in, line)) {
    ++lines;
    all += line + "\n";
    std::string diff = compare(line);
    if (!diff.empty() && ++mismatches <= 5)
      ADD_FAILURE() << "line " << lines << " \"" << line << "\": " << diff;
  }
  EXPECT_GT(lines, 1000u);
  EXPECT_EQ(mismatches, 0u) << "of " << lines << " lines";
  EXPECT_EQ(compare(all), "") << "the whole text";
  std::printf("[ info     ] %zu lines, %zu mismatches\n", lines, mismatches);
}

// The second oracle: the script's own BPE (lowest merge rank first, as tokenizers' BPE
// model does) on the written file, without SentencePiece scores in the loop.
TEST_P(TokenizerJsonStories, DevTextIdsEqualBpeRule) {
  ASSERT_NO_FATAL_FAILURE(runScript(" --encode '" + dev_ + "' --ids-out '" + dir_ + "/ids'"));
  std::ifstream text(dev_), ids(dir_ + "/ids");
  std::string line, idLine;
  size_t lines = 0, mismatches = 0;
  while (std::getline(text, line)) {
    ++lines;
    ASSERT_TRUE(std::getline(ids, idLine)) << "no ids for line " << lines;
    Ids want;
    std::istringstream in(idLine);
    for (int32_t id; in >> id;)
      want.push_back(id);
    Ids got = jsonTok_->encode(line, false);
    if (got != want && ++mismatches <= 5)
      ADD_FAILURE() << "line " << lines << " \"" << line << "\": BPE rule " << join(want)
                    << " vs tokenizer.json " << join(got);
  }
  EXPECT_GT(lines, 1000u);
  EXPECT_EQ(mismatches, 0u) << "of " << lines << " lines";
  std::printf("[ info     ] %zu lines, %zu mismatches\n", lines, mismatches);
}

TEST_P(TokenizerJsonStories, EdgeStringsIdsEqualGguf) {
  const std::vector<std::string> texts = {
      "",
      " ",
      "  ",
      "   leading spaces",
      "trailing spaces   ",
      "many     spaces  between   words",
      "\n",
      "\n\n",
      "first line\nsecond line\n",
      "\ttab and\r\nwindows line end",
      "caf\xC3\xA9 \xE2\x98\x83 snowman",                        // one token, then bytes
      "\xF0\x9F\x98\x80 emoji \xF0\x9F\x8E\x89\xF0\x9F\x8E\x89", // 4-byte UTF-8
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C",        // CJK
      "Once upon a time, there was a little girl named Lily.",
      "\"Mom!\" she said. It's 42.",
      "<s> and </s> and <unk> as text", // plain text here (Hugging Face would match specials)
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "thethethethe the the  the   the",
  };
  for (const std::string &t : texts)
    EXPECT_EQ(compare(t), "") << "text \"" << t << "\"";
  // Same ids, but no exact round trip (in either tokenizer): a literal U+2581 comes back as
  // a space, and invalid UTF-8 is cut into "characters" by its lead byte, so a following
  // U+2581 can end up in byte tokens and come back as U+2581.
  for (const std::string &t :
       {kSp + "already a sentencepiece space", std::string("\xFF\xFE invalid UTF-8 \xC3")})
    EXPECT_EQ(compare(t, false), "") << "text \"" << t << "\"";
}

INSTANTIATE_TEST_SUITE_P(
    Converted, TokenizerJsonStories,
    ::testing::Values(
        Variant{"LegacyStringMerges", "--style legacy --merges string --order current"},
        Variant{"MetaspacePairMerges", "--style metaspace --merges pairs --order legacy"}),
    [](const ::testing::TestParamInfo<Variant> &info) { return std::string(info.param.name); });

// ---- hand-written files ----
//
// Vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3 <0x0A>, 4 ▁, 5 a, 6 b, 7 c, 8 ab, 9 ▁a, 10 abc,
// 11 bc, 12 ▁ab; added non-special 13 <tool>. Merges, by rank: 0 a+b, 1 ▁+a, 2 b+c,
// 3 ▁a+b, 4 ▁+ab, 5 ab+c, 6 a+bc (every split, as LlamaConverter lists them), so the
// scores are ab 0, ▁a -1, bc -2, ▁ab -3, abc -5 and -7 for the rest.
struct Fixture {
  std::string vocab = "\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"<0x0A>\": 3, \"" + kSp +
                      "\": 4, \"a\": 5, \"b\": 6, \"c\": 7, \"ab\": 8, \"" + kSp +
                      "a\": 9, \"abc\": 10, \"bc\": 11, \"" + kSp + "ab\": 12";
  std::vector<std::pair<std::string, std::string>> merges = {
      {"a", "b"}, {kSp, "a"}, {"b", "c"}, {kSp + "a", "b"}, {kSp, "ab"}, {"ab", "c"}, {"a", "bc"}};
  bool pairMerges = false;
  std::string modelExtra = "\"byte_fallback\": true, \"unk_token\": \"<unk>\", \"dropout\": null";
  std::string modelType = "\"BPE\"";
  std::string added = "{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, "
                      "{\"id\": 1, \"content\": \"<s>\", \"special\": true}, "
                      "{\"id\": 2, \"content\": \"</s>\", \"special\": true}, "
                      "{\"id\": 13, \"content\": \"<tool>\", \"special\": false}";
  std::string normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
                           "\"prepend\": \"" +
                           kSp +
                           "\"}, {\"type\": \"Replace\", \"pattern\": "
                           "{\"String\": \" \"}, \"content\": \"" +
                           kSp + "\"}]}";
  std::string preTokenizer = "null";
  std::string postProcessor =
      "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", "
      "\"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": "
      "{\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]}}}";
  std::string decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", "
                        "\"pattern\": {\"String\": \"" +
                        kSp +
                        "\"}, \"content\": \" \"}, "
                        "{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}";

  std::string str() const {
    std::string m;
    for (const auto &p : merges)
      m += std::string(m.empty() ? "" : ", ") + (pairMerges
                                                     ? "[\"" + p.first + "\", \"" + p.second + "\"]"
                                                     : "\"" + p.first + " " + p.second + "\"");
    return "{\"version\": \"1.0\", \"added_tokens\": [" + added +
           "], \"normalizer\": " + normalizer + ", \"pre_tokenizer\": " + preTokenizer +
           ", \"post_processor\": " + postProcessor + ", \"decoder\": " + decoder +
           ", \"model\": {\"type\": " + modelType + ", " + modelExtra + ", \"vocab\": {" + vocab +
           "}, \"merges\": [" + m + "]}}";
  }
};

TokenizerRecord parseOk(const Fixture &f, const std::string &config = "") {
  TokenizerRecord rec;
  std::string error;
  EXPECT_TRUE(kiln::hf::parseTokenizerJson(f.str(), config, "fixture", rec, error)) << error;
  return rec;
}

std::string parseError(const std::string &json, const std::string &config = "") {
  TokenizerRecord rec;
  std::string error;
  EXPECT_FALSE(kiln::hf::parseTokenizerJson(json, config, "fixture", rec, error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  return error;
}

std::unique_ptr<Tokenizer> tokenizer(const TokenizerRecord &rec) {
  std::string error;
  std::unique_ptr<Tokenizer> tok = kiln::hf::makeTokenizer(rec, error);
  EXPECT_TRUE(tok) << error;
  return tok;
}

TEST(TokenizerJsonFixture, RecordFields) {
  TokenizerRecord rec = parseOk(Fixture());
  ASSERT_EQ(rec.tokens.size(), 14u);
  EXPECT_EQ(rec.tokens[9], kSp + "a");
  EXPECT_EQ(rec.types,
            (Ids{KILN_TOKEN_TYPE_UNKNOWN, KILN_TOKEN_TYPE_CONTROL, KILN_TOKEN_TYPE_CONTROL,
                 KILN_TOKEN_TYPE_BYTE, 1, 1, 1, 1, 1, 1, 1, 1, 1, KILN_TOKEN_TYPE_USER_DEFINED}));
  EXPECT_EQ(rec.scores,
            (std::vector<float>{-7, -7, -7, -7, -7, -7, -7, -7, 0, -1, -5, -2, -3, -7}));
  EXPECT_EQ(rec.bosId, 1);
  EXPECT_EQ(rec.eosId, 2);
  EXPECT_EQ(rec.unkId, 0);
  EXPECT_TRUE(rec.addBos);
  EXPECT_TRUE(rec.addSpacePrefix);
}

// Worked by hand with the BPE rule (lowest-rank adjacent pair first, leftmost on ties):
//   "abc": ▁ a b c -> (a,b) r0: ▁ ab c -> (▁,ab) r4 beats (ab,c) r5: ▁ab c -> [12 7]
//   "bc a": ▁ b c ▁ a -> (▁,a) r1: ▁ b c ▁a -> (b,c) r2: ▁ bc ▁a -> [4 11 9]
//   "cab": ▁ c a b -> (a,b) r0: ▁ c ab -> nothing joins -> [4 7 8]
//   "a\n": ▁ a \n -> (▁,a): ▁a \n -> "\n" is the byte token <0x0A> -> [9 3]
//   "ab" with BOS: ▁ a b -> ▁ ab -> ▁ab -> [1 12]
void expectHandIds(const Fixture &f) {
  std::unique_ptr<Tokenizer> tok = tokenizer(parseOk(f));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("abc", false), (Ids{12, 7}));
  EXPECT_EQ(tok->encode("bc a", false), (Ids{4, 11, 9}));
  EXPECT_EQ(tok->encode("cab", false), (Ids{4, 7, 8}));
  EXPECT_EQ(tok->encode("a\n", false), (Ids{9, 3}));
  EXPECT_EQ(tok->encode("ab", true), (Ids{1, 12}));
  EXPECT_EQ(tok->encode("", true), (Ids{1}));
  EXPECT_EQ(tok->detokenize({12, 7}), "abc");
  EXPECT_EQ(tok->detokenize({4, 11, 9}), "bc a");
}

TEST(TokenizerJsonFixture, HandCheckedIdsStringMerges) { expectHandIds(Fixture()); }

TEST(TokenizerJsonFixture, HandCheckedIdsPairMerges) {
  Fixture f;
  f.pairMerges = true;
  expectHandIds(f);
}

TEST(TokenizerJsonFixture, HandCheckedIdsMetaspace) {
  Fixture f;
  f.normalizer = "null";
  f.preTokenizer = "{\"type\": \"Metaspace\", \"replacement\": \"" + kSp +
                   "\", \"prepend_scheme\": \"first\", \"split\": false}";
  expectHandIds(f);
}

// Metaspace's split (default true) cuts words before "▁": harmless here (no token has "▁"
// past its start), refused when a token like "a▁" could then never be formed.
TEST(TokenizerJsonFixture, MetaspaceSplit) {
  Fixture f;
  f.normalizer = "null";
  f.preTokenizer =
      "{\"type\": \"Metaspace\", \"replacement\": \"" + kSp + "\", \"add_prefix_space\": true}";
  expectHandIds(f);
  f.vocab += ", \"a" + kSp + "\": 14";
  EXPECT_EQ(parseError(f.str()),
            "fixture: pre_tokenizer.split: true, but token 14 \"a" + kSp + "\" has \"" + kSp +
                "\" past its start (not supported: the runtime does not split words)");
}

// Without the prefix: "abc": a b c -> ab c -> abc (r5) -> [10]; "c ab": c ▁ a b -> c ▁ ab ->
// c ▁ab -> [7 12].
TEST(TokenizerJsonFixture, NoSpacePrefix) {
  Fixture legacy;
  legacy.normalizer =
      "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"" + kSp + "\"}";
  Fixture meta;
  meta.normalizer = "null";
  meta.preTokenizer =
      "{\"type\": \"Metaspace\", \"replacement\": \"" + kSp + "\", \"prepend_scheme\": \"never\"}";
  for (const Fixture *f : {&legacy, &meta}) {
    TokenizerRecord rec = parseOk(*f);
    EXPECT_FALSE(rec.addSpacePrefix);
    std::unique_ptr<Tokenizer> tok = tokenizer(rec);
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("abc", false), (Ids{10}));
    EXPECT_EQ(tok->encode("c ab", false), (Ids{7, 12}));
  }
}

TEST(TokenizerJsonFixture, BosFromPostProcessorAndConfig) {
  Fixture f;
  f.postProcessor = "null"; // Hugging Face then adds nothing
  EXPECT_FALSE(parseOk(f).addBos);
  // tokenizer_config.json overrides: add_bos_token, and BOS/EOS as string or AddedToken.
  TokenizerRecord rec = parseOk(f, "{\"add_bos_token\": true, \"bos_token\": \"</s>\", "
                                   "\"eos_token\": {\"__type\": \"AddedToken\", \"content\": "
                                   "\"<s>\"}, \"add_eos_token\": false}");
  EXPECT_TRUE(rec.addBos);
  EXPECT_EQ(rec.bosId, 2);
  EXPECT_EQ(rec.eosId, 1);
  rec = parseOk(Fixture(), "{\"add_bos_token\": false}");
  EXPECT_FALSE(rec.addBos);
  EXPECT_EQ(rec.bosId, 1);
}

TEST(TokenizerJsonFixture, ReadsFileAndConfigBesideIt) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  writeFile(dir + "/tokenizer.json", Fixture().str());
  TokenizerRecord rec;
  std::string error;
  ASSERT_TRUE(kiln::hf::readTokenizerJson(dir + "/tokenizer.json", rec, error)) << error;
  EXPECT_TRUE(rec.addBos);
  writeFile(dir + "/tokenizer_config.json", "{\"add_bos_token\": false, \"eos_token\": \"c\"}");
  ASSERT_TRUE(kiln::hf::readTokenizerJson(dir + "/tokenizer.json", rec, error)) << error;
  EXPECT_FALSE(rec.addBos);
  EXPECT_EQ(rec.eosId, 7);
  writeFile(dir + "/tokenizer_config.json", "{\"bos_token\": \"<nope>\"}");
  EXPECT_FALSE(kiln::hf::readTokenizerJson(dir + "/tokenizer.json", rec, error));
  EXPECT_EQ(error, dir + "/tokenizer_config.json: bos_token: \"<nope>\" is not a token");
  writeFile(dir + "/tokenizer_config.json", "{");
  EXPECT_FALSE(kiln::hf::readTokenizerJson(dir + "/tokenizer.json", rec, error));
  EXPECT_EQ(error.rfind(dir + "/tokenizer_config.json: not valid JSON: ", 0), 0u) << error;
  std::remove((dir + "/tokenizer_config.json").c_str());
  std::remove((dir + "/tokenizer.json").c_str());
  EXPECT_FALSE(kiln::hf::readTokenizerJson(dir + "/tokenizer.json", rec, error));
  EXPECT_EQ(error, dir + "/tokenizer.json: cannot open: No such file or directory");
  ::rmdir(dir.c_str());
}

// Where score-merging and BPE part (see TokenizerJson.h): here ▁+ab is not a listed merge,
// so BPE gives ▁ ab c -> ▁ abc = [4 10], while the runtime joins ▁ and ab into ▁ab because
// that is a token (score -3, above abc's -4) and gives [12 7]. LlamaConverter's files list
// every split, so they never look like this.
TEST(TokenizerJsonFixture, KnownDifferenceUnlistedSplit) {
  Fixture f;
  f.merges = {{"a", "b"}, {kSp, "a"}, {"b", "c"}, {kSp + "a", "b"}, {"ab", "c"}};
  std::unique_ptr<Tokenizer> tok = tokenizer(parseOk(f));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("abc", false), (Ids{12, 7})); // Hugging Face: [4 10]
}

// Every proper prefix of a good file is an error of one line, never a crash.
TEST(TokenizerJsonFixture, TruncatedAtEveryByte) {
  const std::string full = Fixture().str();
  for (size_t n = 0; n < full.size(); ++n) {
    TokenizerRecord rec;
    std::string error;
    ASSERT_FALSE(kiln::hf::parseTokenizerJson(full.substr(0, n), "", "fixture", rec, error))
        << "prefix of " << n << " bytes";
    ASSERT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(TokenizerJsonFixture, Errors) {
  auto with = [](auto edit) {
    Fixture f;
    edit(f);
    return f.str();
  };
  EXPECT_NE(parseError("this is not JSON").find("fixture: not valid JSON: "), std::string::npos);
  std::string full = Fixture().str();
  EXPECT_NE(parseError(full.substr(0, full.size() / 2)).find("fixture: not valid JSON: "),
            std::string::npos);
  EXPECT_EQ(parseError("[1, 2]"), "fixture: expected a JSON object at the top, got array");
  EXPECT_EQ(parseError("{\"version\": \"1.0\"}"), "fixture: model: missing");
  EXPECT_EQ(parseError("{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true}}"),
            "fixture: model.vocab: missing");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.modelType = "\"Unigram\""; })),
            "fixture: model.type: \"Unigram\" is not supported (only \"BPE\" with byte_fallback, "
            "the SentencePiece-style BPE of Llama 2)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.modelExtra = "\"byte_fallback\": false"; })),
            "fixture: model.byte_fallback: must be true (only SentencePiece-style BPE with byte "
            "fallback is supported)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.merges.push_back({"a", "x"});
            })),
            "fixture: model.merges[7]: \"x\" is not in model.vocab");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.merges.push_back({"c", "a"});
            })),
            "fixture: model.merges[7]: \"ca\" (\"c\" + \"a\") is not in model.vocab");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.merges.push_back({"a", "b c"});
            })),
            "fixture: model.merges[7]: \"a b c\" is not two tokens separated by one space");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.preTokenizer =
                  "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\"}, "
                  "{\"type\": \"ByteLevel\"}]}";
              f.decoder = "{\"type\": \"ByteLevel\"}";
            })),
            "fixture: pre_tokenizer: byte-level BPE tokenizers (Llama 3 style) are not supported "
            "yet (found pre_tokenizer Sequence[Split, ByteLevel], decoder ByteLevel); only "
            "SentencePiece-style BPE with byte_fallback (Llama 2, TinyLlama)");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.added += ", {\"id\": 14, \"content\": \"ab\", \"special\": false}";
            })),
            "fixture: added_tokens: tokens 8 and 14 have the same text \"ab\"");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.vocab += ", \"" + kSp + "a\": 14"; })),
            "fixture: model.vocab: id 9 has no token (ids must run from 0 to the highest, 14)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.vocab += ", \"zz\": 9"; })),
            "fixture: model.vocab: \"zz\" and \"" + kSp + "a\" both have id 9");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.vocab += ", \"zz\": 15"; })),
            "fixture: model.vocab: id 14 has no token (ids must run from 0 to the highest, 15)");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.vocab += ", \"zz\": \"14\""; })),
            "fixture: model.vocab: \"zz\": id must be an integer in [0, 2^31-1), got string");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.added += ", {\"id\": 5, \"content\": \"zz\", \"special\": true}";
            })),
            "fixture: added_tokens[4]: id 5 is \"zz\" here but \"a\" in model.vocab");
  EXPECT_EQ(parseError(with([](Fixture &f) {
              f.normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKC\"}]}";
            })),
            "fixture: normalizer: Sequence[NFKC] is not supported (only Prepend(\"" + kSp +
                "\") and Replace(\" \", \"" + kSp + "\"))");
  EXPECT_EQ(parseError(with([](Fixture &f) { f.normalizer = "null"; })),
            "fixture: normalizer: neither the normalizer nor the pre_tokenizer turns spaces into "
            "\"" +
                kSp + "\" (not a SentencePiece-style tokenizer)");
  EXPECT_EQ(
      parseError(with([](Fixture &f) { f.modelExtra += ", \"end_of_word_suffix\": \"</w>\""; })),
      "fixture: model.end_of_word_suffix: \"</w>\" is not supported (SentencePiece-style "
      "BPE has none)");
  EXPECT_EQ(parseError(full, "{\"add_bos_token\": \"yes\"}"),
            "tokenizer_config.json: add_bos_token: expected bool, got string");
}

} // namespace
