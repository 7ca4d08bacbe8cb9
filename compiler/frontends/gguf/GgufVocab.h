//===- GgufVocab.h - Llama SentencePiece vocabulary from GGUF metadata ----===//
//
// Builds runtime-min's SPM tokenizer (kiln/tokenizer.h) from a GGUF file's tokenizer.ggml.*
// keys, with llama.cpp's defaults for the "llama" tokenizer model:
//   tokenizer.ggml.model            string, must be "llama"
//   tokenizer.ggml.tokens           array of string (n > 0, texts unique)
//   tokenizer.ggml.scores           array of f32, n entries (absent: all 0)
//   tokenizer.ggml.token_type       array of i32, n entries, each 0..6 (absent: all NORMAL)
//   tokenizer.ggml.{bos,eos,unknown}_token_id   u32 < n (absent: 1, 2, 0)
//   tokenizer.ggml.add_space_prefix bool (absent: true)
//   tokenizer.ggml.add_bos_token    bool (absent: true)
// Every problem is reported as one line naming the key.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_GGUF_GGUFVOCAB_H
#define KILN_FRONTENDS_GGUF_GGUFVOCAB_H

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/frontends/gguf/GgufFile.h"
#include "kiln/tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::gguf {

// Owns a kiln_tokenizer_t.
class Tokenizer {
public:
  // From a GGUF file's metadata. On failure returns null and sets `error` to one line.
  static std::unique_ptr<Tokenizer> fromGguf(const GgufFile &file, std::string &error);
  // From a record (a GGUF's or a tokenizer.json's, as an artifact stores it): SentencePiece
  // ("llama") or byte-level BPE ("gpt2").
  static std::unique_ptr<Tokenizer> fromRecord(const artifact::TokenizerRecord &rec,
                                               std::string &error);
  // From a descriptor (copied); `addBos` is the model's add_bos_token default.
  static std::unique_ptr<Tokenizer> fromDesc(const kiln_vocab_desc_t &desc, bool addBos,
                                             std::string &error);
  ~Tokenizer();
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  const kiln_tokenizer_t *get() const { return tok_; }
  uint32_t size() const { return kiln_tokenizer_vocab_size(tok_); }
  int32_t bos() const { return kiln_tokenizer_bos(tok_); }
  int32_t eos() const { return kiln_tokenizer_eos(tok_); }
  bool addBos() const { return addBos_; }               // tokenizer.ggml.add_bos_token
  bool addSpacePrefix() const { return addSpacePrefix_; }

  // Ids for `text`, BOS first when `addBos`. Fails (error set) only when BOS is asked for
  // but absent, or a byte has no byte-fallback or unknown token.
  bool encode(const std::string &text, bool addBos, std::vector<int32_t> &out,
              std::string &error) const;
  // Same; an empty vector on failure.
  std::vector<int32_t> encode(const std::string &text, bool addBos) const;
  // The bytes one token stands for ("" for control/unknown tokens and ids out of range).
  std::string decode(int32_t id) const;
  // llama.cpp's llama_detokenize(remove_special = false, unparse_special = false): the
  // pieces concatenated, with one leading space taken off the first token's piece when
  // add_space_prefix is set. So detokenize(encode(s, false)) == s, while with a leading
  // BOS (whose piece is empty) the result is " " + s.
  std::string detokenize(const std::vector<int32_t> &ids) const;

private:
  Tokenizer(kiln_tokenizer_t *tok, bool addBos, bool addSpacePrefix)
      : tok_(tok), addBos_(addBos), addSpacePrefix_(addSpacePrefix) {}

  kiln_tokenizer_t *tok_;
  bool addBos_;
  bool addSpacePrefix_;
};

// tokenizer.ggml.model "gpt2" (byte-level BPE) into a record: tokens, token_type, merges,
// pre ("llama-bpe": Llama 3's regex with ignore_merges, BOS by default; "gpt2"), bos, eos and
// eot ids (absent: none), add_bos_token. One line naming the key on failure.
bool readBpeRecord(const GgufFile &file, artifact::TokenizerRecord &rec, std::string &error);

} // namespace kiln::gguf

#endif // KILN_FRONTENDS_GGUF_GGUFVOCAB_H
