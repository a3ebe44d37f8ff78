# Run after linking the wasm module (cmake -DGLUE=dist/wasm/attnlens[-mt].mjs -P cmake/patch_glue.cmake).
# Emscripten 3.1.6's JS glue turns a pointer into an array index with a SIGNED shift (`p >> 2`) in
# Embind's decodeMemoryView(handle) (the descriptor of a typed_memory_view), which breaks for addresses
# over 2 GiB — and our heap may pass 2 GiB (one model file may be larger than that: bindings/files.cpp).
# It becomes an unsigned shift (`>>> 2`), as the rest of the glue already does with MAXIMUM_MEMORY=4GB.
# (With -fexceptions the glue also kept the C++ exception refcount this way; with -fwasm-exceptions,
# CMakeLists.txt, that lives in the wasm.)
# A glue without the expected text (another Emscripten) stops the build, so this is never silently moot.
file(READ "${GLUE}" js)
set(fixes "handle=handle>>2")
foreach(old IN LISTS fixes)
  string(REPLACE ">>2" ">>>2" new "${old}")
  string(FIND "${js}" "${old}" at)
  string(FIND "${js}" "${new}" done)
  if(at EQUAL -1 AND done EQUAL -1)
    message(FATAL_ERROR "patch_glue.cmake: '${old}' not found in ${GLUE} (another Emscripten version? see cmake/patch_glue.cmake)")
  endif()
  string(REPLACE "${old}" "${new}" js "${js}")
endforeach()
file(WRITE "${GLUE}" "${js}")
