# Kernel micro-benchmarks (bench/kernels.mjs runs them). Included at the end of the top-level
# CMakeLists.txt:   include(bench/CMakeLists.kernels.cmake)
#
#   bench_kernels         bench/kernels/bench_kernels.cpp linked with attnlens_kernels only (not the
#                         runtime), so it builds while the upper layers are mid-edit. Native: -march=native
#                         xsimd; wasm: SIMD128 (xsimd's sse4.1 arch mapped by emscripten).
#   bench_kernels_relaxed (wasm with ATTNLENS_WASM_RELAXED) the same source on the relaxed-SIMD kernels
#                         (CMakeLists.txt), run by Node with --experimental-wasm-relaxed-simd.
#   bench_kernels_scalar  (wasm only) the same source with ATTNLENS_BENCH_SCALAR, compiled with the scalar
#                         references and core WITHOUT -msimd128: "wasm scalar" is code that cannot use
#                         SIMD, so the SIMD/scalar ratio is not flattered or hidden by auto-vectorisation.
# The source sits in bench/kernels/ so that the bench/*.cpp glob does not make a second target of it.
# bench/kernels.mjs injects this file with -DCMAKE_PROJECT_INCLUDE while the top-level file does not
# include it: then it runs at project() time, before the layers exist, and defers itself to the end
# of the top-level file. Included twice (injected and included), the second time does nothing.
if(NOT TARGET attnlens_kernels AND NOT _kbench_deferred)
  set(_kbench_deferred ON)
  set(_kbench_self ${CMAKE_CURRENT_LIST_FILE})  # deferred arguments are expanded when the call runs
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL include ${_kbench_self})
  return()
endif()
if(TARGET bench_kernels)
  return()
endif()

if(ATTNLENS_BENCH AND TARGET attnlens_kernels)
  set(_kbench_src ${CMAKE_SOURCE_DIR}/bench/kernels/bench_kernels.cpp)
  if(EMSCRIPTEN)
    set(_kbench_link -sENVIRONMENT=node -sEXIT_RUNTIME=1 -sNODERAWFS=1 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB)
    if(ATTNLENS_WASM_THREADS)
      list(APPEND _kbench_link -sPTHREAD_POOL_SIZE=4)
    endif()
  endif()

  add_executable(bench_kernels ${_kbench_src})
  target_link_libraries(bench_kernels PRIVATE attnlens_kernels)
  if(EMSCRIPTEN)
    target_link_options(bench_kernels PRIVATE ${_kbench_link})
  endif()

  if(EMSCRIPTEN AND TARGET attnlens_kernels_relaxed)
    add_executable(bench_kernels_relaxed ${_kbench_src})
    attnlens_on_relaxed_kernels(bench_kernels_relaxed $<TARGET_FILE_DIR:bench_kernels_relaxed>/bench_kernels_relaxed.wasm)
    target_link_libraries(bench_kernels_relaxed PRIVATE attnlens_kernels)
    target_link_options(bench_kernels_relaxed PRIVATE ${_kbench_link})
  endif()

  if(EMSCRIPTEN)
    file(GLOB _kbench_core CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/core/*.cpp)
    add_executable(bench_kernels_scalar ${_kbench_src} ${CMAKE_SOURCE_DIR}/src/kernels/reference.cpp
      ${CMAKE_SOURCE_DIR}/src/kernels/quant_ref.cpp ${_kbench_core})
    target_include_directories(bench_kernels_scalar PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(bench_kernels_scalar PRIVATE deps)  # header-only includes (core/json.h: nlohmann), no flags
    target_compile_definitions(bench_kernels_scalar PRIVATE ATTNLENS_BENCH_SCALAR=1)
    # No SIMD_FLAGS (no -msimd128): clang cannot emit v128 code for these files.
    target_link_options(bench_kernels_scalar PRIVATE ${_kbench_link})
  endif()
endif()
