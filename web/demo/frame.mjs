// Rendering batched per animation frame: views mark themselves dirty as often as data arrives
// (a streamed token, a hover), and each dirty view renders once in a coming frame.
//
// Two kinds of redraw:
// - invalidate(view): interaction (hover, keys, clicks) or a new model/run; every such view renders
//   in the very next frame, so what the user points at updates everywhere at once.
// - invalidateSoon(view): new data while tokens stream in. These redraws go in cycles. A cycle draws
//   the views that asked together in one frame, while their script stays under FRAME_SCRIPT_MS (a
//   costlier cycle goes on in the next frames): the browser's fixed work per frame — starting it,
//   committing it, layerizing, scheduling its raster, compositing — is paid once a cycle, not once a
//   view (drawn one view per frame, the page's work beside the engine's threads
//   took ~20% more CPU on 2 cores, bench/README.md). The next cycle starts no sooner than 32 × what
//   the last one cost after the last one started (at least 125 ms, at most 250 ms): drawing takes at
//   most a thirty-second of the main thread while a cycle costs under ~8 ms (a costlier one takes a
//   larger share, the interval being capped), and so little of the cores the engine's threads share
//   with it, while the views still update 4–8 times a second. (The browser's raster and compositing
//   of a redraw cost the engine more than the main thread's part that is measured here: on 2 cores,
//   a cycle every ≥ 66 ms and 16 × cost left the page at 75–84% of Node's rate, every ≥ 125 ms and
//   32 × cost at 91–99%; bench/browser.mjs --only stream, bench/README.md.) A run's views, their
//   first drawing of it included, wait one interval after it starts (startRun).
//   The cycle after a run (the one invalidateSettled waits for) draws one view a frame: it draws
//   the most (a short run's every token, every row's paint), and its views in one frame made main-
//   thread tasks of 50-69 ms of CPU (the e2e long-task check, traced; one view a frame: 15-25 ms).
//
// A view reads the layout in measure(), called for every view that may draw in a frame before any of
// them renders: render() only writes (a read after another view's changes in the same frame would
// force a layout).
//
// A view whose render() returns true has more to draw (the token view builds and paints at most a
// few dozen rows a frame): it renders again in the next frame, until it returns false, so no
// frame's task grows with the length of a run. What waits for a finished drawing — a run's final
// status (invalidateSettled), drawn() — waits for those views too.

const dirty = new Set();     // render in the next frame
let cycle = new Set();       // streamed redraws of the running cycle (in its next frames, FRAME_SCRIPT_MS a frame)
let pending = new Set();     // streamed redraws for the next cycle
const settled = new Set();   // render once no streamed redraw is left
let scheduled = false;
let timer = 0;
let open = false;            // a cycle is running (until its last frame has been measured)
let ending = false;          // its last view is drawn: the frame's cost is being measured
let cycleStart = 0;
let cycleCost = 0;           // ms: the cycle's frames, from their start to the task after them
let nextCycleAt = 0;
let interval = 0;            // ms between the last cycle's start and the next one's (0 before the first)
const unfinished = new Set();  // views whose last render() said it had more to draw
let waiters = [];            // drawn()'s promises
let starting = false;        // inside startRun(): invalidate() waits for the run's first cycle

const MIN_INTERVAL_MS = 125;
const MAX_INTERVAL_MS = 250;
const COST_SHARE = 32;       // a cycle every ≥ 32 × its cost
const FRAME_SCRIPT_MS = 4;   // a cycle's views draw in one frame until their script has taken this long

function measure(v) {
  try {
    v.measure?.();
  } catch (e) {
    console.error('measure failed', v, e);
  }
}

// Renders v; true when it has more to draw (it stays in `unfinished` until it has drawn all).
function render(v) {
  let more = false;
  try {
    more = v.render() === true;
  } catch (e) {
    console.error('render failed', v, e);
  }
  if (more) unfinished.add(v);
  else unfinished.delete(v);
  return more;
}

function frame() {
  scheduled = false;
  const t0 = performance.now();
  const views = [...dirty];
  dirty.clear();
  for (const v of views) {
    cycle.delete(v);
    pending.delete(v);
  }
  // the cycle's views, in this frame as far as FRAME_SCRIPT_MS goes; one with more to draw goes again
  const streamed = open && !ending ? [...cycle] : [];
  // every view that draws in this frame reads the layout first, before any of them changes the DOM
  for (const v of [...views, ...streamed]) measure(v);
  for (const v of views) if (render(v)) dirty.add(v);
  if (dirty.size) schedule();
  if (open && !ending) {
    // once one has drawn and the frame's script has run FRAME_SCRIPT_MS, the others go in the next;
    // the cycle after a run (invalidateSettled waits for it) draws one view a frame
    cycle.clear();
    const budget = settled.size ? 0 : FRAME_SCRIPT_MS;
    let drew = false;
    for (const v of streamed) {
      if (drew && performance.now() - t0 > budget) cycle.add(v);
      else if (render(v)) cycle.add(v);
      drew ||= v.visible !== false;
    }
    // this frame's cost: its rendering included, up to the first task after it; the cycle ends
    // once, after its last frame (frames drawn meanwhile for interaction leave it alone)
    const last = !cycle.size;
    if (last) ending = true;
    setTimeout(() => {
      cycleCost += performance.now() - t0;
      if (last) endCycle();
    }, 0);
    if (!last) schedule();
  }
  if (!open || !cycle.size) drawSettled();
  if (!dirty.size && !unfinished.size && waiters.length) {
    const done = waiters;
    waiters = [];
    setTimeout(() => done.forEach((r) => r()), 0);  // once this frame is on screen
  }
}

function drawSettled() {
  if (cycle.size || pending.size || unfinished.size || !settled.size) return;
  const views = [...settled];
  settled.clear();
  for (const v of views) render(v);
}

function endCycle() {
  open = false;
  ending = false;
  interval = Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, COST_SHARE * cycleCost));
  nextCycleAt = settled.size ? 0 : cycleStart + interval;  // the run is over: no waiting
  cycleCost = 0;
  startCycle();
  if (!open && settled.size) schedule();
}

// Starts the next cycle when it is due (or sets a timer for then).
function startCycle() {
  if (open || timer || !pending.size) return;
  const wait = nextCycleAt - performance.now();
  if (wait > 0) {
    timer = setTimeout(() => {
      timer = 0;
      startCycle();
    }, wait);
    return;
  }
  cycle = pending;
  pending = new Set();
  open = true;
  cycleStart = performance.now();
  schedule();
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(frame);
}

/** Renders `view` (an object with render()) in the next animation frame, once. */
export function invalidate(view) {
  if (starting) return invalidateSoon(view);
  dirty.add(view);
  schedule();
}

/** Like invalidate(), for redraws driven by streamed data (see above). */
export function invalidateSoon(view) {
  if (dirty.has(view) || cycle.has(view)) return;
  pending.add(view);
  startCycle();
}

/**
 * A run starts: update(), which gives the page the new run, has every redraw it asks for wait for
 * the run's first cycle, one interval away, as after a cycle (the last one's, or the shortest before
 * any). A run that ends sooner is drawn once, when it ends: a 100-token kjv-gpt2 run takes ~0.1 s.
 * Drawn at once, the views cleared and drawn with the prompt (and a reset of the focused query
 * before it, the previous run drawn again) took 23-58 ms of the main thread's CPU in the run's
 * decoding (kjv-gpt2, 58-149 ms); deferred, 12-19 ms, and the engine in the page ran 15-20% faster
 * (traced, and alternated in one page, bench/README.md).
 */
export function startRun(update) {
  nextCycleAt = performance.now() + (interval || MIN_INTERVAL_MS);
  starting = true;
  try {
    update();
  } finally {
    starting = false;
  }
}

/**
 * Renders `view` once every streamed redraw asked for so far is drawn, without waiting for the next
 * cycle's turn: what announces that a run is over shows only once every view has drawn it.
 */
export function invalidateSettled(view) {
  settled.add(view);
  nextCycleAt = 0;
  if (timer) {
    clearTimeout(timer);
    timer = 0;
  }
  startCycle();
  schedule();
}

/**
 * Resolves after a frame that left every view asked to redraw (invalidate) fully drawn, the views
 * that draw over several frames included — what a script waits for before it reads the page.
 * Streamed redraws still waiting for their cycle are not waited for.
 */
export function drawn() {
  return new Promise((r) => {
    waiters.push(r);
    schedule();
  });
}

/**
 * Resolves once the page has painted a frame (at most `timeoutMs` later: a hidden page paints none).
 * A run starts after it: the frame that shows the page's "starting" state restyles and repaints much
 * of the page (~6 ms of the main thread on 2 cores, traced), and drawn while the first tokens decode
 * it took a core from the engine's threads (bench/README.md).
 */
export function painted({ timeoutMs = 100 } = {}) {
  if (document.hidden) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    // a task queued from the frame's callbacks runs after that frame's paint
    requestAnimationFrame(() => setTimeout(() => {
      clearTimeout(timer);
      resolve();
    }, 0));
  });
}
