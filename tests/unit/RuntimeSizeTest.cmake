# runtime-min's size is a tracked number: configure runtime-min alone (KILN_RUNTIME_ONLY)
# with -Os (MinSizeRel) in a scratch tree, build the library, strip a copy of it and fail
# if it is above LIMIT bytes. Prints the size either way.
#   cmake -DSRC=<source dir> -DBIN=<scratch dir> -DLIMIT=<bytes> -P RuntimeSizeTest.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -G Ninja -S ${SRC} -B ${BIN} -DKILN_RUNTIME_ONLY=ON
                        -DCMAKE_BUILD_TYPE=MinSizeRel RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring runtime-min alone failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} --parallel 2 --target kiln_runtime kiln-run
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building runtime-min alone failed")
endif()
find_program(STRIP_TOOL NAMES strip llvm-strip-19 llvm-strip REQUIRED)
set(lib ${BIN}/stripped/libkiln_runtime.a)
file(COPY ${BIN}/lib/libkiln_runtime.a DESTINATION ${BIN}/stripped)
execute_process(COMMAND ${STRIP_TOOL} --strip-unneeded ${lib} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "strip failed on ${lib}")
endif()
file(SIZE ${lib} bytes)
math(EXPR kib "${bytes} / 1024")
math(EXPR limit_kib "${LIMIT} / 1024")
set(run ${BIN}/stripped/kiln-run)
file(COPY ${BIN}/bin/kiln-run DESTINATION ${BIN}/stripped)
execute_process(COMMAND ${STRIP_TOOL} ${run})
file(SIZE ${run} run_bytes)
message(STATUS "runtime-min (-Os, stripped): libkiln_runtime.a ${bytes} bytes (${kib} KiB, "
               "limit ${limit_kib} KiB); kiln-run ${run_bytes} bytes")
if(bytes GREATER LIMIT)
  message(FATAL_ERROR "libkiln_runtime.a is ${bytes} bytes, above the ${LIMIT}-byte limit")
endif()
