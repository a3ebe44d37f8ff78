#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace attnlens::parallel {

namespace {

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
constexpr bool kHaveThreads = false;  // the single-thread WebAssembly build
#else
constexpr bool kHaveThreads = true;
#endif
constexpr int kMaxThreads = 16;

thread_local int t_threads = 1;       // threads this thread's regions use
thread_local bool t_in_task = false;  // on a worker, or on a caller running its region's tasks

// Spins until done() or for about kSpin; true if done() came true. Regions of one forward pass
// follow each other within microseconds, so a short spin saves the wake-up (tens of µs) without
// holding a core for long when the work stops (between tokens, or for good).
using Clock = std::chrono::steady_clock;
constexpr auto kSpin = std::chrono::microseconds(50);
template <class Pred>
bool spin(Pred done) {
  const auto until = Clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    if (i % 64 == 0 && Clock::now() >= until) return false;
  }
}

class Pool {
 public:
  // Never destroyed: parked workers may still wait on its condition variable at exit.
  static Pool& get() {
    static Pool* pool = new Pool;
    return *pool;
  }

  int size() const { return size_.load(std::memory_order_acquire); }

  int reserve(int n) {
    if (!kHaveThreads) return 1;
    n = std::min(n, kMaxThreads);
    std::lock_guard<std::mutex> lock(grow_);
    const int had = size();
    while (size() < n) {
      const int index = size() - 1;  // workers are 0 … size − 2; the caller is the last thread
      // The epoch now: a region that opens before the new thread first runs is still its to join
      // (it would otherwise take that region's epoch as already seen).
      const uint32_t start = epoch_.load(std::memory_order_acquire);
      try {
        std::thread([this, index, start] { worker(index, start); }).detach();
      } catch (...) {  // std::system_error: no more threads
        break;
      }
      size_.fetch_add(1, std::memory_order_acq_rel);
    }
    // Returns once the workers it started run. A new thread allocates its own thread-local storage
    // as it starts (Emscripten's pthreads): so what the engine holds no longer changes after
    // reserve(), and a failed load that follows gives back exactly what it took
    // (tests/js/limits.test.mjs). A thread that cannot start soon (a pthread whose Worker the
    // caller's thread would first have to load) is waited for once, up to the limit, not by every
    // later call.
    if (size() > had) {
      std::unique_lock<std::mutex> running(m_);
      started_cv_.wait_for(running, std::chrono::seconds(2), [&] { return started_ >= size() - 1; });
    }
    return size();
  }

  // Returns false (nothing run) when another thread's region holds the pool.
  bool run(int n, TaskFn fn, void* context, int threads) {
    std::unique_lock<std::mutex> region(region_, std::try_to_lock);
    if (!region.owns_lock()) return false;
    Job job{fn, context, n, threads - 1};
    uint32_t epoch;
    bool wake;
    {
      std::lock_guard<std::mutex> lock(m_);
      epoch = epoch_.load(std::memory_order_relaxed) + 1;
      job_ = job;
      done_.store(0, std::memory_order_relaxed);
      ticket_.store(uint64_t(epoch) << 32, std::memory_order_relaxed);
      epoch_.store(epoch, std::memory_order_release);
      wake = sleepers_ > 0;
    }
    if (wake) wake_.notify_all();
    t_in_task = true;
    run_tasks(epoch, job, threads - 1);  // the caller's slot: after the workers' 0 … threads − 2
    t_in_task = false;
    // Every task has been taken; wait for the ones still running on workers.
    if (!spin([&] { return done_.load(std::memory_order_acquire) == n; })) {
      std::unique_lock<std::mutex> lock(m_);
      caller_waiting_ = true;
      finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == n; });
      caller_waiting_ = false;
    }
    return true;
  }

 private:
  struct Job {
    TaskFn fn = nullptr;
    void* context = nullptr;
    int n = 0;        // tasks
    int workers = 0;  // workers 0 … workers − 1 take part (the caller always does)
  };

  // Takes tasks of region `epoch` until none is left. The ticket holds the region's epoch beside
  // the next task, so a worker that arrives late can never take a task of a later region.
  void run_tasks(uint32_t epoch, const Job& job, int slot) {
    for (;;) {
      uint64_t t = ticket_.load(std::memory_order_acquire);
      do {
        if (uint32_t(t >> 32) != epoch || int(uint32_t(t)) >= job.n) return;
      } while (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire));
      job.fn(job.context, int(uint32_t(t)), slot);
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.n) {
        std::lock_guard<std::mutex> lock(m_);
        if (caller_waiting_) finished_.notify_one();
      }
    }
  }

  void worker(int index, uint32_t seen) {
    t_in_task = true;  // a task never opens a region of its own
    {
      std::lock_guard<std::mutex> lock(m_);
      ++started_;
    }
    started_cv_.notify_all();
    for (;;) {
      if (!spin([&] { return epoch_.load(std::memory_order_acquire) != seen; })) {
        std::unique_lock<std::mutex> lock(m_);
        ++sleepers_;
        wake_.wait(lock, [&] { return epoch_.load(std::memory_order_relaxed) != seen; });
        --sleepers_;
      }
      Job job;
      {
        std::lock_guard<std::mutex> lock(m_);
        seen = epoch_.load(std::memory_order_relaxed);
        job = job_;
      }
      if (index < job.workers) run_tasks(seen, job, index);
    }
  }

  std::mutex grow_;    // reserve()
  std::mutex region_;  // one region at a time
  std::mutex m_;       // job_, sleepers_, started_, caller_waiting_, and the epoch's changes
  std::condition_variable wake_, finished_, started_cv_;
  std::atomic<int> size_{1};
  Job job_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<uint64_t> ticket_{0};  // (epoch << 32) | next task
  std::atomic<int> done_{0};         // tasks of the current region finished
  int sleepers_ = 0;
  int started_ = 0;  // workers that have begun running
  bool caller_waiting_ = false;
};

void run_here(int n, TaskFn fn, void* context) {
  const bool was = t_in_task;
  t_in_task = true;
  for (int t = 0; t < n; ++t) fn(context, t, 0);
  t_in_task = was;
}

}  // namespace

int max_threads() noexcept { return kHaveThreads ? kMaxThreads : 1; }

int reserve(int n) { return Pool::get().reserve(n); }

int reserved() noexcept { return kHaveThreads ? Pool::get().size() : 1; }

Threads::Threads(int n) noexcept : previous_(t_threads) { t_threads = std::max(1, n); }
Threads::~Threads() { t_threads = previous_; }

int current_threads() noexcept { return std::max(1, std::min(t_threads, reserved())); }

int slots() noexcept { return current_threads(); }

void run(int n_tasks, TaskFn fn, void* context) noexcept {
  if (n_tasks <= 0) return;
  const int threads = t_in_task || n_tasks == 1 ? 1 : current_threads();
  if (threads > 1 && Pool::get().run(n_tasks, fn, context, threads)) return;
  run_here(n_tasks, fn, context);
}

}  // namespace attnlens::parallel
