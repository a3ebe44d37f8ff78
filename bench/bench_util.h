// What the C++ benchmarks (bench/bench_*.cpp) share: the platform's name, wall and process CPU time
// and a model file read from disk.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#if defined(__EMSCRIPTEN__)
#include <emscripten.h>
#else
#include <ctime>
#endif

#include "runtime/loader.h"

namespace attnlens::bench {

#if defined(__EMSCRIPTEN__)
inline const char* const kPlatform = "wasm";
#else
inline const char* const kPlatform = "native";
#endif

// Wall-clock time in ms (steady).
inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Process CPU time (user + system): on a shared machine other processes take the cores, and the
// wall time then measures them as much as this process; cpu/wall well below 1 says they did.
inline double cpu_ms() {
#if defined(__EMSCRIPTEN__)
  return EM_ASM_DOUBLE({
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  });
#else
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
#endif
}

// The file at `path`, named by its last component (as the loader sees a model's files); exits with
// a message naming `tool` and the path when it cannot be read.
inline runtime::FilePtr read_file(const char* tool, const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) {
    std::fprintf(stderr, "%s: cannot open %s\n", tool, path.c_str());
    std::exit(1);
  }
  auto file = std::make_shared<runtime::File>();
  file->name = path.substr(path.find_last_of('/') + 1);
  file->bytes.allocate(size_t(f.tellg()));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(file->bytes.data()), std::streamsize(file->bytes.size()));
  return file;
}

}  // namespace attnlens::bench
