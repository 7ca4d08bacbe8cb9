//===- TokenizerJson.h - Hugging Face tokenizer.json reader ---------------===//
//
// Reads a Hugging Face `tokenizers` file (tokenizer.json) into the same TokenizerRecord a
// GGUF vocabulary gives, so runtime-min's SentencePiece tokenizer (kiln/tokenizer.h) runs
// it. Supported: the SentencePiece-style BPE of Llama 2 / TinyLlama, as transformers'
// LlamaConverter writes it:
//   model            {"type": "BPE", "byte_fallback": true, "vocab": {text: id},
//                     "merges": ["a b", ...] or [["a", "b"], ...], "unk_token": "<unk>"}
//   added_tokens     [{"id", "content", "special"}]: special -> CONTROL (the unk token
//                     UNKNOWN), non-special -> USER_DEFINED; "<0xNN>" texts are BYTE
//   normalizer       Sequence[Prepend("▁"), Replace(" ", "▁")] (legacy) or Replace alone,
//   pre_tokenizer    or Metaspace("▁", prepend_scheme / add_prefix_space): addSpacePrefix
//                     (split true, the default, is refused when a token has "▁" past its
//                     start, e.g. "▁▁": Hugging Face then cuts before it, the runtime not)
//   post_processor   TemplateProcessing (or a Sequence holding one): a leading special
//                     token is BOS and turns addBos on
// and, when present beside it, tokenizer_config.json: bos_token, eos_token and
// add_bos_token override the above. Without them BOS/EOS are the tokens "<s>"/"</s>".
//
// Scores. The runtime merges SentencePiece-style: repeatedly the adjacent pair whose
// concatenation is the vocabulary token with the highest score (leftmost on ties). BPE
// merges the adjacent pair with the lowest merge rank (leftmost on ties). Each token gets
// score = -(rank of the first merge that produces it); tokens no merge produces (single
// characters, bytes, specials) get -(number of merges), below every merge. Then both pick
// the same pair at every step as long as (a) every pair of adjacent pieces that concatenates
// to a vocabulary token is a listed merge and (b) the merges producing one token sit in one
// block of ranks, so ranking the token is ranking the pair. LlamaConverter's files satisfy
// both: it lists every split of every piece into two vocabulary pieces, ordered by the piece's
// score. Where they do not hold, the runtime can differ from Hugging Face:
//  1. two adjacent pieces concatenate to a vocabulary token but are not a listed merge: BPE
//     never joins them, the runtime does, with the token's score (test
//     KnownDifferenceUnlistedSplit);
//  2. a token produced by two merges of different rank whose pairs compete in one word (they
//     overlap, as x|y|x for a token x+y == y+x): BPE takes the lower-ranked pair, the
//     runtime the leftmost;
//  3. a character with no token is cut into <0xNN> tokens; the runtime can still join it to
//     a neighbour if their concatenation is a token, BPE cannot (no merge names it); and when
//     a <0xNN> token is missing the runtime emits one unknown per byte where Hugging Face
//     fuses them (fuse_unk). Llama vocabularies have all 256 byte tokens.
// tests/unit/TokenizerJsonTest.cpp checks LlamaConverter-style files give exactly the GGUF
// tokenizer's ids and a plain BPE implementation's.
//
// Refused with one line naming the field: bad JSON, a missing or mistyped field, model types
// other than BPE, byte_fallback off, byte-level BPE (Llama 3's ByteLevel pre-tokenizer or
// decoder; the runtime tokenizer does not do it yet: the compiler reads those files with
// ByteLevelBpe.h, and TextTokenizer.h's loadTokenizerJson takes either), normalizers and
// pre-tokenizers other
// than the above, merges naming tokens not in the vocabulary, ids with no token, two tokens
// with the same text, over 2^24 merges (ranks stop being exact f32 scores).
// Not reproduced: an EOS the template appends (the runtime only prepends BOS), and special
// tokens written inside the text (the runtime, like llama.cpp with parse_special off, treats
// them as text).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_HF_TOKENIZERJSON_H
#define KILN_FRONTENDS_HF_TOKENIZERJSON_H

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/frontends/gguf/GgufVocab.h"

#include <memory>
#include <string>

namespace kiln::hf {

// Reads `path` (and tokenizer_config.json in its directory, if there). On failure returns
// false with `error` set to one line; `out` is then unspecified.
bool readTokenizerJson(const std::string &path, artifact::TokenizerRecord &out, std::string &error);

// Same, from the files' text; `configText` is tokenizer_config.json's ("" if none).
// `name` and `configName` prefix the errors about each.
bool parseTokenizerJson(const std::string &jsonText, const std::string &configText,
                        const std::string &name, artifact::TokenizerRecord &out, std::string &error,
                        const std::string &configName = "tokenizer_config.json");

// The runtime tokenizer for a record (from GGUF or tokenizer.json); null with `error` set
// when the runtime rejects it.
std::unique_ptr<gguf::Tokenizer> makeTokenizer(const artifact::TokenizerRecord &rec,
                                               std::string &error);

} // namespace kiln::hf

#endif // KILN_FRONTENDS_HF_TOKENIZERJSON_H
