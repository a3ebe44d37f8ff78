// FileSet: a model's files, written by JS directly into wasm memory (one copy, no per-byte calls).
#include <emscripten/bind.h>

#include <cmath>
#include <cstdlib>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

namespace {
// Emscripten 3.1.6's malloc (dlmalloc, which never gives memory back: MORECORE_CANNOT_TRIM) asks
// for new memory through sbrk(intptr_t), so a request for 2 GiB or more of NEW memory at once fails
// (and then dlmalloc stops extending its heap contiguously) — but it only asks for what the free
// space at the top of its heap lacks. So before a file over 1 GiB is allocated, the free top is
// grown by half the file's size (a block taken from it and freed joins it again); the file's block
// then needs less than 2 GiB of new memory: one file may pass 2 GiB (up to the 4 GB heap).
void grow_free_top(size_t size) {
  if (size <= (size_t(1) << 30)) return;
  // volatile: the compiler may otherwise drop a malloc whose block is only freed.
  void* volatile block = std::malloc(size / 2);
  std::free(block);  // (if the malloc failed, the file's allocation fails with its own message)
}
}  // namespace

val FileSet::add(const std::string& name, double size) {
  return guarded([&] {
    AL_CHECK(std::isfinite(size) && size >= 0, name, ": bad file size ", size);
    require_memory(size, name);  // the heap's limit, before the allocation (size_t is 32 bits here)
    auto f = std::make_shared<runtime::File>();
    f->name = name;
    try {
      grow_free_top(size_t(size));
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
