// Rendering batched per animation frame: views mark themselves dirty as often as data arrives
// (a streamed token, a hover), and each dirty view renders once in a coming frame.
//
// Two kinds of redraw:
// - invalidate(view): interaction (hover, keys, clicks) or a new model/run; every such view renders
//   in the very next frame, so what the user points at updates everywhere at once.
// - invalidateSoon(view): new data while tokens stream in. These redraws come at most once per
//   STREAM_INTERVAL_MS, and one view per frame: each view's redraw (its DOM changes, then the
//   browser's style, layout and paint of them) is a task of its own, so no single main-thread task
//   grows with the number of views on screen.

const dirty = new Set();     // render in the next frame
const streamed = new Set();  // render one per frame, from the next stream tick on
const settled = new Set();   // render once no streamed redraw is pending
let scheduled = false;
let lastTick = -Infinity;
let timer = 0;

// While tokens stream in, data-driven redraws start at least this far apart: a few hundred chips
// and canvases repainted 15 times a second look live, and leave the main thread idle most of the
// time.
const STREAM_INTERVAL_MS = 66;

function render(v) {
  try {
    v.render();
  } catch (e) {
    console.error('render failed', v, e);
  }
}

function frame() {
  scheduled = false;
  const now = performance.now();
  const views = [...dirty];
  dirty.clear();
  for (const v of views) streamed.delete(v);
  for (const v of views) render(v);
  // one streamed view with something to draw (views off screen return at once and do not count)
  while (streamed.size) {
    const v = streamed.values().next().value;
    streamed.delete(v);
    render(v);
    if (v.visible !== false) break;
  }
  if (!streamed.size && settled.size) {
    const last = [...settled];
    settled.clear();
    for (const v of last) render(v);
  }
  if (streamed.size) schedule();
  else if (!views.length || now - lastTick >= STREAM_INTERVAL_MS) lastTick = now;
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  clearTimeout(timer);
  timer = 0;
  requestAnimationFrame(frame);
}

/** Renders `view` (an object with render()) in the next animation frame, once. */
export function invalidate(view) {
  dirty.add(view);
  schedule();
}

/** Like invalidate(), for redraws driven by streamed data (see above). */
export function invalidateSoon(view) {
  if (dirty.has(view)) return;
  const idle = !streamed.size;
  streamed.add(view);
  if (scheduled || timer || !idle) return;
  const wait = STREAM_INTERVAL_MS - (performance.now() - lastTick);
  if (wait <= 0) {
    lastTick = performance.now();
    schedule();
  } else {
    timer = setTimeout(() => {
      timer = 0;
      lastTick = performance.now();
      schedule();
    }, wait);
  }
}

/**
 * Renders `view` in the frame that draws the last pending streamed redraw (or in the next frame if
 * none is pending): what announces that a run is over shows only once every view has drawn it.
 */
export function invalidateSettled(view) {
  settled.add(view);
  schedule();
}

/** Resolves after the next frame has rendered (tests and exports wait on it). */
export function nextFrame() {
  return new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
}
