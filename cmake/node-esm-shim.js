// Emscripten 3.1.6's ES6 glue uses __dirname/require on Node; give them to it. No-op in browsers.
var require, __dirname, __filename;
if (typeof process == 'object' && typeof process.versions == 'object' && typeof process.versions.node == 'string') {
  const { createRequire } = await import('node:module');
  require = createRequire(import.meta.url);
  __filename = require('node:url').fileURLToPath(import.meta.url);
  __dirname = require('node:path').dirname(__filename);
}
