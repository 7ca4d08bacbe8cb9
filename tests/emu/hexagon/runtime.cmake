# runtime-min and kiln-run for Hexagon, freestanding (no libc from the system: the small C
# library in runtime-min/src/platform/freestanding/libc), one archive per cpu:
#   <binary dir>/<cpu>/libkiln_runtime_fs.a
# A program is that archive + the model's `kiln compile --emit=obj` object + linked_model.c
# compiled with the object's header, linked with `-u main` (kiln-run's main is in the
# archive; stories260k_e2e.py links them). Included by
# CMakeLists.txt inside its per-cpu loop: uses kiln_hex_obj, ${cpu}, ${o}, ${_src}, ${_fs},
# and the layer's objects in ${_fs_objs} and ${_fs_libc_objs}.
set(_rt ${_src}/runtime-min)
set(_rt_flags -nostdlibinc -I${_fs}/libc/include -I${_rt}/include -I${_rt}/src)
# The hosted runtime's sources, less the platform files that need an OS (dlopen, pthreads,
# /sys): platform_fs.c and pool_serial.c stand in for them.
set(_rt_srcs ${KILN_RUNTIME_SOURCES} ${KILN_RUNTIME_EXEC_SOURCES}
    ${_fs}/platform_fs.c ${_fs}/pool_serial.c
    ${_rt}/tools/kiln-run/kiln-run.c ${_rt}/tools/kiln-run/run_ppl.c ${_rt}/tools/kiln-run/run_chat.c
    ${_rt}/tools/kiln-run/run_bench.c ${_rt}/tools/kiln-run/bandwidth.c
    ${_rt}/tools/kiln-run/compute_probe.c ${_rt}/tools/kiln-run/probe_threads.c
    ${_rt}/tools/kiln-run/cpu_share.c ${_rt}/tools/kiln-run/huge_pages.c
    ${_rt}/tools/kiln-run/governor_none.c ${_rt}/tools/kiln-run/module_none.c)
list(FILTER _rt_srcs EXCLUDE REGEX "/src/(platform/(posix|code_posix)|exec/pool)\\.c$")
set(_rt_objs)
foreach(s ${_rt_srcs})
  get_filename_component(stem ${s} NAME_WE)
  kiln_hex_obj(${cpu} rt_${stem} ${s} ${_rt_flags} -DKILN_NO_THREADS)
  list(APPEND _rt_objs ${o}/rt_${stem}.o)
endforeach()
# Ed25519 for signed artifacts (runtime-min/cmake/ed25519.cmake); 32-bit: fe_25_5 arithmetic.
foreach(s ${KILN_ED25519_SOURCES})
  get_filename_component(stem ${s} NAME_WE)
  kiln_hex_obj(${cpu} ed_${stem} ${s} ${_rt_flags} ${KILN_ED25519_FLAGS})
  list(APPEND _rt_objs ${o}/ed_${stem}.o)
endforeach()
add_custom_command(OUTPUT ${o}/libkiln_runtime_fs.a
  COMMAND ${CMAKE_COMMAND} -E rm -f ${o}/libkiln_runtime_fs.a
  COMMAND ${KILN_HEX_AR} rcs ${o}/libkiln_runtime_fs.a ${_rt_objs} ${_fs_objs} ${_fs_libc_objs}
  DEPENDS ${_rt_objs} ${_fs_objs} ${_fs_libc_objs}
  COMMENT "Hexagon ${cpu}: libkiln_runtime_fs.a"
  VERBATIM)
list(APPEND _all_elfs ${o}/libkiln_runtime_fs.a)
