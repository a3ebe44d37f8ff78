// Where this code runs. The one `isNode` of the package: Node's main thread or a worker_threads
// worker, not a browser page or Web Worker (even one with a `process` polyfill from a bundler).
export const isNode =
  typeof process === 'object' && typeof process.versions?.node === 'string' &&
  typeof window === 'undefined' && typeof WorkerGlobalScope === 'undefined';

/**
 * import() of a Node built-in by a computed name, so that bundlers neither resolve it nor split a
 * chunk for it: it only ever runs in Node.
 */
export const nodeImport = (name) => import(/* @vite-ignore */ /* webpackIgnore: true */ name);
