//===- RotateResidual.cpp - a Hadamard rotation of the residual stream -----===//
//
// The residual stream is the embedding's output and every kiln.add that extends it. Its
// readers are rms_norms (whose readers must all be linears or the classifier) and the
// adds; what an add takes besides the stream must be a linear (the writer). See
// Passes.td for the algebra. Names: the rotated weight of W is "W:rotated" (the rules
// precision policy reads W's class through it); a folded scale goes in between as
// "W.fold(g)", as kiln-fold-norm-into-linear names it.
//===----------------------------------------------------------------------===//
#include "passes/precision/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include "dialects/kiln/IR/KilnOps.h"
#include "models/weights/DerivedWeights.h"
#include "models/weights/HadamardRotation.h"
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
    auto rotated = [&](Operation *op, const std::string &source, DeriveOp how,
                       const std::string &attrName) {
      const std::string name = weightReadsOf(op).front().name.str() + ":rotated";
      addDerivedWeight(module, name,
                       derivedRecipe(ctx, how,
                                     {b.getNamedAttr("source", b.getStringAttr(source)),
                                      b.getNamedAttr("seed", b.getI64IntegerAttr(seed))}));
      op->setAttr(attrName, b.getStringAttr(name));
      precision::setFormat(op, uint32_t(StorageFormat::f32));
      ++numRotated;
    };
    rotated(embed, table, DeriveOp::rotate_rows, "weight");
    for (LinearOp w : writers) {
      if (auto bias = w.getBias()) {
        const std::string rb = bias->str() + ":rotated";
        addDerivedWeight(module, rb,
                         derivedRecipe(ctx, DeriveOp::rotate_rows,
                                       {b.getNamedAttr("source", b.getStringAttr(*bias)),
                                        b.getNamedAttr("seed", b.getI64IntegerAttr(seed))}));
        w.setBiasAttr(b.getStringAttr(rb));
      }
      rotated(w, w.getWeight().str(), DeriveOp::rotate_cols, "weight");
    }
    for (RmsNormOp norm : norms) {
      const std::string g = norm.getWeight().str();
      for (Operation *reader : norm.getResult().getUsers()) {
        const std::string w = weightReadsOf(reader).front().name.str();
        const std::string folded = w + ".fold(" + g + ")";
        addDerivedWeight(module, folded,
                         derivedRecipe(ctx, DeriveOp::scale_cols,
                                       {b.getNamedAttr("source", b.getStringAttr(w)),
                                        b.getNamedAttr("by", b.getStringAttr(g))}));
        rotated(reader, folded, DeriveOp::rotate_rows, "weight");
      }
      OpBuilder ob(norm);
      auto plain =
          ob.create<RmsNormalizeOp>(norm.getLoc(), norm.getType(), norm.getInput(), norm.getEpsAttr());
      for (NamedAttribute a : norm->getDiscardableAttrs())
        plain->setAttr(a.getName(), a.getValue());
      norm.replaceAllUsesWith(plain.getResult());
      norm.erase();
    }
  }
};

} // namespace
} // namespace kiln
