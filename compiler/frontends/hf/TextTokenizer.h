//===- TextTokenizer.h - either tokenizer behind one interface ------------===//
//
// What kiln eval/ppl/analyze need of a tokenizer. Both kinds a model can come with are
// runtime-min's (kiln/tokenizer.h): SentencePiece BPE and byte-level BPE, from a GGUF or a
// tokenizer.json; the same tables go into the artifact.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_HF_TEXTTOKENIZER_H
#define KILN_FRONTENDS_HF_TEXTTOKENIZER_H

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/frontends/gguf/GgufVocab.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::hf {

class TextTokenizer {
public:
  virtual ~TextTokenizer() = default;
  virtual uint32_t size() const = 0;
  virtual int32_t bos() const = 0; // -1 if none
  virtual int32_t eos() const = 0; // -1 if none
  virtual bool addBos() const = 0; // the file's default
  // Ids for `text`, BOS first when `addBos` (and there is one); empty on failure.
  virtual std::vector<int32_t> encode(const std::string &text, bool addBos) const = 0;
  // The bytes one token stands for ("" for control/special tokens).
  virtual std::string decode(int32_t id) const = 0;
};

// runtime-min's tokenizer (either kind) behind the interface.
class RuntimeTextTokenizer : public TextTokenizer {
public:
  explicit RuntimeTextTokenizer(std::unique_ptr<gguf::Tokenizer> tok) : tok_(std::move(tok)) {}
  uint32_t size() const override { return tok_->size(); }
  int32_t bos() const override { return tok_->bos(); }
  int32_t eos() const override { return tok_->eos(); }
  bool addBos() const override { return tok_->addBos(); }
  std::vector<int32_t> encode(const std::string &text, bool addBos) const override {
    return tok_->encode(text, addBos);
  }
  std::string decode(int32_t id) const override { return tok_->decode(id); }
  const gguf::Tokenizer &runtime() const { return *tok_; }

private:
  std::unique_ptr<gguf::Tokenizer> tok_;
};

// True when a tokenizer.json (its text) is byte-level BPE: its pre_tokenizer, decoder or
// post_processor mentions ByteLevel. Invalid JSON gives false (the reader then says why).
bool isByteLevelTokenizerJson(const std::string &jsonText);

// Reads either kind of tokenizer.json (and tokenizer_config.json beside it). `record` gets
// what `kiln compile` writes into an artifact: the SentencePiece record, or for byte-level
// files model "gpt2" (as GGUF names Llama 3's tokenizer) with the token texts, types,
// merges and pre-tokenizer. Null with `error` set to one line on failure.
std::unique_ptr<TextTokenizer> loadTokenizerJson(const std::string &path,
                                                 artifact::TokenizerRecord &record,
                                                 std::string &error);

} // namespace kiln::hf

#endif // KILN_FRONTENDS_HF_TEXTTOKENIZER_H
