// Work split over threads: one process-wide pool of worker threads, used by the layers above
// (nn::linear over blocks of matrix rows, attention over heads) through parallel::for_each.
//
//   parallel::reserve(4);                      // start up to 3 workers (the caller is the 4th)
//   parallel::Threads use(2);                  // this thread's regions use 2 threads from now on
//   parallel::for_each(n_tasks, [&](int t) { … task t … });
//
// A region's tasks are fixed by the caller (for example "rows 64·t … 64·t + 63"), never by the
// number of threads, and each task is computed the same way whichever thread runs it: results are
// bitwise identical with 1, 2 or 4 threads. Threads take the next task from a shared counter, so a
// thread that another process slowed down on this shared machine takes fewer.
//
// Waiting never burns a core for long: a worker whose region ended spins for a few tens of
// microseconds (the next region of the same forward pass usually starts by then), then sleeps on a
// condition variable (a futex; Atomics.wait in WebAssembly), and the caller does the same while the
// last tasks finish. In a WebAssembly build without pthreads (and everywhere until reserve() is
// called) every region runs on the calling thread.
#pragma once
#include <type_traits>

namespace attnlens::parallel {

// Threads this build can run at most: 1 in a WebAssembly build without pthreads, else a limit of the pool.
int max_threads() noexcept;

// Starts workers so that regions can use up to n threads (the caller included); returns the number
// now available (less than n if threads cannot be created, e.g. without pthreads). Never shrinks.
// In a browser's pthread build the JS side must have loaded n − 1 pthread workers first
// (web/src/wasm.mjs does), since a worker cannot start while the page's main thread is busy.
int reserve(int n);
int reserved() noexcept;  // threads available now (1 + running workers)

// The number of threads the calling thread's regions use, while this object lives (default 1).
// Clamped to reserved(). Scopes nest; the previous value comes back at the end of the scope.
class Threads {
 public:
  explicit Threads(int n) noexcept;
  ~Threads();
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;

 private:
  int previous_;
};
int current_threads() noexcept;  // what the calling thread's regions use now

// fn(context, task, slot): `slot` (0 … slots() − 1) is the running thread's place in this region, for
// per-thread scratch that the caller allocated before the region (slots() × its size).
using TaskFn = void (*)(void* context, int task, int slot) noexcept;

// Runs fn(context, t, slot) for every t in [0, n_tasks) and returns when all have finished. Tasks
// must not throw (a throw terminates). Runs everything on the calling thread (slot 0) when it uses 1
// thread, when n_tasks is 1, inside a task (no nesting), or while another thread's region holds the pool.
void run(int n_tasks, TaskFn fn, void* context) noexcept;

// Slots a region opened now by the calling thread can use: current_threads().
int slots() noexcept;

template <class F>
void for_each(int n_tasks, F&& f) noexcept {
  using Fn = std::remove_reference_t<F>;
  run(n_tasks, [](void* c, int t, int) noexcept { (*static_cast<Fn*>(c))(t); }, const_cast<void*>(static_cast<const void*>(&f)));
}

// The same with f(task, slot).
template <class F>
void for_each_slot(int n_tasks, F&& f) noexcept {
  using Fn = std::remove_reference_t<F>;
  run(n_tasks, [](void* c, int t, int slot) noexcept { (*static_cast<Fn*>(c))(t, slot); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace attnlens::parallel
