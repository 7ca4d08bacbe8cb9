# runtime-min's size is a tracked number: configure runtime-min alone (KILN_RUNTIME_ONLY)
# with -Os (MinSizeRel) in a scratch tree and build the core library (kiln_runtime: loader,
# signature check, tokenizers, executor; not kiln_quant's formats, which no app needs to
# run an artifact). The number is what an app ships: the whole archive linked into a shared
# object that exports runtime-min's kiln_* functions, unused sections dropped
# (--gc-sections; the archive holds libsodium's signing code too, which verification does
# not call), counted as its code and data (`size`: text + data, the export tables included;
# the file itself adds page-alignment padding that moves in 4 KiB steps). Fails above LIMIT
# bytes; prints the stripped file and archive sizes as well.
#   cmake -DSRC=<source dir> -DBIN=<scratch dir> -DLIMIT=<bytes> -P RuntimeSizeTest.cmake
# (the scratch tree is a host build, whichever tree runs the test: the link uses its C
# compiler, read from its cache)
execute_process(COMMAND ${CMAKE_COMMAND} -G Ninja -S ${SRC} -B ${BIN} -DKILN_RUNTIME_ONLY=ON
                        -DCMAKE_BUILD_TYPE=MinSizeRel -DCMAKE_POSITION_INDEPENDENT_CODE=ON
                RESULT_VARIABLE rc)
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
file(STRINGS ${BIN}/CMakeCache.txt cc_line REGEX "^CMAKE_C_COMPILER:")
string(REGEX REPLACE "^[^=]*=" "" CC "${cc_line}")
set(so ${BIN}/stripped/libkiln_runtime.so)
file(WRITE ${BIN}/exports.map "{ global: kiln_*; local: *; };\n")
execute_process(COMMAND ${CC} -shared -o ${so} -Wl,--gc-sections
                        -Wl,--version-script=${BIN}/exports.map
                        -Wl,--whole-archive ${BIN}/lib/libkiln_runtime.a -Wl,--no-whole-archive
                        -lm -lpthread RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "linking ${so} failed")
endif()
execute_process(COMMAND ${STRIP_TOOL} ${so} RESULT_VARIABLE rc)
file(SIZE ${so} so_file_bytes)
find_program(SIZE_TOOL NAMES size llvm-size-19 llvm-size REQUIRED)
execute_process(COMMAND ${SIZE_TOOL} -B ${so} OUTPUT_VARIABLE size_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT size_out MATCHES "\n *([0-9]+)[ \t]+([0-9]+)[ \t]+[0-9]+")
  message(FATAL_ERROR "size failed on ${so}: ${size_out}")
endif()
math(EXPR so_bytes "${CMAKE_MATCH_1} + ${CMAKE_MATCH_2}")
set(run ${BIN}/stripped/kiln-run)
file(COPY ${BIN}/bin/kiln-run DESTINATION ${BIN}/stripped)
execute_process(COMMAND ${STRIP_TOOL} ${run})
file(SIZE ${run} run_bytes)
message(STATUS "runtime-min core (-Os): ${so_bytes} bytes of code and data linked "
               "(limit ${LIMIT}); stripped libkiln_runtime.so file ${so_file_bytes} bytes, "
               "libkiln_runtime.a ${bytes} bytes; kiln-run ${run_bytes} bytes")
if(so_bytes GREATER LIMIT)
  message(FATAL_ERROR "the core links to ${so_bytes} bytes of code and data, above the "
                      "${LIMIT}-byte limit")
endif()
