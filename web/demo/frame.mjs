// Rendering batched per animation frame: views mark themselves dirty as often as data arrives
// (a streamed token, a hover), and each dirty view renders once in the next frame.

const dirty = new Set();
let scheduled = false;

function flush() {
  scheduled = false;
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
    requestAnimationFrame(flush);
  }
}

/** Resolves after the next frame has rendered (tests and exports wait on it). */
export function nextFrame() {
  return new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
}
