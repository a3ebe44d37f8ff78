// FileSet: a model's files, written by JS directly into wasm memory (one copy, no per-byte calls).
#include <emscripten/bind.h>

#include <cmath>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

namespace {
constexpr double kMaxPiece = 2147483647.0 - (1 << 20);  // under INT32_MAX, with room for malloc's own header
}  // namespace

val FileSet::add(const std::string& name, double size) {
  return guarded([&] {
    AL_CHECK(std::isfinite(size) && size >= 0, name, ": bad file size ", size);
    require_memory(size, name);  // the heap's limit, before the allocation (size_t is 32 bits here)
    // Emscripten 3.1.6's malloc takes new memory through sbrk(intptr_t): one piece stops below 2 GiB.
    AL_CHECK(size <= kMaxPiece, name, ": one file of ", int64_t(size / 1e6 + 0.5), " MB (", int64_t(size),
             " bytes) is over the ", int64_t(kMaxPiece), " bytes that WebAssembly's allocator gives one piece of memory "
             "in this build; a model this large has to come as several files (sharded safetensors)");
    auto f = std::make_shared<runtime::File>();
    f->name = name;
    try {
      f->bytes.allocate(size_t(size));  // JS fills every byte
    } catch (const std::bad_alloc&) {
      fail(name, ": not enough WebAssembly memory to hold its ", size_t(size), " bytes (the heap stops at 4 GB)");
    }
    uint8_t* data = f->bytes.data();
    files_.push_back(std::move(f));
    return val(typed_memory_view(size_t(size), data));
  });
}

val FileSet::view(int index) const {
  return guarded([&] {
    AL_CHECK(index >= 0 && index < int(files_.size()), "file index ", index, " out of range (", files_.size(), " files)");
    const runtime::File& f = *files_[size_t(index)];
    return val(typed_memory_view(f.bytes.size(), f.bytes.data()));
  });
}

EMSCRIPTEN_BINDINGS(attnlens_files) {
  class_<FileSet>("FileSet")
      .constructor<>()
      .function("add", &FileSet::add)
      .function("view", &FileSet::view)
      .function("count", &FileSet::count);
}

}  // namespace attnlens::bindings
