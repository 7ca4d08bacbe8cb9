# Cross-compiling runtime-min (and kiln's C/C++ tests that need no LLVM/MLIR) for aarch64
# Linux with Debian's cross toolchain (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu,
# libc6-dev-arm64-cross; scripts/install-deps.sh installs them). Programs run under
# qemu-aarch64-static, which CMake and CTest use as the emulator:
#   cmake -G Ninja -S . -B build-aarch64 -DKILN_WITH_MLIR=OFF \
#         -DCMAKE_TOOLCHAIN_FILE=runtime-min/cmake/aarch64-linux-gnu.cmake
# For Android use the NDK's own toolchain file instead (docs/targets.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
# Host tools (flatc), target libraries; headers and CMake packages from both (Eigen and
# the FlatBuffers headers are architecture-independent and live under /usr).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
find_program(KILN_QEMU_AARCH64 qemu-aarch64-static)
if(KILN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${KILN_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
