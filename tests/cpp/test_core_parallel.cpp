// The thread pool of core/parallel.h: every task runs exactly once, with any number of threads,
// regions nest without deadlock, and work really spreads over the threads it was given.
#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "test_util.h"

using namespace attnlens;

// Catch2 v2 has no SKIP: say why, visibly, and leave the test case.
#define SKIP_TEST(why)            \
  do {                            \
    WARN("SKIPPED: " << (why));   \
    return;                       \
  } while (0)

TEST_CASE("parallel::for_each runs every task once, with 1, 2, 3 and 4 threads", "[core][threads]") {
  const int have = parallel::reserve(4);
  INFO("threads available: " << have << " (max " << parallel::max_threads() << ")");
  if (parallel::max_threads() > 1) REQUIRE(have == 4);
  for (int threads : {1, 2, 3, 4}) {
    parallel::Threads use(threads);
    CHECK(parallel::current_threads() == std::min(threads, have));
    for (int n : {0, 1, 2, 5, 24, 1000}) {
      std::vector<std::atomic<int>> hits(size_t(n > 0 ? n : 1));
      for (auto& h : hits) h = 0;
      for (int rep = 0; rep < 50; ++rep) parallel::for_each(n, [&](int t) noexcept { hits[size_t(t)]++; });
      for (int t = 0; t < n; ++t) REQUIRE(hits[size_t(t)] == 50);
    }
  }
  CHECK(parallel::current_threads() == 1);  // the scopes ended
}

TEST_CASE("parallel: a region inside a task runs on that thread; scopes nest", "[core][threads]") {
  parallel::reserve(4);
  parallel::Threads outer(4);
  {
    parallel::Threads inner(2);
    CHECK(parallel::current_threads() == std::min(2, parallel::reserved()));
  }
  CHECK(parallel::current_threads() == std::min(4, parallel::reserved()));
  std::atomic<int> sum{0};
  parallel::for_each(8, [&](int t) noexcept {
    const auto self = std::this_thread::get_id();
    parallel::for_each(10, [&](int u) noexcept {
      CHECK(std::this_thread::get_id() == self);  // no nesting: the inner region stays on this thread
      sum += t * 10 + u;
    });
  });
  CHECK(sum == 79 * 80 / 2);
}

TEST_CASE("parallel: tasks spread over the threads of the scope", "[core][threads]") {
  if (parallel::max_threads() == 1) SKIP_TEST("this build has no threads (WebAssembly without pthreads)");
  REQUIRE(parallel::reserve(4) == 4);
  for (int threads : {2, 4}) {
    parallel::Threads use(threads);
    std::mutex m;
    std::set<std::thread::id> ids;
    // Each task waits (up to 20 s) until a second thread has taken a task: the region can only end
    // early if a worker really runs tasks next to the caller, however busy the machine is.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    parallel::for_each(16, [&](int) noexcept {
      {
        std::lock_guard<std::mutex> lock(m);
        ids.insert(std::this_thread::get_id());
      }
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(m);
          if (ids.size() >= 2) break;
        }
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    INFO(threads << " threads");
    CHECK(ids.size() >= 2);
    CHECK(int(ids.size()) <= threads);  // never more threads than the scope allows
  }
}

TEST_CASE("parallel: regions from two threads at once both complete", "[core][threads]") {
  if (parallel::max_threads() == 1) SKIP_TEST("this build has no threads (WebAssembly without pthreads)");
  parallel::reserve(4);
  std::atomic<long> total{0};
  auto body = [&] {
    parallel::Threads use(4);
    for (int rep = 0; rep < 200; ++rep) parallel::for_each(16, [&](int t) noexcept { total += t; });
  };
  std::thread other(body);
  body();
  other.join();
  CHECK(total == 2L * 200 * (15 * 16 / 2));
}

// The bindings (bindings/handles.h) read an error's message through `catch (const std::exception&)`.
// Emscripten 3.1.6's pthreads build once caught exceptions only with `catch (...)`
// (cmake/wasm_eh_unwind.cpp): this suite runs in that build too (tools/test.mjs).
[[gnu::noinline]] static void throw_engine_error(int n) {
  if (n == 1) throw Error("bad tensor 'x': expected [2, 3], got [3]");
  if (n == 2) throw Cancelled();
  if (n == 3) throw std::bad_alloc();
}

static std::string catch_by_type(int n) {
  try {
    throw_engine_error(n);
  } catch (const std::bad_alloc&) {
    return "bad_alloc";
  } catch (const Cancelled& e) {
    return std::string("cancelled: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  } catch (...) {
    return "unknown";
  }
  return "none";
}

static void check_typed_catches() {
  CHECK(catch_by_type(0) == "none");
  CHECK(catch_by_type(1) == "exception: bad tensor 'x': expected [2, 3], got [3]");
  CHECK(catch_by_type(2) == "cancelled: cancelled");
  CHECK(catch_by_type(3) == "bad_alloc");
}

TEST_CASE("errors are caught by their type, with their message", "[core][threads]") {
  check_typed_catches();
}

TEST_CASE("errors are caught by their type on another thread too, and after it", "[core][threads]") {
  if (parallel::max_threads() == 1) SKIP_TEST("this build has no threads (WebAssembly without pthreads)");
  std::string on_other_thread;
  std::thread other([&] { on_other_thread = catch_by_type(1) + " | " + catch_by_type(2); });
  other.join();
  CHECK(on_other_thread == "exception: bad tensor 'x': expected [2, 3], got [3] | cancelled: cancelled");
  check_typed_catches();
}
