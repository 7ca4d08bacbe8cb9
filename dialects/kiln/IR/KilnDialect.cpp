//===- KilnDialect.cpp - kiln dialect registration ------------------------===//
#include "dialects/kiln/IR/KilnDialect.h"
#include "dialects/kiln/IR/KilnOps.h"

using namespace kiln;

#include "dialects/kiln/IR/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kiln/IR/KilnOps.cpp.inc"
      >();
}
