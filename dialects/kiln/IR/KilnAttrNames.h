//===- KilnAttrNames.h - the discardable attributes passes exchange -------===//
//
// Every `kiln.*` attribute a pass leaves for a later one, named once. The dialect verifies
// each where it appears (KilnDialect::verifyOperationAttribute): an unknown `kiln.` name,
// or a value of the wrong kind, fails verification at that op. No MLIR includes.
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECTS_KILN_IR_KILNATTRNAMES_H
#define KILN_DIALECTS_KILN_IR_KILNATTRNAMES_H

namespace kiln::attr {

// On the module (the model builder, slimming, precision).
constexpr const char *kArch = "kiln.arch";                    // string: the model family
constexpr const char *kVocabSize = "kiln.vocab_size";         // integer
constexpr const char *kNumLayers = "kiln.num_layers";         // integer
constexpr const char *kContextLength = "kiln.context_length"; // integer: the model's
constexpr const char *kMaxCtx = "kiln.max_ctx";               // integer: kiln-prune-context's cap
constexpr const char *kPrunedLayers = "kiln.pruned_layers";   // i32 array
constexpr const char *kDerivedWeights = "kiln.derived_weights"; // dictionary: name -> recipe
constexpr const char *kPassEffects = "kiln.pass_effects";     // dictionary: pass -> "k=v,.."
// On ops.
constexpr const char *kLayer = "kiln.layer";             // integer: the decoder layer
constexpr const char *kLayout = "kiln.layout";           // #kiln.layout<r16|r32|rows64|block>
constexpr const char *kRowAlign = "kiln.row_align";      // integer: power of two >= 64
constexpr const char *kTokenPanel = "kiln.token_panel";  // integer > 0: tokens per panel
constexpr const char *kShardGroups = "kiln.shard_groups"; // integer > 0: groups per shard
// The memory plan (kiln-plan-memory), read by the lowering.
constexpr const char *kMemoryPlan = "kiln.memory_plan"; // module: dictionary of integers
constexpr const char *kBuffers = "kiln.buffers";        // op: i64 array, scratch offset of
                                                        // each result
constexpr const char *kWorkspace = "kiln.workspace";    // op: integer, its own scratch
constexpr const char *kKvSlots = "kiln.kv_slots";       // attention: i64 array [k, k scales, v]

} // namespace kiln::attr

#endif // KILN_DIALECTS_KILN_IR_KILNATTRNAMES_H
