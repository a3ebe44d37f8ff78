// Linked into every executable of the pthreads build (CMakeLists.txt) when the compiler is clang 14:
// the unwinder half of WebAssembly exception handling (-fwasm-exceptions), in place of the one in
// Emscripten's libunwind-mt-except.a.
//
// Why: before a catch clause runs, code compiled with -fwasm-exceptions stores its landing pad's
// index and LSDA in the global `__wasm_lpad_context`, calls _Unwind_CallPersonality, and reads back the
// selector that says which catch clause matches. Clang 14 (Debian's, behind Emscripten 3.1.6)
// addresses that global as plain memory; Emscripten 3.1.6's pthreads libunwind defines it
// thread_local (as clang 15 and later address it). So the personality routine reads an empty
// context, finds no typed handler, and only `catch (...)` still catches: bindings/handles.h could
// not read an error's message. Defined here as plain memory, both sides meet again.
//
// Thread safety: plain memory is shared by all threads, so two threads must not unwind at the same
// time. In this engine only the thread that calls into the module throws: pool tasks are noexcept
// (src/core/parallel.h). tests/cpp/test_core_parallel.cpp checks typed catches in this build.
//
// The interface is the Itanium C++ ABI's unwinder (_Unwind_*) as specialized for WebAssembly, where
// there is one phase (no search phase) and the "IP" is a landing pad index.
#include <cstdint>

namespace {
struct UnwindException {  // the header of every thrown object (the ABI's _Unwind_Exception)
  uint64_t exception_class;
  void (*exception_cleanup)(int reason, UnwindException* exception);
};
struct LandingPadContext {
  uintptr_t lpad_index;  // in: written by the compiled landing pad
  uintptr_t lsda;        // in: its language-specific data area (the catch clauses' types)
  uintptr_t selector;    // out: which clause matches (0: none, cleanups only)
};
constexpr int kCleanupPhase = 2;           // _UA_CLEANUP_PHASE
constexpr int kForeignExceptionCaught = 1; // _URC_FOREIGN_EXCEPTION_CAUGHT
}  // namespace

extern "C" {
LandingPadContext __wasm_lpad_context;

int __gxx_personality_wasm0(int version, int actions, uint64_t exception_class, UnwindException* exception,
                            void* context);

int _Unwind_CallPersonality(void* thrown) {
  auto* exception = static_cast<UnwindException*>(thrown);
  __wasm_lpad_context.selector = 0;
  return __gxx_personality_wasm0(1, kCleanupPhase, exception->exception_class, exception, &__wasm_lpad_context);
}

int _Unwind_RaiseException(UnwindException* exception) {
  __builtin_wasm_throw(0, exception);  // tag 0: C++ exceptions
}

void _Unwind_DeleteException(UnwindException* exception) {
  if (exception->exception_cleanup) exception->exception_cleanup(kForeignExceptionCaught, exception);
}

// The personality routine reports the selector through register 1 and reads the rest back.
void _Unwind_SetGR(void* context, int index, uintptr_t value) {
  if (index == 1) static_cast<LandingPadContext*>(context)->selector = value;
}
// The personality routine subtracts 1 and then treats the result as a 1-based call-site index.
uintptr_t _Unwind_GetIP(void* context) { return static_cast<LandingPadContext*>(context)->lpad_index + 2; }
void _Unwind_SetIP(void*, uintptr_t) {}
uintptr_t _Unwind_GetLanguageSpecificData(void* context) { return static_cast<LandingPadContext*>(context)->lsda; }
uintptr_t _Unwind_GetRegionStart(void*) { return 0; }
}
