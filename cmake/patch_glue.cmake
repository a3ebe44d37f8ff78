# Run after linking the wasm module (cmake -DGLUE=dist/wasm/attnlens[-mt].mjs -P cmake/patch_glue.cmake).
# Emscripten 3.1.6's JS glue turns two kinds of pointer into array indices with a SIGNED shift
# (`p >> 2`), which breaks for addresses over 2 GiB — and our heap may pass 2 GiB (one model file may
# be larger than that: bindings/files.cpp):
#  - the pthreads build's C++ exception refcount (`Atomics.add(HEAP32, ptr >> 2, 1)`): a RangeError,
#    which loses the instance, whenever an error is thrown with its exception object above 2 GiB;
#  - Embind's decodeMemoryView(handle) (the descriptor of a typed_memory_view).
# Both become unsigned shifts (`>>> 2`), as the rest of the glue already does with MAXIMUM_MEMORY=4GB.
# A glue without the expected text (another Emscripten) stops the build, so this is never silently moot.
file(READ "${GLUE}" js)
set(fixes "handle=handle>>2")
if(GLUE MATCHES "-mt\\.mjs$")
  list(APPEND fixes "Atomics.add(GROWABLE_HEAP_I32(),this.ptr+0>>2,1)" "Atomics.sub(GROWABLE_HEAP_I32(),this.ptr+0>>2,1)")
endif()
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
