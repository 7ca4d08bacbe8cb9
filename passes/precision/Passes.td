//===- Passes.td - precision assignment passes ---------------*- tablegen -*-===//
#ifndef KILN_PASSES_PRECISION_PASSES_TD
#define KILN_PASSES_PRECISION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnAssignUniformFormat : Pass<"kiln-assign-uniform-format", "mlir::ModuleOp"> {
  let summary = "store every weight matrix in one storage format";
  let description = [{
    Sets the storage `format` of every op that reads a weight matrix (embed, linear,
    logits) to the given format. Norm weights stay f32 (they have no format). Rows whose
    length is not a multiple of the format's block are padded later by the weight layout,
    never refused. The simplest precision policy; `--precision` policies driven by
    measured sensitivity will sit beside it.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"f32\"",
           "storage format: f32, f16, q8_0, q4_0 or q4_1">,
  ];
}

#endif // KILN_PASSES_PRECISION_PASSES_TD
