// Rendering batched per animation frame: views mark themselves dirty as often as data arrives
// (a streamed token, a hover), and each dirty view renders once in the next frame.

const dirty = new Set();
let scheduled = false;
let lastFlush = 0;
let timer = 0;

// While tokens stream in, data-driven redraws are spaced at least this far apart: a few hundred
// chips and canvases repainted 15 times a second look live, and leave the main thread idle most
// of the time. Interaction (hover, keys, clicks) still renders in the very next frame.
const STREAM_INTERVAL_MS = 66;

function flush() {
  scheduled = false;
  lastFlush = performance.now();
  const views = [...dirty];
  dirty.clear();
  for (const v of views) {
    try {
      v.render();
    } catch (e) {
      console.error('render failed', v, e);
    }
  }
}

/** Renders `view` (an object with render()) in the next animation frame, once. */
export function invalidate(view) {
  dirty.add(view);
  if (!scheduled) {
    scheduled = true;
    clearTimeout(timer);
    timer = 0;
    requestAnimationFrame(flush);
  }
}

/** Like invalidate(), for redraws driven by streamed data: at most one per STREAM_INTERVAL_MS. */
export function invalidateSoon(view) {
  dirty.add(view);
  if (scheduled || timer) return;
  const wait = STREAM_INTERVAL_MS - (performance.now() - lastFlush);
  if (wait <= 0) {
    scheduled = true;
    requestAnimationFrame(flush);
  } else {
    timer = setTimeout(() => {
      timer = 0;
      if (!scheduled) {
        scheduled = true;
        requestAnimationFrame(flush);
      }
    }, wait);
  }
}

/** Resolves after the next frame has rendered (tests and exports wait on it). */
export function nextFrame() {
  return new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
}
