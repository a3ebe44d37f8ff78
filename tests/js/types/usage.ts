// Type-checks the public API as a user writes it (tsc --noEmit -p tests/js/types, run by
// tests/js/types.test.mjs). 'attnlens' resolves through package.json "exports" → "types".
// Lines marked @ts-expect-error must NOT compile: they prove the declarations reject misuse.
import {
  Attentions,
  FetchError,
  Model,
  engineInfo,
  loadModel,
  loadTokenizer,
  type AttentionRecord,
  type ChatMessage,
  type EncodedChat,
  type TokenizerInfo,
  type DetectHeadsResult,
  type HeadScores,
  type PatchMap,
  type PatchResult,
  type Prediction,
  type EngineInfo,
  type ForwardResult,
  type GenerateResult,
  type LoadProgress,
  type MemoryStats,
  type ModelInfo,
  type StreamStep,
  type TokenStream,
  type WorkerModel,
} from 'attnlens';

async function inThread(): Promise<void> {
  const controller = new AbortController();
  const model: Model = await loadModel('https://example.com/kjv-gpt2/', {
    onProgress: (p: LoadProgress) => console.log(p.loaded, p.total ?? '?', p.file),
    signal: controller.signal,
    cache: true,
    quantize: 'q8_0',
    contextLength: 128,
    threads: 2,
  });
  const info: Readonly<ModelInfo> = model.info;
  const layers: number = info.layers + info.heads + info.contextLength + info.params + info.memoryBytes + info.threads;
  const arch: string = info.architecture;

  const { ids, pieces } = await model.tokenize('And God said', { addSpecialTokens: false });
  const text: string = await model.detokenize(ids);
  const fed: number[] = (await model.encodePrompt('And God said')).ids;
  const labels: string[] = await model.pieces(new Int32Array(ids));

  const out: ForwardResult = await model.forward(ids, { attentions: { layers: [0], heads: [1, 2] } });
  const logits: Float32Array | null = out.logits;
  const head: Float32Array | undefined = out.attentions?.get(0, 1);
  const cross: Float32Array | undefined = out.attentions?.get(0, 0, 'cross');
  const rec: AttentionRecord | undefined = out.attentions?.records[0];
  const s2s = await model.forward({ source: [1, 2, 3], target: [1] }, { attentions: true });
  // an encoder–decoder's target side (the decoder's text), text inputs of a pass
  const tgt: number[] = (await model.tokenize('Hallo', { target: true, addSpecialTokens: false })).ids;
  const tgtText: string = await model.detokenize(tgt, { target: true });
  const tgtPieces: string[] = await model.pieces(tgt, { target: true });
  const sides: number = info.sourceVocabSize + info.vocabSize + (info.targetTokenizer?.vocabSize ?? 0);
  const byText = await model.forward({ source: 'Hello', target: 'Hal' });
  // @ts-expect-error target is true or false
  await model.pieces(tgt, { target: 'yes' });

  const r: GenerateResult = await model.generate('In the beginning', {
    maxNewTokens: 20, temperature: 0.8, topK: 40, topP: 0.95, repetitionPenalty: 1.1, seed: 7, stop: ['\n'],
    signal: controller.signal, onToken: (s: StreamStep) => console.log(s.text),
  });
  const reason: 'eos' | 'length' | 'stop' | 'context' | 'aborted' = r.finishReason;
  const speed: number = r.timings.tokensPerSecond + r.timings.prefillMs;

  const stream: TokenStream = model.stream([1, 2, 3], { attentions: true, maxNewTokens: 5 });
  for await (const step of stream) {
    const t: number = step.token;
    const row: Float32Array | undefined = step.attentions?.row(0, 0, 0);
    if (step.result) console.log(step.result.text);
  }
  const final: GenerateResult | null = stream.result;

  const mem: MemoryStats = model.memory();
  const e: EngineInfo = await engineInfo();
  const simd: string = e.simd;
  const build: 'threads' | 'single' = e.build;
  const started: number = e.threads;
  await model.dispose();
  const gone: boolean = model.disposed;

  // @ts-expect-error temperature is a number
  await model.generate('x', { temperature: 'hot' });
  // @ts-expect-error unknown option
  await model.generate('x', { maxTokens: 3 });
  // @ts-expect-error prompt must be text or ids
  await model.generate({ text: 'x' });
  // @ts-expect-error quantize is "q8_0" or "none"
  await loadModel('m.gguf', { quantize: 'q4' });
  // @ts-expect-error memory() is synchronous in this thread
  const notAPromise: Promise<MemoryStats> = model.memory();
}

async function inWorker(): Promise<void> {
  const model: WorkerModel = await loadModel([new ArrayBuffer(8), { name: 'tokenizer.json', data: new Uint8Array(4) }], { worker: true });
  const mem: MemoryStats = await model.memory();
  const steps: StreamStep[] = [];
  for await (const step of model.stream('Once', { signal: AbortSignal.timeout(1000) })) steps.push(step);
  const out = await model.forward([1, 2]);
  const a: Attentions | null = out.attentions;
  const w: string = await model.detokenize([1], { target: true });
  await model.dispose();

  const mine = new Worker(new URL('attnlens/worker', import.meta.url), { type: 'module' });
  const other: WorkerModel = await loadModel(new Blob([]), { worker: mine });
  // @ts-expect-error in a worker, memory() is a Promise
  const sync: MemoryStats = other.memory();
}

async function errors(): Promise<void> {
  try {
    await loadModel(new URL('https://example.com/missing.gguf'));
  } catch (e) {
    if (e instanceof FetchError) {
      const status: number = e.status;
      const url: string = e.url;
    }
  }
  const tok = await loadTokenizer('tokenizer.json', { vocabSize: 512 });
  const t: number[] = tok.tokenize('hello').ids;
  tok.dispose();
  const att = new Attentions([]);
  const kinds = att.kinds;
  // @ts-expect-error no such attention kind
  att.get(0, 0, 'decoder');
}

async function chat(): Promise<void> {
  const model = await loadModel('chat.gguf');
  const messages: ChatMessage[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }];
  const text: string = await model.applyChatTemplate(messages, { addGenerationPrompt: true, tools: [{ type: 'function' }], templateName: 'tool_use' });
  const enc: EncodedChat = await model.encodeChat(messages, { variables: { enable_thinking: false } });
  const ids: number[] = enc.ids;
  const r: GenerateResult = await model.generate(messages, { maxNewTokens: 8, chat: { addGenerationPrompt: true } });
  for await (const step of model.stream([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { attentions: true })) step.attentions?.get(0, 0);
  const info: TokenizerInfo | null = model.info.tokenizer;
  const names: string[] | undefined = info?.chatTemplates;
  const maxLen: number | null | undefined = info?.modelMaxLength;
  const sources: Record<string, string> = model.promptFormat.chatTemplates;
  const w: WorkerModel = await loadModel('chat.gguf', { worker: true });
  const wt: string = await w.applyChatTemplate(messages);
  const tok = await loadTokenizer(['tokenizer.json', 'tokenizer_config.json']);
  const st: string = tok.applyChatTemplate(messages);
  const te: EncodedChat = tok.encodeChat(messages);
  // @ts-expect-error a message needs a role
  await model.generate([{ content: 'hi' }]);
  // @ts-expect-error addGenerationPrompt is a boolean
  await model.applyChatTemplate(messages, { addGenerationPrompt: 'yes' });
  // @ts-expect-error applyChatTemplate is a Promise on a model
  const notYet: string = model.applyChatTemplate(messages);
  return void [text, ids, r, names, maxLen, sources, wt, st, te, notYet];
}

async function interpretability(): Promise<void> {
  const model = await loadModel('models/kjv-gpt2/');
  const f = await model.forward([1, 2, 3], {
    topK: 5, logitLens: { topK: 3 }, hiddenStates: true, heads: true, rollout: true,
    ablate: [{ layer: 0, head: 1 }, { layer: 1, head: 2, mode: 'mean' }],
  });
  const p: Prediction = f.topk![0][0];
  const piece: string | null = p.piece;  // null for a model read as ids (no tokenizer)
  const lens: Prediction[][][] = f.logitLens!;
  const induction: number[][] = f.heads!.induction;
  const rollout: Float32Array = f.rollout!;
  // @ts-expect-error no such ablation mode
  await model.forward([1], { ablate: [{ layer: 0, head: 0, mode: 'resample' }] });
  for await (const step of model.stream('And God said', { predictions: 3, ablate: [{ layer: 0, head: 0 }] })) {
    const top: Prediction[] | undefined = step.topk;
  }
  const r: PatchResult = await model.patch({
    clean: 'a b', corrupted: 'a c', metric: { correct: ' b', incorrect: 7 }, site: { point: 'heads', layer: 1, head: 2 },
  });
  const n: number = r.normalized;
  const map: PatchMap = await model.patchSweep({ clean: [1, 2], corrupted: [1, 3], metric: { correct: 4, incorrect: 5 }, over: 'resid' });
  const cell: number = map.patched[0][1];
  // @ts-expect-error no such activation
  await model.patchSweep({ clean: [1], corrupted: [2], metric: { correct: 4, incorrect: 5 }, over: 'keys' });
  const d: DetectHeadsResult = await model.detectHeads({ length: 20, batch: 2 });
  const second: number | undefined = d.loss?.secondCopy;
  const scores: HeadScores = d.heads;
}

export { inThread, inWorker, errors, chat, interpretability };
