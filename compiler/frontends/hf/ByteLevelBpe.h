//===- ByteLevelBpe.h - byte-level BPE from a Hugging Face tokenizer.json -===//
//
// The tokenizer of Llama 3 (and GPT-2): text -> UTF-8 bytes -> pieces -> BPE over the
// 256 byte symbols, as Hugging Face `tokenizers` computes it from a tokenizer.json of the
// shape
//   normalizer      null
//   pre_tokenizer   Sequence[Split(Regex LLAMA3 or GPT2, behavior "Isolated", invert false),
//                            ByteLevel(add_prefix_space false, use_regex false)]
//                   or ByteLevel(add_prefix_space false, use_regex true)  (GPT-2's regex)
//                   or Sequence[Digits(individual_digits true), ByteLevel(use_regex true)]
//                   (SmolLM's)
//   model           {"type": "BPE", "byte_fallback": false (or absent), "ignore_merges",
//                    "vocab": {text: id}, "merges": ["a b", ...] or [["a", "b"], ...]}
//   added_tokens    [{"id", "content", "special", "normalized", lstrip/rstrip/single_word
//                    false}]
//   post_processor  null, ByteLevel, TemplateProcessing, or a Sequence of those: a leading
//                   special token in "single" is BOS and turns addBos on
//   decoder         ByteLevel
// plus tokenizer_config.json beside it (bos_token, eos_token, add_bos_token win).
//
// This file reads; runtime-min encodes and decodes (runtime-min/src/tokenizer/bpe.c, the
// one implementation, which the artifact carries too): added tokens cut out first (special
// ones become control tokens, the others user-defined), the pre-tokenizer regex (Llama 3's
// or GPT-2's) as a hand-written scanner, GPT-2's byte map, merges by rank, ignore_merges.
//
// Refused with one line naming the field: every other normalizer, pre-tokenizer, decoder
// or post-processor; add_prefix_space true; a Split with another regex or behaviour;
// byte_fallback, dropout, continuing_subword_prefix, end_of_word_suffix; added tokens with
// lstrip/rstrip/single_word; a byte with no vocabulary token; merges naming tokens not in
// the vocabulary; ids with no token; two tokens with the same text.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_HF_BYTELEVELBPE_H
#define KILN_FRONTENDS_HF_BYTELEVELBPE_H

#include "compiler/frontends/hf/TextTokenizer.h"
#include "kiln/tokenizer.h"

#include <cstdint>
#include <memory>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::hf {

class ByteLevelBpe : public TextTokenizer {
public:
  // Llama 3's regex; GPT-2's; SmolLM's (each digit alone, then GPT-2's)
  enum class Pattern { Llama3, Gpt2, SmolLM };
  static kiln_pretokenizer_t runtimePattern(Pattern p);
  static const char *patternName(Pattern p); // the artifact's / kiln's name: llama3, gpt2, smollm

  // The pre-tokenizer regexes exactly as tokenizer.json spells them.
  static const char *const kLlama3Regex;
  static const char *const kGpt2Regex;

  // From tokenizer.json's text and tokenizer_config.json's ("" if none); null with `error`
  // set to one line (prefixed with `name` / `configName`) on failure.
  static std::unique_ptr<ByteLevelBpe> parse(const std::string &jsonText,
                                             const std::string &configText,
                                             const std::string &name, std::string &error,
                                             const std::string &configName =
                                                 "tokenizer_config.json");

  uint32_t size() const override { return uint32_t(tokens_.size()); }
  int32_t bos() const override { return bos_; }
  int32_t eos() const override { return eos_; }
  int32_t eot() const { return eot_; } // <|eot_id|> when the vocabulary has it, else -1
  bool addBos() const override { return addBos_; }
  std::vector<int32_t> encode(const std::string &text, bool addBos) const override;
  // The bytes one token stands for; "" for special tokens and ids out of range.
  std::string decode(int32_t id) const override;
  // decode() of each id, concatenated; with `keepSpecial` special tokens give their text.
  std::string detokenize(const std::vector<int32_t> &ids, bool keepSpecial = false) const;

  Pattern pattern() const { return pattern_; }
  bool ignoreMerges() const { return ignoreMerges_; }
  size_t numMerges() const { return merges_.size(); }
  const std::vector<std::string> &tokens() const { return tokens_; } // texts as in the file
  bool isSpecial(int32_t id) const;

  // The pre-tokenizer split of `text` (byte strings, concatenating to `text`).
  static std::vector<std::string> preTokenize(const std::string &text, Pattern pattern);
  // The scanner's class of a code point: 'L' (\p{L}), 'N' (\p{N}), 'S' (\s) or 'O'.
  static char charClass(uint32_t cp);
  // The Unicode version of the \p{L} / \p{N} tables.
  static const char *unicodeVersion();

  const std::vector<int32_t> &types() const { return types_; }       // kiln_token_type_t
  const std::vector<std::string> &merges() const { return merges_; } // "left right", by rank
  // runtime-min's tokenizer over this vocabulary, which encode() and decode() use.
  const gguf::Tokenizer &runtime() const { return *runtime_; }

private:
  ByteLevelBpe() = default;
  friend class ByteLevelReader;

  Pattern pattern_ = Pattern::Llama3;
  bool ignoreMerges_ = false, addBos_ = false;
  int32_t bos_ = -1, eos_ = -1, eot_ = -1;
  std::vector<std::string> tokens_; // by id
  std::vector<int32_t> types_;      // by id: control (special), user-defined (added), normal
  std::map<int32_t, int32_t> addedType_;
  std::unordered_map<std::string, int32_t> vocab_; // model.vocab: byte-mapped text -> id
  std::vector<std::string> merges_;
  std::unique_ptr<gguf::Tokenizer> runtime_;
};

// Reads a byte-level tokenizer.json (and tokenizer_config.json beside it, if there).
std::unique_ptr<ByteLevelBpe> readByteLevelBpe(const std::string &path, std::string &error);

} // namespace kiln::hf

#endif // KILN_FRONTENDS_HF_BYTELEVELBPE_H
