# Configures and builds kiln with -DKILN_RUNTIME_ONLY=ON; fails if either step fails or if
# anything in the build refers to LLVM or MLIR.
execute_process(COMMAND ${CMAKE_COMMAND} -G Ninja -S ${SRC} -B ${BIN} -DKILN_RUNTIME_ONLY=ON
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring runtime-min alone failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building runtime-min alone failed")
endif()
file(READ ${BIN}/build.ninja ninja)
if(ninja MATCHES "/usr/lib/llvm-|libMLIR|libLLVM|mlir/include")
  message(FATAL_ERROR "the runtime-only build references LLVM/MLIR")
endif()
message(STATUS "runtime-min built alone, no LLVM/MLIR")
