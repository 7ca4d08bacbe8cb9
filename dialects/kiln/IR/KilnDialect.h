//===- KilnDialect.h - kiln dialect ---------------------------------------===//
#ifndef KILN_DIALECTS_KILN_IR_KILNDIALECT_H
#define KILN_DIALECTS_KILN_IR_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/kiln/IR/KilnDialect.h.inc"

#endif // KILN_DIALECTS_KILN_IR_KILNDIALECT_H
