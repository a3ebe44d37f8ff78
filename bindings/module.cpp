// Module-level functions: the last error, conversions, version, memory statistics.
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <malloc.h>

#include "bindings/handles.h"
#include "core/parallel.h"
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

val to_array(const std::vector<int>& v) {
  return val::global("Array").call<val>("from", val(typed_memory_view(v.size(), v.data())));
}

val to_array(const std::vector<std::string>& v) {
  val out = val::array();
  for (size_t i = 0; i < v.size(); ++i) out.set(i, v[i]);
  return out;
}

namespace {
// o[key] when o is an object and the field is defined; undefined otherwise.
val field(const val& o, const char* key) {
  if (o.isUndefined() || o.isNull()) return val::undefined();
  AL_CHECK(o.typeOf().as<std::string>() == "object", "options must be an object");
  return o[key];
}
}  // namespace

double number_field(const val& o, const char* key, double fallback) {
  const val v = field(o, key);
  if (v.isUndefined()) return fallback;
  AL_CHECK(v.typeOf().as<std::string>() == "number", "option ", key, " must be a number");
  return v.as<double>();
}

bool bool_field(const val& o, const char* key, bool fallback) {
  const val v = field(o, key);
  if (v.isUndefined()) return fallback;
  AL_CHECK(v.typeOf().as<std::string>() == "boolean", "option ", key, " must be true or false");
  return v.as<bool>();
}

std::string utf8(const val& s, const char* what) {
  AL_CHECK(s.isString(), what, " must be a string");
  static const val encoder = val::global("TextEncoder").new_();
  const val bytes = encoder.call<val>("encode", s);
  std::string out(bytes["length"].as<size_t>(), '\0');
  if (!out.empty())
    val(emscripten::typed_memory_view(out.size(), reinterpret_cast<unsigned char*>(out.data()))).call<void>("set", bytes);
  return out;
}

std::vector<std::string> strings_field(const val& o, const char* key) {
  const val v = field(o, key);
  std::vector<std::string> out;
  if (v.isUndefined()) return out;
  AL_CHECK(v.isArray(), "option ", key, " must be an array of strings");
  const int n = v["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    const val s = v[i];
    AL_CHECK(s.isString(), "option ", key, "[", i, "] must be a string");
    out.push_back(utf8(s, key));
  }
  return out;
}

std::vector<std::vector<int>> int_lists_field(const val& o, const char* key) {
  const val v = field(o, key);
  std::vector<std::vector<int>> out;
  if (v.isUndefined()) return out;
  AL_CHECK(v.isArray(), "option ", key, " must be an array of arrays of token ids");
  const int n = v["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    const val inner = v[i];
    AL_CHECK(inner.isArray(), "option ", key, "[", i, "] must be an array of token ids");
    out.push_back(to_ints(inner, key));
  }
  return out;
}

val json_to_val(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      val o = val::object();
      for (auto it = j.begin(); it != j.end(); ++it) o.set(it.key(), json_to_val(it.value()));
      return o;
    }
    case nlohmann::json::value_t::array: {
      val a = val::array();
      for (size_t i = 0; i < j.size(); ++i) a.set(i, json_to_val(j[i]));
      return a;
    }
    case nlohmann::json::value_t::string: return val(j.get<std::string>());
    case nlohmann::json::value_t::boolean: return val(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return val(j.get<double>());
    default: return val::null();
  }
}

// mallinfo's fields are int: past 2 GiB in use they wrap negative; the byte count is their unsigned value.
static double bytes_in_use() { return double(unsigned(mallinfo().uordblks)); }

void require_memory(double bytes, const std::string& what) {
  const double used = bytes_in_use(), limit = double(emscripten_get_heap_max());
  const double left = limit > used ? limit - used : 0;
  auto mb = [](double b) { return std::to_string(int64_t(b / 1e6 + 0.5)) + " MB"; };
  AL_CHECK(bytes <= left, what, ": ", mb(bytes), " (", int64_t(bytes), " bytes) of WebAssembly memory needed, but only ",
           mb(left), " more fit: the WebAssembly heap stops at ", mb(limit), " (", int64_t(limit), " bytes) and ", mb(used),
           " are in use");
}

// Bytes the engine has allocated (in use) and the size of the wasm heap (which never shrinks).
val memory_stats() {
  val o = val::object();
  o.set("allocatedBytes", bytes_in_use());
  o.set("heapBytes", double(emscripten_get_heap_size()));
  o.set("heapMaxBytes", double(emscripten_get_heap_max()));
  return o;
}

std::string simd_arch() { return kernels::simd_arch_name(); }

// Makes the engine trap on purpose, so that tests/js/trap.test.mjs can check that the JS boundary
// recovers from a trap (web/src/wasm.mjs). kind: "unreachable" (a wasm trap), "memory" (a read past
// the end of the wasm memory), "stack" (unbounded recursion: the JS engine's stack overflows).
// Nothing in the engine calls it; no input can reach it.
volatile int g_debug_salt = 1;
__attribute__((noinline)) int recurse(int depth) {
  if (g_debug_salt == 0) return depth;
  return recurse(depth + 1) ^ (depth * g_debug_salt);
}
int debug_trap(const std::string& kind) {
  if (kind == "unreachable") __builtin_trap();
  if (kind == "memory") return *reinterpret_cast<volatile int*>(uintptr_t(0xFFFFFFF0u));
  if (kind == "stack") return recurse(0);
  return 0;
}

// Threads: what this module can run (1 for the single-thread build), and starting the pool's
// workers (web/src/wasm.mjs loads the pthread workers first, then calls this).
int max_threads() { return parallel::max_threads(); }
int reserve_threads(int n) { return parallel::reserve(n); }

// The C++ ABI's per-thread exception state (Itanium C++ ABI 2.2.2). In the pthreads build libc++abi
// allocates it (16 bytes) at the thread's first throw and keeps it until the thread ends: allocated
// here, at start, so that the first failed call does not seem to keep memory (tests/js/limits.test.mjs).
extern "C" void* __cxa_get_globals();

EMSCRIPTEN_BINDINGS(attnlens_module) {
  __cxa_get_globals();
  function("memoryStats", &memory_stats);
  function("requireMemory", +[](double bytes, const std::string& what) { guarded([&] { require_memory(bytes, what); }); });
  function("simdArch", &simd_arch);
  function("debugTrap", &debug_trap);
  function("maxThreads", &max_threads);
  function("reserveThreads", &reserve_threads);
  function("failed", &failed);
  function("takeError", &take_error);
}

}  // namespace attnlens::bindings
