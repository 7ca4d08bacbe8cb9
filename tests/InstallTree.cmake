# `cmake --install` of a runtime-only build, then the embed example built against that prefix
# alone, once with find_package(kiln) and once with pkg-config, each run on an artifact.
#   cmake -DSRC=.. -DBIN=.. -DARTIFACT=A.kiln -DCC=cc -P InstallTree.cmake
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${BIN})
set(prefix ${BIN}/prefix)
step("configuring runtime-min alone" ${CMAKE_COMMAND} -G Ninja -S ${SRC} -B ${BIN}/build
     -DKILN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=${prefix})
step("building it" ${CMAKE_COMMAND} --build ${BIN}/build)
step("installing it" ${CMAKE_COMMAND} --install ${BIN}/build)
foreach(f include/kiln/kiln.h lib/libkiln_runtime.a lib/cmake/kiln/kilnConfig.cmake
          lib/pkgconfig/kiln.pc bin/kiln-run)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install has no ${f}")
  endif()
endforeach()
file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
if(installed MATCHES "llvm|mlir|LLVM|MLIR")
  message(FATAL_ERROR "the install refers to LLVM/MLIR: ${installed}")
endif()

# find_package(kiln) from the prefix only.
step("configuring the app with find_package(kiln)" ${CMAKE_COMMAND} -G Ninja
     -S ${SRC}/tests/install -B ${BIN}/app -DCMAKE_PREFIX_PATH=${prefix}
     -DEMBED_SOURCE=${SRC}/tests/e2e/embed_example.c)
step("building the app" ${CMAKE_COMMAND} --build ${BIN}/app)
# pkg-config from the prefix only.
step("pkg-config" env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig pkg-config --cflags --libs
     --static kiln)
string(STRIP "${last_out}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
step("building the app with pkg-config" ${CC} ${SRC}/tests/e2e/embed_example.c ${flags}
     -o ${BIN}/embed_pc)

foreach(app ${BIN}/app/embed_example ${BIN}/embed_pc)
  step("running ${app}" ${app} ${ARTIFACT} "Once upon a time")
  if(NOT last_out MATCHES "^Once upon a time.")
    message(FATAL_ERROR "${app} printed: ${last_out}")
  endif()
  message(STATUS "${app}: ${last_out}")
endforeach()
