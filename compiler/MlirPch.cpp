// Anchor for the shared MLIR precompiled header (see MlirPch.h).
