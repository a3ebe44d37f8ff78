// The attention explorer's chat mode, with a dropped GGUF that has a chat template
// (tests/fixtures/chat/tiny-chat.gguf: Qwen2.5's template): the rendered prompt is shown with its
// special tokens marked, a turn generates from the whole conversation (every token of it in the
// attention views), the reply joins the conversation, and the next turn reads both turns. A model
// without a template (kjv-gpt2) has no chat mode.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel } from '../../web/src/index.mjs';
import { browserUnavailable, closeDemo, demoMessage, openDemo, repoRoot, screenshot, wasmUnavailable } from './helpers.mjs';

const GGUF = join(repoRoot, 'tests/fixtures/chat/tiny-chat.gguf');
const skip = (await browserUnavailable()) ?? wasmUnavailable() ?? (existsSync(GGUF) ? false : 'tests/fixtures/chat/tiny-chat.gguf is missing');

describe('attention explorer: chat mode', { skip, timeout: 300_000 }, () => {
  let server;
  let browser;
  let page;
  let reference;

  before(async () => {
    reference = await loadModel(GGUF);  // the API in Node: what the page must show
    ({ server, browser, page } = await openDemo({ query: '', viewport: { width: 1280, height: 900 } }));
  });

  after(async () => {
    await reference?.dispose();
    await closeDemo({ server, browser });
  });

  const message = (sel) => demoMessage(page, sel);
  const finished = () => page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status), null, { timeout: 120_000 });

  test('the built-in model (no template) has no chat mode', async () => {
    assert.equal(await page.$eval('#chat', (e) => e.hidden), true);
    assert.equal(await page.$eval('#chat-rendered', (e) => e.hidden), true);
    assert.equal(await page.$eval('#prompt-heading label', (e) => e.textContent), 'Prompt');
  });

  test('a chat model: chat mode on, the rendered prompt shows the special tokens', async () => {
    await page.setInputFiles('#file-input', GGUF);
    await page.waitForFunction(() => !document.body.dataset.loading && window.attnlens.state.model?.name === 'tiny-chat.gguf', null, { timeout: 60_000 });
    assert.equal(await message('#model-message'), '');
    assert.equal(await page.$eval('#chat', (e) => e.hidden), false);
    assert.equal(await page.$eval('#chat-mode', (e) => e.checked), true);
    assert.equal(await page.$eval('#prompt-heading label', (e) => e.textContent), 'Message');
    assert.match(await page.$eval('#model-card', (e) => e.textContent), /Chat template\s*default/);
    await page.fill('#chat-system', 'Be brief.');
    await page.fill('#prompt', 'Hello there');
    const expected = await reference.applyChatTemplate([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }], { addGenerationPrompt: true });
    await page.waitForFunction((t) => document.querySelector('#chat-rendered-text').textContent === t, expected, { timeout: 10_000 });
    const marks = await page.$$eval('#chat-rendered-text mark.special-token', (ms) => ms.map((m) => m.textContent));
    assert.deepEqual(marks, ['<|im_start|>', '<|im_end|>', '<|im_start|>', '<|im_end|>', '<|im_start|>']);
  });

  test('a turn: generated from the whole conversation, every token in the attention; the reply joins it', async () => {
    await page.fill('#temperature', '4');
    await page.fill('#seed', '5');
    await page.fill('#max-tokens', '8');
    await page.click('#generate');
    await finished();
    const conv1 = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }];
    const { ids } = await reference.encodeChat(conv1, { addGenerationPrompt: true });
    const api = await reference.generate(conv1, { temperature: 4, seed: 5, maxNewTokens: 8, topK: await page.$eval('#top-k', (e) => Number(e.value)) });
    const r = await page.evaluate(() => {
      const run = window.attnlens.state.run;
      const n = run.store.queryCount('self');
      const row = run.store.row('self', 0, 0, n - 1);
      return { status: run.status, error: run.error && String(run.error), ids: run.target.ids, pieces: run.target.pieces, promptLength: run.promptLength, text: run.text, n, rowLength: row?.length ?? 0 };
    });
    assert.equal(r.status, 'done', r.error);
    assert.deepEqual(r.ids.slice(0, r.promptLength), ids, 'the page read the conversation as the API renders it');
    assert.deepEqual(r.ids, api.tokens, 'the same tokens as the API with the same settings');
    assert.equal(r.pieces[0], '<|im_start|>');
    assert.equal(r.n, Math.min(r.ids.length, 512), 'a row for every token of the conversation');
    assert.equal(r.rowLength, r.n, 'the last row covers every token');
    // The conversation now holds the user's message and the reply; the prompt box is empty.
    const turns = await page.$$eval('#chat-log .chat-turn', (ts) => ts.map((t) => [t.dataset.role, t.querySelector('.chat-content').textContent]));
    assert.deepEqual(turns, [['user', 'Hello there'], ['assistant', r.text || '∅']]);
    assert.equal(await page.$eval('#prompt', (e) => e.value), '');
    await screenshot(page, 'demo-chat-turn1.png');

    // Second turn: both turns are read.
    await page.fill('#prompt', 'And now?');
    await page.click('#generate');
    await finished();
    const conv2 = [...conv1, { role: 'assistant', content: r.text }, { role: 'user', content: 'And now?' }];
    const two = await reference.encodeChat(conv2, { addGenerationPrompt: true });
    const r2 = await page.evaluate(() => ({ ids: window.attnlens.state.run.target.ids, promptLength: window.attnlens.state.run.promptLength, status: window.attnlens.state.run.status }));
    assert.equal(r2.status, 'done');
    assert.deepEqual(r2.ids.slice(0, r2.promptLength), two.ids);
    assert.equal(await page.$$eval('#chat-log .chat-turn', (ts) => ts.length), 4);
    await screenshot(page, 'demo-chat-turn2.png');

    // New chat clears it; chat mode off continues plain text.
    await page.click('#chat-new');
    assert.equal(await page.$$eval('#chat-log .chat-turn', (ts) => ts.length), 0);
    await page.uncheck('#chat-mode');
    assert.equal(await page.$eval('#chat-rendered', (e) => e.hidden), true);
    assert.equal(await page.$eval('#prompt-heading label', (e) => e.textContent), 'Prompt');
    await page.fill('#prompt', 'Hello');
    await page.click('#generate');
    await finished();
    const plain = await page.evaluate(() => ({ ids: window.attnlens.state.run.target.ids, promptLength: window.attnlens.state.run.promptLength }));
    assert.deepEqual(plain.ids.slice(0, plain.promptLength), (await reference.encodePrompt('Hello')).ids);
  });

  test('an HF folder dropped with a tokenizer_config.json of two named templates: the template is a choice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attnlens-chat-drop-'));
    try {
      const kjv = join(repoRoot, 'models/kjv-gpt2');
      for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) copyFileSync(join(kjv, f), join(dir, f));
      const config = { eos_token: '<|endoftext|>', chat_template: [
        { name: 'default', template: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}' },
        { name: 'tool_use', template: '{{ eos_token }}TOOLS{% for m in messages %} {{ m.content }}{% endfor %}' }] };
      writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
      const files = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'].map((f) => join(dir, f));
      await page.setInputFiles('#file-input', files);
      await page.waitForFunction(() => !document.body.dataset.loading && window.attnlens.state.model?.name === 'model.safetensors', null, { timeout: 60_000 });
      assert.equal(await message('#model-message'), '');
      assert.equal(await page.$eval('#chat', (e) => e.hidden), false);
      assert.equal(await page.$eval('#chat-template', (e) => e.hidden), false);
      assert.deepEqual(await page.$$eval('#chat-template option', (os) => os.map((o) => o.value)), ['default', 'tool_use']);
      await page.fill('#chat-system', '');
      await page.fill('#prompt', 'And God said');
      await page.waitForFunction(() => document.querySelector('#chat-rendered-text').textContent === 'user: And God said\nassistant:', null, { timeout: 10_000 });
      await page.selectOption('#chat-template', 'tool_use');
      await page.waitForFunction(() => document.querySelector('#chat-rendered-text').textContent === '<|endoftext|>TOOLS And God said', null, { timeout: 10_000 });
      assert.deepEqual(await page.$$eval('#chat-rendered-text mark.special-token', (ms) => ms.map((m) => m.textContent)), ['<|endoftext|>']);
      await page.fill('#max-tokens', '4');
      await page.click('#generate');
      await finished();
      const r = await page.evaluate(() => ({ ids: window.attnlens.state.run.target.ids, promptLength: window.attnlens.state.run.promptLength, status: window.attnlens.state.run.status }));
      assert.equal(r.status, 'done');
      assert.equal(r.ids[0], 2047);  // <|endoftext|>, written by the tool_use template
      const api = await loadModel(files);  // the same files through the API in Node
      try {
        const enc = await api.encodeChat([{ role: 'user', content: 'And God said' }], { addGenerationPrompt: true, templateName: 'tool_use' });
        assert.deepEqual(r.ids.slice(0, r.promptLength), enc.ids);
      } finally {
        await api.dispose();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('no page errors', () => {
    assert.deepEqual(browser.errors, []);
  });
});
