//===- KilnInterfaces.td - kiln op interfaces ----------------*- tablegen -*-===//
#ifndef KILN_INTERFACES_TD
#define KILN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Kiln_WeightReaderOpInterface : OpInterface<"WeightReaderOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op that reads weights from the weight store by name: which ones, in which storage
    format, of which shape. The one answer to "which ops read a weight" for the layout,
    the memory plan, the lowering and kiln-opt's stand-in weights; a new op that reads a
    weight implements it and every one of them sees it.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends the weights the op reads, its own matrix (or table, or scale) first and any
        bias after it: the order the code generator stores them in.
      }], "void", "getWeightReads",
      (ins "::llvm::SmallVectorImpl<::kiln::WeightRead> &":$reads)>,
  ];
}

#endif // KILN_INTERFACES_TD
