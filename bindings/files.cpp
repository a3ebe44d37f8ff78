// FileSet: a model's files, written by JS directly into wasm memory (one copy, no per-byte calls).
#include <emscripten/bind.h>

#include <cmath>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

val FileSet::add(const std::string& name, double size) {
  return guarded([&] {
    AL_CHECK(std::isfinite(size) && size >= 0 && size <= 4294967295.0, name, ": bad file size ", size);
    auto f = std::make_shared<runtime::File>();
    f->name = name;
    try {
      f->bytes.resize(size_t(size));
    } catch (const std::bad_alloc&) {
      fail(name, ": not enough WebAssembly memory to hold its ", size_t(size), " bytes (the heap stops at 4 GB)");
    }
    uint8_t* data = f->bytes.data();
    files_.push_back(std::move(f));
    return val(typed_memory_view(size_t(size), data));
  });
}

EMSCRIPTEN_BINDINGS(attnlens_files) {
  class_<FileSet>("FileSet").constructor<>().function("add", &FileSet::add).function("count", &FileSet::count);
}

}  // namespace attnlens::bindings
