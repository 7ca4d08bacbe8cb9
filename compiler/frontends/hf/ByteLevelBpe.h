//===- ByteLevelBpe.h - byte-level BPE from a Hugging Face tokenizer.json -===//
//
// The tokenizer of Llama 3 (and GPT-2): text -> UTF-8 bytes -> pieces -> BPE over the
// 256 byte symbols, as Hugging Face `tokenizers` computes it from a tokenizer.json of the
// shape
//   normalizer      null
//   pre_tokenizer   Sequence[Split(Regex LLAMA3 or GPT2, behavior "Isolated", invert false),
//                            ByteLevel(add_prefix_space false, use_regex false)]
//                   or ByteLevel(add_prefix_space false, use_regex true)  (GPT-2's regex)
//   model           {"type": "BPE", "byte_fallback": false (or absent), "ignore_merges",
//                    "vocab": {text: id}, "merges": ["a b", ...] or [["a", "b"], ...]}
//   added_tokens    [{"id", "content", "special", "normalized", lstrip/rstrip/single_word
//                    false}]
//   post_processor  null, ByteLevel, TemplateProcessing, or a Sequence of those: a leading
//                   special token in "single" is BOS and turns addBos on
//   decoder         ByteLevel
// plus tokenizer_config.json beside it (bos_token, eos_token, add_bos_token win).
//
// Encoding, step by step as tokenizers does it:
//  1. Added tokens are cut out of the text first: those with "normalized": false, then in
//     what is left those with "normalized": true (with no normalizer both see the raw
//     text); leftmost match, longest on ties (aho-corasick LeftmostLongest). They become
//     their ids directly, special or not (transformers' default split_special_tokens=False).
//  2. Every other stretch is split by the pre-tokenizer regex into pieces, each match its
//     own piece ("Isolated"). The regexes are hand-written scanners (preTokenize below),
//     no regex library:
//       LLAMA3 (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//              ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//       GPT2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     \p{L} / \p{N}: general categories L* / N*, from tables generated at build time from
//     Python's unicodedata (gen_unicode_classes.py; KILN_UNICODE_VERSION says which
//     Unicode). \s: the White_Space property (what Python's `regex` module matches).
//     (?i) matches the ASCII letters both ways and U+017F (long s) as s, as `regex` does.
//  3. Each piece's bytes become GPT-2's printable characters (bytes_to_unicode). With
//     ignore_merges (Llama 3 sets it) a piece that is itself a vocabulary token is that
//     token. Otherwise BPE: start from one symbol per byte and repeatedly merge the
//     adjacent pair with the lowest merge rank, leftmost on ties, until none is a merge.
//  4. BOS first when asked for.
// Decoding: each token's characters back to bytes (a token with a character outside the
// byte map, e.g. an added token with a space, gives its UTF-8 text, as tokenizers'
// ByteLevel decoder does); special tokens give "" (skip_special_tokens).
//
// Input that is not valid UTF-8 (tokenizers never sees it: Rust strings are UTF-8): each
// invalid byte is one character of class "other" (neither letter, number nor space), so it
// still round-trips. Code points assigned after KILN_UNICODE_VERSION count as "other".
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

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::hf {

class ByteLevelBpe : public TextTokenizer {
public:
  enum class Pattern { Llama3, Gpt2 };

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

private:
  ByteLevelBpe() = default;
  friend class ByteLevelReader;

  void encodePiece(const std::string &piece, std::vector<int32_t> &out) const;
  void encodeText(const std::string &text, std::vector<int32_t> &out) const;

  struct Added {
    std::string text;
    int32_t id;
  };

  Pattern pattern_ = Pattern::Llama3;
  bool ignoreMerges_ = false, addBos_ = false;
  int32_t bos_ = -1, eos_ = -1;
  std::vector<std::string> tokens_; // by id
  std::vector<std::string> bytes_;  // by id: what decode() gives (without the special rule)
  std::vector<bool> special_;
  std::unordered_map<std::string, int32_t> vocab_; // model.vocab: byte-mapped text -> id
  int32_t byteId_[256] = {};
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>> merges_;
  std::vector<Added> addedRaw_, addedNormalized_; // by "normalized"
};

// Reads a byte-level tokenizer.json (and tokenizer_config.json beside it, if there).
std::unique_ptr<ByteLevelBpe> readByteLevelBpe(const std::string &path, std::string &error);

} // namespace kiln::hf

#endif // KILN_FRONTENDS_HF_BYTELEVELBPE_H
