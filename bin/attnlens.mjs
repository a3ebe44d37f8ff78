#!/usr/bin/env node
// attnlens: the command line of AttnLens (runs the same WebAssembly engine as the browser).
//
//   attnlens generate  --model PATH [--tokenizer PATH] --prompt TEXT [--chat [--system TEXT]] [--max-tokens N]
//                      [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--quantize q8_0|q4_0|q4_k]
//                      [--kv-cache f32|q8_0] [--json]
//                      [--num-beams B] [--length-penalty L] [--early-stopping true|false|never]
//                      [--no-repeat-ngram-size N] [--min-tokens N]
//   attnlens attention --model PATH [--tokenizer PATH] --prompt TEXT [--chat [--system TEXT]] [--max-tokens N]
//                      [sampling flags] [--layer L] [--head H] --json
//   attnlens analyze   --model PATH [--tokenizer PATH] --prompt TEXT [--top-k K] --json
//   attnlens heads     --model PATH [--tokenizer PATH] [--length N] [--batch B] [--seed S] --json
//   attnlens tokenize  (--model PATH | --tokenizer PATH) --text TEXT [--target] [--json]
//   attnlens info      --model PATH [--tokenizer PATH]
//   attnlens embed     --model PATH --text TEXT [--text TEXT …] [--pooling mean|cls|max] [--normalize true|false] [--json]
//   attnlens fill-mask --model PATH --text TEXT [--top-k K] [--json]
//
// PATH is a file or a Hugging Face-style folder; a name from models/manifest.json (e.g. kjv-gpt2)
// also works. These flags are a stable interface: other tools rely on them.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const api = () => import('../web/src/index.mjs');

const USAGE = `usage:
  attnlens generate  --model PATH [--tokenizer PATH] --prompt TEXT [--chat [--system TEXT]] [--max-tokens N]
                     [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--stop TEXT]
                     [--quantize q8_0|q4_0|q4_k] [--kv-cache f32|q8_0] [--json] [--num-beams B] [--length-penalty L]
                     [--early-stopping true|false|never] [--no-repeat-ngram-size N] [--min-tokens N]
  attnlens attention --model PATH [--tokenizer PATH] --prompt TEXT [--chat [--system TEXT]] [--max-tokens N]
                     [sampling flags] [--layer L] [--head H] --json
  attnlens analyze   --model PATH [--tokenizer PATH] --prompt TEXT [--top-k K] --json
  attnlens heads     --model PATH [--tokenizer PATH] [--length N] [--batch B] [--seed S] --json
  attnlens tokenize  (--model PATH | --tokenizer PATH) --text TEXT [--target] [--json]
  attnlens info      --model PATH [--tokenizer PATH]
  attnlens embed     --model PATH --text TEXT [--text TEXT …] [--pooling mean|cls|max] [--normalize true|false] [--json]
  attnlens fill-mask --model PATH --text TEXT [--top-k K] [--json]

PATH: a model file (.bin, .gguf, .safetensors), a Hugging Face-style folder (tokenizer.json or a SentencePiece
.model), or a built-in model name.
--chat: the prompt is a user message (after --system TEXT, a system message), rendered by the model's
chat template with the assistant's turn opened; --json then also prints "chat_prompt", the rendered text.
generate --json prints {"tokens", "text", "prefill_ms", "decode_tokens_per_s"}; attention --json prints
{"tokens", "pieces", "attention": [layer][head][query][key]} over every position (0 past the query).
analyze --json prints {"tokens", "pieces", "topk": [pos][k], "logitLens": [layer][pos][k], "heads"} for the
prompt (topk entries {"id", "piece", "prob"}; --top-k K, default 5); heads --json runs the head detectors
on the repeated random-token probe: {"heads", "kind", "probe", "loss"}. "heads" is {"previousToken",
"induction", "duplicateToken", "entropy", "sink"}, each [layer][head].
Defaults: --max-tokens 128, --temperature 1, --top-k 0 (off), --top-p 1, --seed random, --num-beams 1;
an encoder-decoder model's own generation settings (generation_config.json) replace these defaults
(e.g. 4 beams and greedy decoding for a Marian translation model). With --num-beams > 1 the search
is greedy (temperature 0) and --json adds "score".
tokenize --target: the target side of an encoder-decoder model (the decoder's text, read by Marian's
target.spm when the model has one), as transformers' text_target; analyze and attention label an
encoder-decoder's target tokens with that side's pieces.`;

const OPTIONS = {
  model: { type: 'string' },
  tokenizer: { type: 'string' },
  prompt: { type: 'string' },
  text: { type: 'string', multiple: true },
  chat: { type: 'boolean' },
  system: { type: 'string' },
  pooling: { type: 'string' },
  normalize: { type: 'string' },
  'max-tokens': { type: 'string' },
  temperature: { type: 'string' },
  'top-k': { type: 'string' },
  'top-p': { type: 'string' },
  'repetition-penalty': { type: 'string' },
  'num-beams': { type: 'string' },
  'length-penalty': { type: 'string' },
  'early-stopping': { type: 'string' },
  'no-repeat-ngram-size': { type: 'string' },
  'min-tokens': { type: 'string' },
  seed: { type: 'string' },
  stop: { type: 'string', multiple: true },
  layer: { type: 'string' },
  head: { type: 'string' },
  quantize: { type: 'string' },
  'kv-cache': { type: 'string' },
  length: { type: 'string' },
  batch: { type: 'string' },
  json: { type: 'boolean' },
  target: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

class UsageError extends Error {}

function number(flags, name, { integer = false } = {}) {
  const v = flags[name];
  if (v === undefined) return undefined;
  const x = Number(v);
  if (v.trim() === '' || !Number.isFinite(x) || (integer && !Number.isInteger(x)))
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'}, got "${v}"`);
  return x;
}

// A built-in model name → its folder under models/.
function resolvePath(p) {
  if (existsSync(p)) return p;
  const manifest = join(here, '..', 'models', 'manifest.json');
  if (existsSync(manifest)) {
    const m = JSON.parse(readFileSync(manifest, 'utf8')).models?.find((x) => x.name === p);
    if (m) return join(here, '..', 'models', m.name);
  }
  throw new UsageError(`${p}: no such file or folder (nor a built-in model name)`);
}

async function openModel(flags) {
  if (!flags.model) throw new UsageError('--model PATH is required');
  const { loadModel } = await api();
  const sources = [resolvePath(flags.model)];
  if (flags.tokenizer) sources.push(resolvePath(flags.tokenizer));
  if (flags.quantize !== undefined && !['q8_0', 'q4_0', 'q4_k', 'none'].includes(flags.quantize))
    throw new UsageError(`--quantize must be q8_0, q4_0, q4_k or none, got "${flags.quantize}"`);
  const kv = flags['kv-cache'];
  if (kv !== undefined && !['f32', 'q8_0'].includes(kv)) throw new UsageError(`--kv-cache must be f32 or q8_0, got "${kv}"`);
  return loadModel(sources, { quantize: flags.quantize ?? 'none', kvCache: kv ?? 'f32' });
}

function generateOptions(flags) {
  const early = flags['early-stopping'];
  if (early !== undefined && !['true', 'false', 'never'].includes(early))
    throw new UsageError(`--early-stopping must be true, false or never, got "${early}"`);
  const o = {
    maxNewTokens: number(flags, 'max-tokens', { integer: true }),
    minNewTokens: number(flags, 'min-tokens', { integer: true }),
    numBeams: number(flags, 'num-beams', { integer: true }),
    lengthPenalty: number(flags, 'length-penalty'),
    earlyStopping: early === undefined ? undefined : early === 'never' ? 'never' : early === 'true',
    noRepeatNgramSize: number(flags, 'no-repeat-ngram-size', { integer: true }),
    temperature: number(flags, 'temperature'),
    topK: number(flags, 'top-k', { integer: true }),
    topP: number(flags, 'top-p'),
    repetitionPenalty: number(flags, 'repetition-penalty'),
    seed: number(flags, 'seed', { integer: true }),
    stop: flags.stop,
  };
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function requirePrompt(flags) {
  if (flags.prompt === undefined) throw new UsageError('--prompt TEXT is required');
  if (flags.system !== undefined && !flags.chat) throw new UsageError('--system TEXT needs --chat');
  if (!flags.chat) return flags.prompt;
  // A conversation: rendered by the model's chat template (checked once the model is loaded).
  return [...(flags.system !== undefined ? [{ role: 'system', content: flags.system }] : []), { role: 'user', content: flags.prompt }];
}

// --chat needs a model with a chat template: say so in the CLI's terms (the API would suggest a string).
async function checkChat(model, flags, prompt) {
  if (!flags.chat) return {};
  if (!model.info.tokenizer?.chatTemplates?.length)
    throw new Error(`${flags.model}: this model has no chat template (no chat_template in tokenizer_config.json, chat_template.jinja or the GGUF): run without --chat to continue the prompt as plain text`);
  return { chat_prompt: await model.applyChatTemplate(prompt, { addGenerationPrompt: true }) };
}

async function generate(flags) {
  const prompt = requirePrompt(flags);
  const model = await openModel(flags);
  try {
    const chat = await checkChat(model, flags, prompt);
    if (!flags.json) {
      // Stream to stdout as tokens arrive.
      for await (const step of model.stream(prompt, generateOptions(flags))) process.stdout.write(step.text);
      process.stdout.write('\n');
      return;
    }
    const r = await model.generate(prompt, generateOptions(flags));
    const out = {
      tokens: r.tokens,
      text: r.text,
      prefill_ms: r.timings.prefillMs,
      decode_tokens_per_s: r.timings.tokensPerSecond,
      ...chat,
    };
    if (r.source) out.source = r.source;
    out.finish_reason = r.finishReason;
    out.seed = r.seed;
    if (r.score !== undefined) out.score = r.score;
    console.log(JSON.stringify(out));
  } finally {
    await model.dispose();
  }
}

async function attention(flags) {
  const prompt = requirePrompt(flags);
  const layer = number(flags, 'layer', { integer: true });
  const head = number(flags, 'head', { integer: true });
  const model = await openModel(flags);
  try {
    const { layers, heads } = model.info;
    if (layer !== undefined && (layer < 0 || layer >= layers)) throw new UsageError(`--layer ${layer} is out of range [0, ${layers})`);
    if (head !== undefined && (head < 0 || head >= heads)) throw new UsageError(`--head ${head} is out of range [0, ${heads})`);
    const chat = await checkChat(model, flags, prompt);
    const r = await model.generate(prompt, generateOptions(flags));
    // One forward pass over every token gives the complete matrices (equal to what generation
    // computed step by step through the KV cache), the last token's row included.
    const select = { layers: layer === undefined ? [] : [layer], heads: head === undefined ? [] : [head] };
    const encdec = model.info.kind === 'encoder-decoder';
    const f = await model.forward(encdec ? { source: r.source, target: r.tokens } : r.tokens, { attentions: select });
    const pick = (kind) =>
      f.attentions.layers(kind).map((l) => {
        const rec = f.attentions.layer(l, kind);
        const hs = head === undefined ? [...Array(rec.heads).keys()] : [head];
        return hs.map((h) => {
          const m = f.attentions.get(l, h, kind);
          return Array.from({ length: rec.queries }, (_, q) => Array.from(m.subarray(q * rec.keys, (q + 1) * rec.keys)));
        });
      });
    const out = {
      tokens: r.tokens,
      pieces: r.pieces,
      layers: layer === undefined ? [...Array(layers).keys()] : [layer],
      heads: head === undefined ? [...Array(heads).keys()] : [head],
      attention: pick('self'),
    };
    if (encdec) {
      out.source = r.source;
      out.source_pieces = await model.pieces(r.source);
      out.cross_attention = pick('cross');
      out.encoder_attention = pick('encoder');
    }
    out.text = r.text;
    Object.assign(out, chat);
    console.log(JSON.stringify(out));
  } finally {
    await model.dispose();
  }
}

// The five [layer][head] tables of a heads object, in the order the CLI documents.
function headTables(h) {
  return { previousToken: h.previousToken, induction: h.induction, duplicateToken: h.duplicateToken, entropy: h.entropy, sink: h.sink };
}

const entry = ({ id, piece, prob }) => ({ id, piece, prob });

async function analyze(flags) {
  const prompt = requirePrompt(flags);
  const k = number(flags, 'top-k', { integer: true }) ?? 5;
  if (k < 1 || k > 1000) throw new UsageError(`--top-k must be in [1, 1000], got ${k}`);
  const model = await openModel(flags);
  try {
    const { kind } = model.info;
    let input;
    let extra = {};
    if (kind === 'encoder-decoder') {
      // The prompt is the source; the target is the model's own greedy output (as attention does).
      const r = await model.generate(prompt, { temperature: 0, maxNewTokens: number(flags, 'max-tokens', { integer: true }) ?? 64 });
      input = { source: r.source, target: r.tokens };
      extra = { source: r.source, source_pieces: await model.pieces(r.source), text: r.text };
    } else if (kind === 'encoder-only') {
      input = (await model.tokenize(prompt)).ids;
    } else {
      input = (await model.encodePrompt(prompt)).ids;
    }
    const f = await model.forward(input, { topK: k, logitLens: { topK: k }, heads: true });
    const tokens = kind === 'encoder-decoder' ? input.target : input;
    const out = {
      tokens,
      pieces: await model.pieces(tokens, { target: kind === 'encoder-decoder' }),
      topk: f.topk ? f.topk.map((row) => row.map(entry)) : null,
      logitLens: f.logitLens ? f.logitLens.map((layer) => layer.map((row) => row.map(entry))) : null,
      heads: headTables(f.heads),
      ...extra,
    };
    console.log(JSON.stringify(out));
  } finally {
    await model.dispose();
  }
}

async function heads(flags) {
  const length = number(flags, 'length', { integer: true }) ?? 0;
  const batch = number(flags, 'batch', { integer: true }) ?? 4;
  const seed = number(flags, 'seed', { integer: true }) ?? 0;
  const model = await openModel(flags);
  try {
    const r = await model.detectHeads({ length, batch, seed });
    console.log(JSON.stringify({
      heads: headTables(r.heads),
      kind: r.kind,
      probe: { length: r.length, batch, seed, sequences: r.sequences },
      loss: r.loss && { first_copy: r.loss.firstCopy, second_copy: r.loss.secondCopy },
    }));
  } finally {
    await model.dispose();
  }
}

async function tokenize(flags) {
  const text = oneText(flags);
  if (!flags.model && !flags.tokenizer) throw new UsageError('--model PATH or --tokenizer PATH is required');
  if (flags.target && !flags.model) throw new UsageError("--target is an encoder-decoder model's target side: give --model PATH");
  let r;
  if (flags.model) {
    const model = await openModel(flags);
    try {
      // As generation feeds it (e.g. BOS first for Llama); --target: the decoder's text.
      r = await model.tokenize(text, { target: !!flags.target });
    } finally {
      await model.dispose();
    }
  } else {
    const { loadTokenizer } = await api();
    const t = await loadTokenizer(resolvePath(flags.tokenizer));
    r = t.tokenize(text);
    t.dispose();
  }
  console.log(flags.json ? JSON.stringify({ ids: r.ids, pieces: r.pieces }) : r.ids.join(' '));
}

function oneText(flags) {
  if (!flags.text?.length) throw new UsageError('--text TEXT is required');
  if (flags.text.length > 1) throw new UsageError('give one --text');
  return flags.text[0];
}

async function embed(flags) {
  if (!flags.text?.length) throw new UsageError('--text TEXT is required (repeat it for several inputs)');
  const o = {};
  if (flags.pooling !== undefined) o.pooling = flags.pooling;
  if (flags.normalize !== undefined) {
    if (!['true', 'false'].includes(flags.normalize)) throw new UsageError(`--normalize must be true or false, got "${flags.normalize}"`);
    o.normalize = flags.normalize === 'true';
  }
  const model = await openModel(flags);
  try {
    const r = await model.embed(flags.text, o);
    const out = { embeddings: r.embeddings.map((e) => Array.from(e)), tokens: r.tokens, truncated: r.truncated,
      pooling: r.pooling, normalize: r.normalize };
    if (flags.json) console.log(JSON.stringify(out));
    else r.embeddings.forEach((e, i) => console.log(`${flags.text[i]}\t${Array.from(e, (x) => x.toFixed(5)).join(' ')}`));
  } finally {
    await model.dispose();
  }
}

async function fillMask(flags) {
  const text = oneText(flags);
  const topK = number(flags, 'top-k', { integer: true });
  const model = await openModel(flags);
  try {
    const r = await model.fillMask(text, topK === undefined ? {} : { topK });
    if (flags.json) console.log(JSON.stringify({ tokens: r.tokens, masks: r.masks }));
    else for (const m of r.masks) for (const c of m.candidates) console.log(`${c.score.toFixed(4)}\t${c.piece}\t${c.sequence}`);
  } finally {
    await model.dispose();
  }
}

async function info(flags) {
  const model = await openModel(flags);
  try {
    console.log(JSON.stringify(model.info, null, 2));
  } finally {
    await model.dispose();
  }
}

async function main(argv) {
  const [command, ...rest] = argv;
  let flags;
  try {
    ({ values: flags } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError(e.message);
  }
  if (!command || command === '--help' || command === '-h' || flags.help) {
    console.log(USAGE);
    return;
  }
  const commands = { generate, attention, analyze, heads, tokenize, info, embed, 'fill-mask': fillMask };
  if (!commands[command]) throw new UsageError(`unknown command "${command}"`);
  if (['attention', 'analyze', 'heads'].includes(command) && !flags.json) throw new UsageError(`${command} prints JSON: add --json`);
  await commands[command](flags);
}

main(process.argv.slice(2)).catch((e) => {
  if (e instanceof UsageError) {
    console.error(`attnlens: ${e.message}\n\n${USAGE}`);
    process.exit(2);
  }
  console.error(`attnlens: ${e.message}`);
  process.exit(1);
});
