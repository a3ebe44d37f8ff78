// Module-level functions: the last error, conversions, version, memory statistics.
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <malloc.h>

#include "bindings/handles.h"
#include "kernels/kernels.h"

namespace attnlens::bindings {

using namespace emscripten;

std::string& last_error() {
  static std::string message;
  return message;
}

bool failed() { return !last_error().empty(); }

std::string take_error() {
  std::string m;
  m.swap(last_error());
  return m;
}

std::vector<int> to_ints(const val& array, const char* what) {
  const std::string type = array.typeOf().as<std::string>();
  if (type != "object" || !(array.instanceof(val::global("Array")) || array.instanceof(val::global("Int32Array")) ||
                            array.instanceof(val::global("Uint32Array")))) {
    fail(what, " must be an array of integers");
  }
  return convertJSArrayToNumberVector<int>(array);
}

val to_int32_array(const std::vector<int>& v) {
  return val::global("Int32Array").new_(typed_memory_view(v.size(), v.data()));
}

// Bytes the engine has allocated (in use) and the size of the wasm heap (which never shrinks).
val memory_stats() {
  struct mallinfo mi = mallinfo();
  val o = val::object();
  o.set("allocatedBytes", double(mi.uordblks));
  o.set("heapBytes", double(emscripten_get_heap_size()));
  o.set("heapMaxBytes", double(emscripten_get_heap_max()));
  return o;
}

std::string simd_arch() { return kernels::simd_arch_name(); }

EMSCRIPTEN_BINDINGS(attnlens_module) {
  function("memoryStats", &memory_stats);
  function("simdArch", &simd_arch);
  function("failed", &failed);
  function("takeError", &take_error);
}

}  // namespace attnlens::bindings
