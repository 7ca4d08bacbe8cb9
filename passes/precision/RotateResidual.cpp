//===- RotateResidual.cpp - a Hadamard rotation of the residual stream -----===//
//
// The residual stream is the embedding's output and every kiln.add that extends it. Its
// readers are rms_norms (whose readers must all be linears or the classifier) and the
// adds; what an add takes besides the stream must be a linear (the writer). See
// Passes.td for the algebra. Names: the rotated weight of W is "W:rotated" (the rules
// precision policy reads W's class through it); a folded scale goes in between as
// "W.fold(g)" (foldNormIntoReaders, shared with kiln-fold-norm-into-linear).
//===----------------------------------------------------------------------===//
#include "passes/precision/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include "dialects/kiln/IR/KilnOps.h"
#include "models/weights/DerivedWeights.h"
#include "models/weights/HadamardRotation.h"
#include "passes/fusion/LinearFusionPasses.h"
#include "passes/precision/WeightReads.h"

namespace kiln {
#define GEN_PASS_DEF_KILNROTATERESIDUAL
#include "passes/precision/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct RotateResidual : public impl::KilnRotateResidualBase<RotateResidual> {
  using KilnRotateResidualBase::KilnRotateResidualBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<EmbedOp> embeds;
    module.walk([&](EmbedOp e) { embeds.push_back(e); });
    if (embeds.size() != 1) {
      module.emitError("kiln-rotate-residual needs one embedding, found ") << embeds.size();
      return signalPassFailure();
    }
    EmbedOp embed = embeds.front();
    const int64_t width = cast<RankedTensorType>(embed.getType()).getDimSize(1);
    if (!rotation::isSupported(uint64_t(width))) {
      embed.emitError("the residual stream is ")
          << width << " wide: no Hadamard matrix of that order here (a power of two, or 12, "
          << "20, 24, 44, ... times one)";
      return signalPassFailure();
    }
    // The stream: the embedding's value and every add that takes a stream value.
    llvm::SetVector<Value> stream;
    stream.insert(embed.getResult());
    SmallVector<RmsNormOp> norms;
    SmallVector<LinearOp> writers;
    for (size_t i = 0; i < stream.size(); ++i)
      for (Operation *user : stream[i].getUsers()) {
        if (auto add = dyn_cast<AddOp>(user)) {
          if (stream.contains(add.getLhs()) && stream.contains(add.getRhs())) {
            add.emitError("adds two values of the residual stream: not a Llama block");
            return signalPassFailure();
          }
          Value other = add.getLhs() == stream[i] ? add.getRhs() : add.getLhs();
          auto writer = other.getDefiningOp<LinearOp>();
          if (!writer || !other.hasOneUse()) {
            add.emitError("adds to the residual stream a value that is not one linear's "
                          "output: the rotation cannot be folded into it");
            return signalPassFailure();
          }
          writers.push_back(writer);
          stream.insert(add.getResult());
        } else if (auto norm = dyn_cast<RmsNormOp>(user)) {
          for (Operation *reader : norm.getResult().getUsers())
            if (!isa<LinearOp, LogitsOp>(reader)) {
              reader->emitError("reads a normalised residual stream and is not a linear: "
                                "the rotation cannot be folded into it");
              return signalPassFailure();
            }
          norms.push_back(norm);
        } else {
          user->emitError("reads the residual stream: only rms_norm and add may, for the "
                          "rotation to fold into the weights");
          return signalPassFailure();
        }
      }
    const std::string table = embed.getWeight().str();
    for (RmsNormOp norm : norms)
      for (Operation *reader : norm.getResult().getUsers())
        if (weightReadsOf(reader).front().name == table) {
          reader->emitError("the classifier shares the embedding table '")
              << table << "': rotating would store a second table";
          return signalPassFailure();
        }

    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    auto addRotation = [&](const std::string &name, const std::string &source, DeriveOp how) {
      addDerivedWeight(module, name,
                       derivedRecipe(ctx, how,
                                     {b.getNamedAttr("source", b.getStringAttr(source)),
                                      b.getNamedAttr("seed", b.getI64IntegerAttr(seed))}));
    };
    // op's weight, named `base` before any fold and read as `source` now, becomes rotated
    auto rotate = [&](Operation *op, const std::string &base, const std::string &source,
                      DeriveOp how) {
      addRotation(base + ":rotated", source, how);
      op->setAttr("weight", b.getStringAttr(base + ":rotated"));
      precision::setFormat(op, uint32_t(StorageFormat::f32));
      ++numRotated;
    };
    rotate(embed, table, table, DeriveOp::rotate_rows);
    for (LinearOp w : writers) {
      if (auto bias = w.getBias()) {
        addRotation(bias->str() + ":rotated", bias->str(), DeriveOp::rotate_rows);
        w.setBiasAttr(b.getStringAttr(bias->str() + ":rotated"));
      }
      rotate(w, w.getWeight().str(), w.getWeight().str(), DeriveOp::rotate_cols);
    }
    for (RmsNormOp norm : norms) {
      std::vector<std::pair<Operation *, std::string>> readers; // and their unfolded names
      for (Operation *reader : norm.getResult().getUsers())
        readers.push_back({reader, weightReadsOf(reader).front().name.str()});
      foldNormIntoReaders(module, norm);
      for (auto &[reader, base] : readers)
        rotate(reader, base, weightReadsOf(reader).front().name.str(), DeriveOp::rotate_rows);
    }
  }
};

} // namespace
} // namespace kiln
