// Chat: conversations rendered by a model's chat template and generated from, in this thread and in
// a worker; the tokenizer's configuration as model.info shows it; bad input.
//   tiny-chat.gguf (tests/fixtures/chat/make_chat_model.py): Qwen2.5's template in the GGUF, EOS
//     <|im_end|>, end-of-turn <|endoftext|> — the model's weights make <|endoftext|> its greedy choice,
//     so greedy generation ends at once on the end-of-turn token, not on EOS.
//   kjv-gpt2 (models/): no template (the "no chat template" error); with a tokenizer_config.json and
//     a generation_config.json given beside it (an HF folder's chat template, several EOS ids).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel, loadTokenizer } from '../../web/src/index.mjs';
import { kjv, noKjv, reportSkips, root } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

const GGUF = join(root, 'tests/fixtures/chat/tiny-chat.gguf');
const built = existsSync(join(root, 'dist/wasm/attnlens.wasm'));
const noModel = (!built && 'dist/wasm is not built') || (!existsSync(GGUF) && 'tests/fixtures/chat/tiny-chat.gguf is missing');
reportSkips(noModel, noKjv);

const EOT = 275;     // <|endoftext|>: BOS, padding and end-of-turn
const IM_END = 277;  // <|im_end|>: EOS
const conversation = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hello there' },
  { role: 'assistant', content: 'Hi.' },
  { role: 'user', content: 'What is 2+2?' },
];
const RENDERED = '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n' +
  '<|im_start|>assistant\nHi.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n';

const named = (name, text) => ({ name, data: new TextEncoder().encode(text) });
const kjvFiles = ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(kjv.dir, f));

for (const mode of ['thread', 'worker']) {
  describe(`chat (${mode})`, { skip: noModel }, () => {
    let model;
    before(async () => {
      model = await loadModel(GGUF, { worker: mode === 'worker' });
    });
    after(async () => {
      await model?.dispose();
    });

    test('the tokenizer configuration of the GGUF in model.info and promptFormat', () => {
      const t = model.info.tokenizer;
      assert.equal(t.bosToken, '<|endoftext|>');
      assert.equal(t.eosToken, '<|im_end|>');
      assert.equal(t.padToken, '<|endoftext|>');
      assert.equal(t.unkToken, null);
      assert.equal(t.eosId, IM_END);
      assert.equal(t.addBosToken, false);
      assert.equal(t.addEosToken, null);
      assert.equal(t.modelMaxLength, null);
      assert.deepEqual(t.chatTemplates, ['default']);
      assert.match(model.promptFormat.chatTemplates.default, /<\|im_start\|>/);
      // Generation stops on EOS and on the end-of-turn token.
      assert.ok(model.promptFormat.stopTokens.includes(IM_END) && model.promptFormat.stopTokens.includes(EOT));
    });

    test('applyChatTemplate: with and without the generation prompt, tools, a template of the caller', async () => {
      assert.equal(await model.applyChatTemplate(conversation), RENDERED);
      assert.equal(await model.applyChatTemplate(conversation, { addGenerationPrompt: true }), `${RENDERED}<|im_start|>assistant\n`);
      const withTools = await model.applyChatTemplate(conversation.slice(1, 2), {
        tools: [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }] });
      assert.match(withTools, /# Tools[\s\S]*"name": "add"/);
      const own = await model.applyChatTemplate(conversation, {
        template: '{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ suffix }}', variables: { suffix: '!' } });
      assert.equal(own, '<|endoftext|>[system]Be brief.[user]Hello there[assistant]Hi.[user]What is 2+2?!');
    });

    test('encodeChat: the text tokenized without special tokens added, pieces show them', async () => {
      const e = await model.encodeChat(conversation, { addGenerationPrompt: true });
      assert.equal(e.text, `${RENDERED}<|im_start|>assistant\n`);
      assert.deepEqual(e.ids, (await model.tokenize(e.text, { addSpecialTokens: false })).ids);
      assert.equal(e.ids[0], 276);
      assert.equal(e.pieces[0], '<|im_start|>');
      assert.equal(e.pieces.filter((p) => p === '<|im_end|>').length, 4);
      // special: exactly the template's control tokens (4 <|im_start|> + 4 <|im_end|> + the generation prompt's).
      assert.deepEqual(e.ids.filter((_, i) => e.special[i]).sort(), [276, 276, 276, 276, 276, 277, 277, 277, 277]);
      assert.equal(await model.detokenize(e.ids), e.text.replace(/<\|im_start\|>|<\|im_end\|>/g, ''));
    });

    test('generate(messages): the rendered prompt with the generation prompt; stops on the end-of-turn token', async () => {
      const { ids } = await model.encodeChat(conversation, { addGenerationPrompt: true });
      const r = await model.generate(conversation, { maxNewTokens: 20, temperature: 0 });
      assert.deepEqual(r.tokens.slice(0, r.promptTokens), ids);
      assert.equal(r.finishReason, 'eos');
      assert.deepEqual(r.tokens.slice(r.promptTokens), [EOT]);  // not EOS (277): the end-of-turn token
      // Without the generation prompt: the assistant's turn is not opened.
      const open = await model.generate(conversation, { maxNewTokens: 1, temperature: 0, chat: { addGenerationPrompt: false } });
      assert.deepEqual(open.tokens.slice(0, open.promptTokens), (await model.encodeChat(conversation)).ids);
      assert.ok(open.promptTokens < ids.length);
    });

    test('stream(messages) with attention over the whole conversation', async () => {
      const { ids } = await model.encodeChat(conversation, { addGenerationPrompt: true });
      const steps = [];
      const s = model.stream(conversation, { maxNewTokens: 6, temperature: 4, seed: 1, attentions: { layers: [1] } });
      for await (const step of s) steps.push(step);
      const first = steps[0].attentions.layer(1);
      assert.equal(first.queries, ids.length);
      assert.equal(first.keys, ids.length);
      assert.deepEqual(s.result.tokens.slice(0, s.result.promptTokens), ids);
      // Seeded sampling: the same in this thread and in a worker (checked by running it twice here).
      const again = await model.generate(conversation, { maxNewTokens: 6, temperature: 4, seed: 1 });
      assert.deepEqual(again.tokens, s.result.tokens);
    });

    test('bad input: malformed messages name the index; template errors carry the template\'s message', async () => {
      await assert.rejects(model.generate([{ content: 'x' }]), { name: 'TypeError', message: /messages\[0\]\.role must be a non-empty string/ });
      await assert.rejects(model.generate([{ role: 'user', content: 'a' }, { role: 'user' }]),
        { name: 'TypeError', message: /messages\[1\]\.content is missing/ });
      await assert.rejects(model.applyChatTemplate([{ role: 'user', content: 'a' }, 'b']), { name: 'TypeError', message: /messages\[1\] must be a \{ role, content \} object, got string/ });
      await assert.rejects(model.applyChatTemplate([{ role: 'user', content: 5 }]), { name: 'TypeError', message: /messages\[0\]\.content must be a string or an array of content parts, got number/ });
      await assert.rejects(model.applyChatTemplate([]), { name: 'RangeError', message: /messages is empty/ });
      await assert.rejects(model.applyChatTemplate('hi'), { name: 'TypeError', message: /messages must be an array/ });
      await assert.rejects(model.generate('hi', { chat: { addGenerationPrompt: true } }), { name: 'TypeError', message: /chat options apply to a prompt given as/ });
      await assert.rejects(model.applyChatTemplate(conversation, { templateName: 'tool_use' }),
        { name: 'RangeError', message: /has no chat template "tool_use" \(it has: default\)/ });
      await assert.rejects(model.applyChatTemplate(conversation, { addGenerationPrompt: 'yes' }), { name: 'TypeError', message: /addGenerationPrompt must be true or false/ });
      await assert.rejects(model.applyChatTemplate(conversation, { template: '{{ raise_exception("Only user turns, please") }}' }),
        (e) => e.name === 'Error' && e.message.endsWith(': Only user turns, please') && /chat template "options.template"/.test(e.message));
      await assert.rejects(model.applyChatTemplate(conversation, { template: '{% for m in messages %}' }), { message: /cannot be parsed/ });
      // The model is still usable afterwards.
      assert.equal(await model.applyChatTemplate(conversation), RENDERED);
    });
  });
}

describe('chat: models without a template, HF folders, tokenizers alone', { skip: noModel || noKjv }, () => {
  test('a model without a chat template given messages: an error naming the model and suggesting a plain prompt', async () => {
    const m = await loadModel(kjv.dir);
    try {
      assert.deepEqual(m.info.tokenizer.chatTemplates, []);
      assert.deepEqual(m.promptFormat.chatTemplates, {});
      for (const call of [() => m.generate([{ role: 'user', content: 'hi' }]), () => m.applyChatTemplate([{ role: 'user', content: 'hi' }])])
        await assert.rejects(call(), (e) => /the gpt2 model \(config\.json, .*\) has no chat template/.test(e.message) && /plain string/.test(e.message));
      // A template given by the caller works on any model.
      const r = await m.generate([{ role: 'user', content: 'And God said' }], { maxNewTokens: 3, temperature: 0, chat: { template: '{{ messages[0].content }}' } });
      assert.deepEqual(r.tokens.slice(0, r.promptTokens), (await m.tokenize('And God said', { addSpecialTokens: false })).ids);
    } finally {
      await m.dispose();
    }
  });

  test('an HF folder with tokenizer_config.json (template, special tokens, add_bos_token) and several EOS ids', async () => {
    const config = { bos_token: '<|endoftext|>', eos_token: { __type: 'AddedToken', content: '<|endoftext|>' }, add_bos_token: true,
      model_max_length: 1e30, tokenizer_class: 'GPT2Tokenizer', chat_template: [
        { name: 'default', template: '{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}' },
        { name: 'tool_use', template: 'TOOLS {{ tools | length }}' }] };
    const m = await loadModel([...kjvFiles, named('tokenizer_config.json', JSON.stringify(config)),
      named('generation_config.json', JSON.stringify({ eos_token_id: [2047, 100] }))]);
    try {
      const t = m.info.tokenizer;
      assert.deepEqual([t.bosToken, t.eosToken, t.addBosToken, t.modelMaxLength], ['<|endoftext|>', '<|endoftext|>', true, null]);
      assert.deepEqual(t.chatTemplates, ['default', 'tool_use']);
      assert.deepEqual(t.settingsNotApplied, ['tokenizer_class']);
      assert.deepEqual(m.promptFormat.stopTokens, [100, 2047]);
      const msgs = [{ role: 'user', content: 'And God said' }];
      assert.equal(await m.applyChatTemplate(msgs, { addGenerationPrompt: true }), '<|endoftext|>user: And God said\nassistant:');
      assert.equal(await m.applyChatTemplate(msgs, { tools: [{}, {}] }), 'TOOLS 2');  // tool_use when tools are given
      assert.equal(await m.applyChatTemplate(msgs, { tools: [{}], templateName: 'default' }), '<|endoftext|>user: And God said\n');
      // add_bos_token: a plain prompt now starts with <|endoftext|>; the chat prompt has it once (from the template).
      assert.equal((await m.tokenize('And God said')).ids[0], 2047);
      const { ids } = await m.encodeChat(msgs, { addGenerationPrompt: true });
      assert.equal(ids.filter((id) => id === 2047).length, 1);
    } finally {
      await m.dispose();
    }
  });

  test('a folder URL: tokenizer_config.json is fetched, and chat_template.jinja when the configuration has no template', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attnlens-chat-folder-'));
    const server = await serve({ '/m/': dir });
    try {
      for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) copyFileSync(join(kjv.dir, f), join(dir, f));
      writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|endoftext|>', model_max_length: 256 }));
      writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}');
      const m = await loadModel(server.url('/m/'));
      try {
        assert.deepEqual(m.info.files.map((f) => f.name).sort(), ['chat_template.jinja', 'config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
        assert.equal(m.info.tokenizer.modelMaxLength, 256);
        assert.equal(await m.applyChatTemplate([{ role: 'user', content: 'hi' }]), '[user] hi');
      } finally {
        await m.dispose();
      }
      // With the template in tokenizer_config.json, chat_template.jinja is not asked for.
      writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: '{{ messages[0].content }}' }));
      const before = server.requests.length;
      const m2 = await loadModel(server.url('/m/'));
      try {
        assert.equal(await m2.applyChatTemplate([{ role: 'user', content: 'hi' }]), 'hi');
        assert.ok(!server.requests.slice(before).some((q) => q.path.endsWith('.jinja')), 'no request for chat_template.jinja');
      } finally {
        await m2.dispose();
      }
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a bad tokenizer_config.json: an error naming the file and the key', async () => {
    await assert.rejects(loadModel([...kjvFiles, named('tokenizer_config.json', '{"eos_token": "<|im_end|>"}')]),
      { message: /tokenizer_config\.json: eos_token "<\|im_end\|>" is not a token of the vocabulary/ });
    await assert.rejects(loadModel([...kjvFiles, named('tokenizer_config.json', '{"chat_template": [{"name": "default"}]}')]),
      { message: /tokenizer_config\.json: chat_template\[0\] must be \{"name": string, "template": string\}/ });
  });

  test('loadTokenizer: a GGUF\'s template, and tokenizer.json with its configuration files', async () => {
    const t = await loadTokenizer(GGUF);
    const m = await loadModel(GGUF);
    try {
      assert.equal(t.applyChatTemplate(conversation), RENDERED);
      assert.deepEqual(t.encodeChat(conversation, { addGenerationPrompt: true }), await m.encodeChat(conversation, { addGenerationPrompt: true }));
      assert.deepEqual(t.info, m.info.tokenizer);
    } finally {
      t.dispose();
      await m.dispose();
    }
    const k = await loadTokenizer([join(kjv.dir, 'tokenizer.json'), named('tokenizer_config.json', '{"add_eos_token": true, "eos_token": "<|endoftext|>"}'),
      named('chat_template.jinja', '{% for m in messages %}{{ m.content }}{% endfor %}')]);
    try {
      assert.equal(k.tokenize('In the beginning').ids.at(-1), 2047);
      assert.equal(k.applyChatTemplate([{ role: 'user', content: 'In the beginning' }]), 'In the beginning');
      assert.deepEqual(k.chatTemplates, { default: '{% for m in messages %}{{ m.content }}{% endfor %}' });
    } finally {
      k.dispose();
    }
    await assert.rejects(loadTokenizer([...kjvFiles]), { message: /model files .* were given/ });
  });
});

describe('CLI: --chat and --system', { skip: noModel }, () => {
  const cli = join(root, 'bin/attnlens.mjs');
  const run = (...args) => new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { maxBuffer: 64 << 20 }, (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });

  test('generate --chat --system --json: the conversation rendered by the template, what the API generates', async () => {
    const r = await run('generate', '--model', GGUF, '--chat', '--system', 'Be brief.', '--prompt', 'What is 2+2?', '--temperature', '0', '--json');
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is 2+2?' }];
    const m = await loadModel(GGUF);
    try {
      assert.equal(out.chat_prompt, await m.applyChatTemplate(messages, { addGenerationPrompt: true }));
      const api = await m.generate(messages, { temperature: 0 });
      assert.deepEqual(out.tokens, api.tokens);
      assert.equal(out.finish_reason, 'eos');
    } finally {
      await m.dispose();
    }
  });

  test('attention --chat --json: the attention covers every token of the conversation', async () => {
    const r = await run('attention', '--model', GGUF, '--chat', '--prompt', 'Hi', '--max-tokens', '1', '--temperature', '0', '--layer', '1', '--json');
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.match(out.chat_prompt, /^<\|im_start\|>system\n.*<\|im_end\|>\n<\|im_start\|>user\nHi<\|im_end\|>\n<\|im_start\|>assistant\n$/s);
    assert.equal(out.pieces[0], '<|im_start|>');
    assert.equal(out.attention.length, 1);
    assert.equal(out.attention[0][0].length, out.tokens.length);     // a row per token
    assert.equal(out.attention[0][0][0].length, out.tokens.length);  // over every token
  });

  test('--chat on a model without a template, --system without --chat: clear errors', { skip: noKjv }, async () => {
    const a = await run('generate', '--model', kjv.dir, '--chat', '--prompt', 'hi');
    assert.equal(a.code, 1);
    assert.match(a.stderr, /has no chat template .*run without --chat/);
    const b = await run('generate', '--model', kjv.dir, '--system', 'x', '--prompt', 'hi');
    assert.equal(b.code, 2);
    assert.match(b.stderr, /--system TEXT needs --chat/);
  });
});
