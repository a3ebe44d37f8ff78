#!/usr/bin/env node
// What the demo's main thread does while a run decodes: a Chromium trace of N demo runs (Generate
// clicked, every view drawn) alternated with N runs of the same generation through the API on the
// demo's own model (its worker, nothing drawn), in one page. Each run's window goes from its first
// streamed step to its last (marked with console.timeStamp by a wrapper around the model's stream());
// the main thread's top-level tasks are summed inside the windows. On a machine with as many cores as
// the engine has threads, every millisecond of it is taken from the engine (bench/README.md,
// "Streaming in the demo page beside Node"). Rates are printed for reference only: DevTools is
// attached for the trace, and the rows of record are bench/browser.mjs --only stream.
// A benchmark, not a test: nothing fails.
//   node bench/demo-trace.mjs [--model NAME] [--runs N] [--tokens N] [--warm N]
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { CHROMIUM, CHROMIUM_ARGS, browserUnavailable, startServer } = await import('../tests/e2e/helpers.mjs');
const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const MODEL = arg('model', 'kjv-gpt2');
const RUNS = Number(arg('runs', 10));
const TOKENS = Number(arg('tokens', 100));
const WARM = Number(arg('warm', 15));

const why = await browserUnavailable();
if (why) {
  console.log(`demo trace skipped: ${why}`);
  process.exit(0);
}
const { chromium } = await import('playwright-core');
const server = await startServer({ port: 0 });
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
const tracePath = join(tmpdir(), `attnlens-demo-trace-${process.pid}.json`);
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${server.url}/web/demo/?model=${encodeURIComponent(MODEL)}`);
  await page.waitForFunction(() => window.attnlens?.state.model && !document.querySelector('#generate').disabled, null, { timeout: 300_000 });
  // every stream of the model marks its first and last step, labelled with the run's mode
  await page.evaluate(() => {
    const api = window.attnlens.state.model.api;
    const stream = api.stream;
    api.stream = function (...args) {
      const s = stream.apply(this, args);
      const iterate = s[Symbol.asyncIterator].bind(s);
      s[Symbol.asyncIterator] = () => {
        const it = iterate();
        let first = true;
        return {
          async next(...x) {
            const r = await it.next(...x);
            if (first && !r.done) console.timeStamp(`attnlens:first:${window.__traceMode}`);
            first = false;
            if (r.done) console.timeStamp(`attnlens:end:${window.__traceMode}`);
            return r;
          },
          return: (v) => (it.return ? it.return(v) : Promise.resolve({ done: true, value: v })),
          [Symbol.asyncIterator]() { return this; },
        };
      };
      return s;
    };
  });
  const settings = { prompt: 'And God said', tokens: TOKENS };
  // a demo run through its controls; a field is set only when its value changes, as a user
  // re-running does (bench/browser.mjs says why)
  const fields = { '#prompt': settings.prompt, '#max-tokens': String(TOKENS), '#seed': '1', '#temperature': '0.8', '#top-k': '40', '#top-p': '1' };
  const demoRun = async () => {
    await page.evaluate(() => { window.__traceMode = 'demo'; });
    for (const [sel, value] of Object.entries(fields)) if ((await page.inputValue(sel)) !== value) await page.fill(sel, value);
    // clicked and polled without frames of their own (page.click moves a mouse over the page,
    // waitForFunction polls on requestAnimationFrame by default)
    await page.evaluate(() => document.querySelector('#generate').click());
    await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status), null, { polling: 100, timeout: 120_000 });
    return page.evaluate(() => window.attnlens.state.run.stats.engineTokensPerSecond);
  };
  const apiRun = () => page.evaluate(async ({ prompt, tokens }) => {
    window.__traceMode = 'api';
    const api = window.attnlens.state.model.api;
    const { ids } = await api.encodePrompt(prompt);
    const s = api.stream(ids, { attentions: true, predictions: 5, maxNewTokens: tokens, temperature: 0.8, topK: 40, topP: 1, seed: 1 });
    for await (const step of s) void step;
    await new Promise((r) => setTimeout(r, 300));  // as long as the demo's run takes to settle
    return s.result.timings.tokensPerSecond;
  }, settings);
  for (let i = 0; i < WARM; i++) {
    await demoRun();
    await apiRun();
  }
  await browser.startTracing(page, { path: tracePath, categories: ['devtools.timeline', 'toplevel', 'blink'] });
  const rates = { demo: [], api: [] };
  for (let i = 0; i < RUNS; i++) {
    rates.demo.push(await demoRun());
    rates.api.push(await apiRun());
  }
  await browser.stopTracing();
  report(JSON.parse(readFileSync(tracePath, 'utf8')).traceEvents, rates);
} finally {
  await browser.close();
  await server.close();
  rmSync(tracePath, { force: true });
}

function report(events, rates) {
  const marks = events.filter((e) => e.name === 'TimeStamp' && e.args?.data?.message?.startsWith('attnlens:'));
  if (!marks.length) throw new Error('no stream was marked in the trace');
  const main = `${marks[0].pid}:${marks[0].tid}`;
  const windows = { demo: [], api: [] };
  const open = {};
  for (const m of marks) {
    const [, what, mode] = m.args.data.message.split(':');
    if (what === 'first') open[mode] = m.ts;
    else if (open[mode] !== undefined) {
      windows[mode].push([open[mode], m.ts]);
      delete open[mode];
    }
  }
  const onMain = events.filter((e) => e.ph === 'X' && e.dur && `${e.pid}:${e.tid}` === main);
  const overlap = (e, [s, t]) => Math.max(0, Math.min(t, e.ts + e.dur) - Math.max(s, e.ts));
  const sum = (name, ws) => onMain.filter((e) => e.name === name).reduce((a, e) => a + ws.reduce((b, w) => b + overlap(e, w), 0), 0);
  const count = (name, ws) => onMain.filter((e) => e.name === name && ws.some((w) => overlap(e, w) > 0)).length;
  const ms = (us, n) => (us / 1000 / n).toFixed(2);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`\nThe demo's main thread while a run decodes: ${MODEL}, ${TOKENS} tokens, ${RUNS} demo runs alternated with ${RUNS} API runs in one page (after ${WARM} of each untimed); per run, inside its window (first streamed step → last)`);
  console.log('| runs | window ms | main thread busy ms (share) | frames | in frames ms | messages from the worker ms | engine tok/s (DevTools attached) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const mode of ['demo', 'api']) {
    const ws = windows[mode];
    const length = ws.reduce((a, [s, t]) => a + t - s, 0);
    const busy = sum('ThreadControllerImpl::RunTask', ws);
    console.log(`| ${mode === 'demo' ? 'demo (Generate)' : 'API on the demo\'s model'} | ${ms(length, ws.length)} | ${ms(busy, ws.length)} (${((100 * busy) / length).toFixed(0)}%) | ` +
                `${(count('WebFrameWidgetImpl::BeginMainFrame', ws) / ws.length).toFixed(1)} | ${ms(sum('WebFrameWidgetImpl::UpdateLifecycle', ws), ws.length)} | ` +
                `${ms(sum('HandlePostMessage', ws), ws.length)} | ${mean(rates[mode]).toFixed(0)} |`);
  }
}
