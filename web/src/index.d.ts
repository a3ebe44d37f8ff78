// Type declarations of the AttnLens JavaScript API (web/src/index.mjs).
//
//   import { loadModel } from 'attnlens';
//   const model = await loadModel('https://example.com/kjv-gpt2/', { onProgress: (p) => … });
//   for await (const step of model.stream('And God said', { attentions: true })) …

// ---- sources and loading ---------------------------------------------------------------------------

/**
 * Bytes of one file with its name (the name tells the engine what the file is, e.g. "tokenizer.json").
 * `data` may be the file's consecutive pieces (e.g. 1 GB ArrayBuffers of a 2.5 GB GGUF): each is read
 * straight into the engine's memory, so a file over 2 GB never has to be one buffer.
 */
export interface NamedBuffer {
  name: string;
  data: ArrayBuffer | ArrayBufferView | Blob | ReadonlyArray<ArrayBuffer | ArrayBufferView | Blob>;
}

/**
 * One file or folder of a model:
 * - a URL (string or URL) of a file, or of a Hugging Face-style folder when it ends with "/"
 *   (config.json, tokenizer.json, model.safetensors or its index and shards);
 * - in Node, a path of a file or a folder (or a file: URL);
 * - a File / Blob; an ArrayBuffer or typed array (named "file0", "file1", … by position); a NamedBuffer.
 */
export type ModelSourceItem = string | URL | Blob | ArrayBuffer | ArrayBufferView | NamedBuffer;
/** A model's files: one item, or several (e.g. a llama2.c checkpoint and its tokenizer.bin). */
export type ModelSource = ModelSourceItem | readonly ModelSourceItem[];

/** Download (or read) progress over all the files of a model. */
export interface LoadProgress {
  /** Bytes read so far, over all files; never decreases. */
  loaded: number;
  /** Bytes of all files, when known (every server sent Content-Length, uncompressed); else undefined. */
  total: number | undefined;
  /** Name of the file being read. */
  file: string;
}

/** Something that runs web/src/worker.mjs ("attnlens/worker"): a Web Worker or a node:worker_threads Worker. */
export interface WorkerLike {
  postMessage(message: any, transfer?: any): void;
  terminate(): unknown;
}

export interface LoadOptions {
  /** Called as bytes arrive. */
  onProgress?: (progress: LoadProgress) => void;
  /** Aborts the download / load (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Keep downloads in Cache Storage (browsers) so a second load works offline. Default false. */
  cache?: boolean;
  /**
   * Quantize f32 / f16 / bf16 weight matrices at load, exactly as llama.cpp's quantizer would:
   * "q8_0" (8.5 bits per weight), "q4_0" (4.5), "q4_k" (4.5; matrices whose input size is not a
   * multiple of 256 get q5_0, as llama.cpp does). Matrices whose input size is not a multiple of 32
   * and weights a file already stores quantized stay as they are. Default "none".
   */
  quantize?: 'q8_0' | 'q4_0' | 'q4_k' | 'none';
  /** Positions the KV cache holds (default: the model's context length). */
  contextLength?: number;
  /**
   * How the KV cache stores keys and values: "f32" (default) or "q8_0" (llama.cpp's q8_0: blocks of 32
   * int8 values with an f16 scale, 34 bytes per 32 values instead of 128; attention reads it by integer
   * dot products — faster decode at long positions, outputs within about 1% of the f32 cache's).
   * q8_0 needs a head size that is a multiple of 32.
   */
  kvCache?: 'f32' | 'q8_0';
  /**
   * Threads the engine splits its work over (1–16; default: the physical cores, at most 4). Only
   * where shared memory is allowed — Node, and pages served with COOP/COEP (crossOriginIsolated) —
   * elsewhere the single-thread build runs with 1. `info.threads` says what the model got. In a
   * browser the model does not wait for its threads' Workers to start: its first passes run on those
   * already up (the results do not depend on the count).
   */
  threads?: number;
  /**
   * Which SIMD build the engine of this thread (or of the model's worker) runs: "auto" (default) the
   * relaxed-SIMD one where the JavaScript engine runs relaxed SIMD (Chrome 114+, Node 21+: f32
   * multiply-adds fused where the machine has FMA, so results differ from the portable build's by
   * float rounding and may differ between machines), else the portable one; "portable": the same
   * bits on every machine; "relaxed": refused where it cannot run. The first load of a thread
   * decides for its engine; a later load that asks for the other one is refused.
   */
  simd?: 'auto' | 'relaxed' | 'portable';
  /**
   * Run the model in a Web Worker (Node: worker_threads): true to let AttnLens create it, or a
   * Worker you created on "attnlens/worker" (you terminate it). Buffers given as the source are
   * transferred to the worker (detached here).
   */
  worker?: boolean | WorkerLike;
}

export interface LoadTokenizerOptions extends Omit<LoadOptions, 'worker' | 'quantize' | 'contextLength' | 'kvCache' | 'threads' | 'simd'> {
  /** llama2.c tokenizer.bin: the vocabulary size, if the file has extra records. */
  vocabSize?: number;
}

/** A failed download: carries the HTTP status (e.g. 404). */
export class FetchError extends Error {
  constructor(url: string, status: number, statusText?: string);
  readonly name: 'FetchError';
  readonly url: string;
  readonly status: number;
}

/**
 * The engine's WebAssembly instance failed in a way that leaves its memory untrustworthy (a trap, a
 * stack overflow inside wasm) and was discarded. The call that failed rejects with it; every model
 * and tokenizer loaded in that instance is lost (their calls reject with it too) and must be loaded
 * again; the next load starts a fresh instance.
 */
export class EngineLostError extends Error {
  constructor(message: string, options?: { cause?: unknown });
  readonly name: 'EngineLostError';
}

/** Loads a model in this thread. */
export function loadModel(source: ModelSource, options?: LoadOptions & { worker?: false }): Promise<Model>;
/** Loads a model in a worker: the same API, every method async, the model never runs in this thread. */
export function loadModel(source: ModelSource, options: LoadOptions & { worker: true | WorkerLike }): Promise<WorkerModel>;
export function loadModel(source: ModelSource, options?: LoadOptions): Promise<Model | WorkerModel>;

/**
 * Loads a tokenizer alone: tokenizer.bin (llama2.c), tokenizer.json (with its configuration files,
 * if given: tokenizer_config.json, special_tokens_map.json, chat_template.jinja), or a GGUF's
 * embedded tokenizer and chat template.
 */
export function loadTokenizer(source: ModelSource, options?: LoadTokenizerOptions): Promise<Tokenizer>;

export interface EngineInfo {
  /** The SIMD instruction set the kernels were compiled for ("sse4.1": WebAssembly SIMD128; "sse4.1+relaxed"). */
  simd: string;
  /** Which WebAssembly build runs: "threads" (pthreads, shared memory) or "single". */
  build: 'threads' | 'single';
  /** Whether that build is the relaxed-SIMD one (LoadOptions.simd). */
  relaxedSimd: boolean;
  /** Threads the engine has started (1 + its pthreads); engineInfo() resolves once those being started run. */
  threads: number;
  /** Bytes the engine has allocated in the wasm heap. */
  allocatedBytes: number;
  /** Size of the wasm heap (it grows, never shrinks). */
  heapBytes: number;
  /** The most the heap may grow to. */
  heapMaxBytes: number;
}

/** Facts about this thread's engine instance. */
export function engineInfo(): Promise<EngineInfo>;

// ---- models ---------------------------------------------------------------------------------------

export type ModelKind = 'decoder-only' | 'encoder-only' | 'encoder-decoder';

/** The model card. */
export interface ModelInfo {
  /** e.g. "llama", "gpt2", "bert", "seq2seq". */
  architecture: string;
  kind: ModelKind;
  /** File format: "llama2c", "gguf", "safetensors". */
  format: string;
  /** Parameter count. */
  params: number;
  dModel: number;
  /** Decoder layers (encoder-only models: encoder layers). */
  layers: number;
  /** Encoder layers of an encoder–decoder model (0 otherwise). */
  encoderLayers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  dFF: number;
  /** Token ids the model writes (an encoder–decoder's decoder vocabulary). */
  vocabSize: number;
  /** Token ids the model reads (an encoder–decoder's source vocabulary: differs from vocabSize when the vocabularies are separate). */
  sourceVocabSize: number;
  /** Context length (positions). */
  contextLength: number;
  /** "rope", "learned", "sinusoidal". */
  positions: string;
  /** The element type of the weight matrices: "f32", "f16", "q8_0", "q4_K", …, or for a file with
   * several (a Q4_K_M GGUF keeps some tensors in q6_K, q5_0, q8_0) "mixed (q4_K, q6_K, q8_0, q5_0)",
   * largest share first. */
  weightDtype: string;
  /** Per element type of the weight matrices and embedding tables: how many, parameters, bytes. */
  weightTypes: { dtype: string; tensors: number; params: number; bytes: number }[];
  /** Bytes of weights one forward pass reads. */
  weightBytes: number;
  /** Bytes of the model's files (the engine keeps them and reads weights straight from them). */
  fileBytes: number;
  /** Bytes the model owns beside its files: norm and bias vectors widened to f32, tables, and a copy of a weight that cannot stay in the file's bytes (an unaligned f32 matrix). Transposed or reordered weights and weights quantized at load are written in the file's own bytes. */
  ownedBytes: number;
  /** This model's KV cache with its context full (it is allocated as positions fill: memory() has what it holds now). */
  kvCacheBytes: number;
  /** How the KV cache stores keys and values (LoadOptions.kvCache). */
  kvCache: 'f32' | 'q8_0';
  /** What the model takes with its context full: files + owned copies and tables + kvCacheBytes (scratch aside; memory() has the live figures). */
  memoryBytes: number;
  /** Threads this model's forward passes use. */
  threads: number;
  files: Array<{ name: string; bytes: number }>;
  tokenizer: TokenizerInfo | null;
  /**
   * An encoder–decoder's own target-side tokenizer (Marian's target.spm): kind, vocabSize, bosId,
   * eosId (its configuration fields null: tokenizer_config.json describes the source); null when the
   * decoder reads the same tokenizer as the source (tokenize(text, { target: true }) then uses that one).
   */
  targetTokenizer: TokenizerInfo | null;
}

/**
 * A tokenizer with its configuration (tokenizer_config.json, special_tokens_map.json,
 * chat_template.jinja, or a GGUF's tokenizer metadata).
 */
export interface TokenizerInfo {
  /** "sentencepiece-bpe", "byte-level-bpe", "wordpiece", … */
  kind: string;
  vocabSize: number;
  /** BOS / EOS ids (the configuration's bos_token / eos_token when it names them); -1 if none. */
  bosId: number;
  eosId: number;
  /** The special tokens' text, as chat templates see them (bos_token, …); null if the configuration has none. */
  bosToken: string | null;
  eosToken: string | null;
  unkToken: string | null;
  sepToken: string | null;
  padToken: string | null;
  clsToken: string | null;
  maskToken: string | null;
  /** add_bos_token / add_eos_token as configured (applied when tokenizing with special tokens); null: the tokenizer's own choice. */
  addBosToken: boolean | null;
  addEosToken: boolean | null;
  /** model_max_length; null when absent or transformers' "no limit" (1e30). */
  modelMaxLength: number | null;
  /** Names of the chat templates ("default" first; e.g. "tool_use"); [] when the model has none. */
  chatTemplates: string[];
  /** Settings of tokenizer_config.json / special_tokens_map.json the engine read but does not use (tokenizer_class, …). */
  settingsNotApplied: string[];
}

/** One message of a conversation. Other fields (tool_calls, name, …) are passed to the template. */
export interface ChatMessage {
  /** "system", "user", "assistant", "tool", … */
  role: string;
  /** The text, or content parts (e.g. [{ type: "text", text }]) for templates that take them; null beside tool_calls. */
  content: string | readonly unknown[] | null;
  [field: string]: unknown;
}

export interface ChatTemplateOptions {
  /** Open the assistant's turn at the end (transformers' add_generation_prompt). applyChatTemplate/encodeChat: default false; generate/stream: default true. */
  addGenerationPrompt?: boolean;
  /** Tool (function) definitions the template lists (JSON schema objects); selects the "tool_use" template when the model has one. */
  tools?: readonly unknown[];
  /** Documents for retrieval-augmented templates. */
  documents?: readonly unknown[];
  /** Which of the model's templates: "default", "tool_use", … (see info.tokenizer.chatTemplates). */
  templateName?: string;
  /** A Jinja template of your own, instead of the model's. */
  template?: string;
  /** More template variables (e.g. { enable_thinking: false }, { date_string: "26 Jul 2024" }). */
  variables?: Record<string, unknown>;
}

/** A rendered conversation and its tokens (tokenized without adding special tokens: the template writes them). */
export interface EncodedChat extends Tokenized {
  text: string;
  /** special[i]: token i is a special / control token (<|im_start|>, <bos>, …), written by the template. */
  special: boolean[];
}

/** How prompts are turned into tokens, and which tokens end a generation. */
export interface PromptFormat {
  addSpecial: boolean;
  emptyPromptToken: number;
  stopTokens: number[];
  decoderStartToken: number;
  sourceSuffixEos: boolean;
  eosToken: number;
  /** The chat templates' Jinja sources by name ({} when the model has none). */
  chatTemplates: Record<string, string>;
  /** The model's own generation settings (encoder–decoder models), under the option names of generate(). */
  generation: Partial<Omit<SamplingOptions, 'seed' | 'stop' | 'signal'>>;
  /** The masked-LM placeholder ([MASK] / <mask>), -1 if none. */
  maskToken: number;
  /** How embed() pools by default and the most tokens it takes per input. */
  embedding: { pooling: 'mean' | 'cls' | 'max'; normalize: boolean; maxLength: number; from: 'sentence-transformers' | 'gguf' | 'default' };
}

/** Token ids: an array or an integer typed array. */
export type TokenIds = readonly number[] | Int32Array | Uint32Array | Uint16Array | Uint8Array;

export interface TokenizeOptions {
  /** Add the special tokens the model family adds (e.g. BOS). Default true. */
  addSpecialTokens?: boolean;
}

/**
 * Which side of an encoder–decoder model's text (transformers' text_target / as_target_tokenizer):
 * the source (default: the model's input, what encodePrompt feeds the encoder) or, with
 * `target: true`, the decoder's text — read by the decoder's own tokenizer when the model has one
 * (Marian's target.spm, with target_vocab.json when the vocabularies are separate), else by the one
 * tokenizer. Unlike transformers' MarianTokenizer.decode (target by default), every method here
 * reads the source unless told. `target: true` on a decoder-only or encoder-only model is a TypeError.
 */
export interface TextSideOptions {
  target?: boolean;
}

export interface ModelTokenizeOptions extends TokenizeOptions, TextSideOptions {}

export interface Tokenized {
  ids: number[];
  /** The text piece of each token. */
  pieces: string[];
}

/** Which attention weights to record: true for all, or some layers and/or heads. */
export type AttentionSelection = boolean | { layers?: number[]; heads?: number[] };

/** A head switched off inside the forward pass: its output (before W_O) replaced by 0 or by its mean over positions. */
export interface HeadAblation {
  layer: number;
  head: number;
  /** Which heads: the decoder's ("self", the default of decoder models), the encoder's, or cross-attention. */
  kind?: AttentionKind;
  /** "zero" (default) or "mean": the head's mean output over the positions of the pass (the prompt, in generation). */
  mode?: 'zero' | 'mean';
}

export interface ForwardOptions {
  attentions?: AttentionSelection;
  /** Encoder-only (BERT) models: segment ids. */
  tokenTypes?: TokenIds;
  /** The k most likely next tokens at every position (result.topk). */
  topK?: number;
  /**
   * The logit lens: the residual stream after each layer through the final norm and the unembedding.
   * true = the top 5 at every layer and position (result.logitLens); `logits: true` also gives all of
   * them, [layer][position][vocab] (result.logitLensLogits).
   */
  logitLens?: boolean | { topK?: number; logits?: boolean };
  /** The residual stream after each layer, [layer][position][dModel] (result.hiddenStates). */
  hiddenStates?: boolean;
  /** Head detector scores, attention entropy and first-token (sink) mass of this input (result.heads). */
  heads?: boolean;
  /** Attention rollout (Abnar & Zuidema 2020), [layer][position][position] (result.rollout). */
  rollout?: boolean;
  /** Heads switched off for this pass (the logits, attention and everything else are of the modified run). */
  ablate?: HeadAblation[];
}

/** One of the most likely next tokens: its probability under the model (softmax of the logits) and its logit. */
export interface Prediction {
  id: number;
  /** null for a model loaded without a tokenizer (read as ids). */
  piece: string | null;
  prob: number;
  logit: number;
}

/**
 * Per (layer, head): TransformerLens' detector scores (previous-token, duplicate-token, induction: the
 * share of attention on the pattern's keys), the mean attention entropy (nats) and the mean weight on
 * the first token (means over the queries that see more than one key).
 */
export interface HeadScores {
  kind: AttentionKind;
  previousToken: number[][];
  duplicateToken: number[][];
  induction: number[][];
  entropy: number[][];
  sink: number[][];
  /** [layer][head][position]. */
  entropyPerPosition?: number[][][];
  sinkPerPosition?: number[][][];
}

/**
 * forward()'s input: ids (decoder-only, encoder-only) or { source, target } (encoder–decoder): each
 * token ids, or text — the source encoded as generation does, the target text as the decoder's text
 * after its start token (read by the target side's tokenizer: Marian's target.spm when given).
 */
export type ForwardInput = TokenIds | { source: string | TokenIds; target: string | TokenIds } | { ids: TokenIds; tokenTypes?: TokenIds };

export interface ForwardResult {
  /** Logits [position][vocab] of every position (null: an encoder without a masked-LM head). */
  logits: Float32Array | null;
  /** [positions, vocab]. */
  shape: [number, number] | null;
  /** The recorded attention weights, if asked for. */
  attentions: Attentions | null;
  /** Encoder-only models: hidden states [position][dModel]. */
  hidden?: Float32Array;
  hiddenShape?: [number, number];
  /** options.topK: [position][k], most likely first. */
  topk?: Prediction[][];
  /** options.logitLens: [layer][position][k]. */
  logitLens?: Prediction[][][];
  /** options.logitLens.logits: [layer][position][vocab]. */
  logitLensLogits?: Float32Array;
  logitLensShape?: [number, number, number];
  /** options.hiddenStates: [layer][position][dModel], the residual stream after each layer. */
  hiddenStates?: Float32Array;
  hiddenStatesShape?: [number, number, number];
  heads?: HeadScores;
  /** options.rollout: [layer][position][position]. */
  rollout?: Float32Array;
  rolloutShape?: [number, number, number];
}

/** A patching input: text, token ids, or for encoder–decoder models { source, target } (text or ids; target text as in ForwardInput). */
export type PatchInput = string | TokenIds | { source: string | TokenIds; target: string | TokenIds };

export interface PatchOptionsBase {
  clean: PatchInput;
  corrupted: PatchInput;
  /** metric = logit[correct] − logit[incorrect] at `position` (default −1: the last); tokens as ids or one-token strings. */
  metric: { correct: number | string; incorrect: number | string; position?: number };
  /** "denoise" (default): the corrupted run with a clean activation; "noise": the clean run with a corrupted one. */
  direction?: 'denoise' | 'noise';
}

/** heads: every head's output before W_O; attn / mlp: a sub-layer's output; resid: the residual stream after the layer. */
export type PatchPoint = 'heads' | 'attn' | 'mlp' | 'resid';

export interface PatchOptions extends PatchOptionsBase {
  site: { point: PatchPoint; layer: number; head?: number; position?: number; kind?: AttentionKind };
  /** Record the patched run's attention. */
  attentions?: AttentionSelection;
}

export interface PatchResult {
  clean: number;
  corrupted: number;
  patched: number;
  /** 1 = the patch restores the clean value (denoise) / brings the corrupted one (noise); 0 = no effect. */
  normalized: number;
  attentions: Attentions | null;
}

export interface PatchSweepOptions extends PatchOptionsBase {
  /** Patch every head ("heads", the default) or every (layer, position) of "resid", "attn" or "mlp". */
  over?: PatchPoint;
  kind?: AttentionKind;
}

export interface PatchMap {
  clean: number;
  corrupted: number;
  point: PatchPoint;
  kind: AttentionKind;
  layers: number;
  /** Heads, or positions. */
  columns: number;
  /** [layer][column]: the metric with that activation patched. */
  patched: number[][];
  normalized: number[][];
}

export interface DetectHeadsOptions {
  /** Length of the random half (0 = min(50, (context − 1) / 2)). */
  length?: number;
  /** Sequences averaged (default 4). */
  batch?: number;
  /** Seed of the probe's random tokens (an integer in [0, 2^31 − 1]; default 0). */
  seed?: number;
  /** Run the probe with these heads switched off. */
  ablate?: HeadAblation[];
}

export interface DetectHeadsResult {
  heads: HeadScores;
  kind: AttentionKind;
  length: number;
  /** BOS + r + r, for each sequence. */
  sequences: number[][];
  /** Mean next-token cross-entropy (nats) predicting the first and the second copy (null: encoder-only). */
  loss: { firstCopy: number; secondCopy: number } | null;
}

/** A prompt: text, token ids, or a conversation rendered by the model's chat template. */
export type Prompt = string | TokenIds | readonly ChatMessage[];

/**
 * Options left out take the model's own generation settings when it has them (encoder–decoder models:
 * generation_config.json / config.json, as `model.promptFormat.generation`; e.g. a Marian model's
 * numBeams 4 and badWordsIds [[pad]]), else the defaults below.
 */
export interface EmbedOptions {
  /** Default: the model's own (sentence-transformers Pooling module, GGUF pooling_type), else 'mean'. */
  pooling?: 'mean' | 'cls' | 'max';
  /** Divide by the Euclidean norm. Default: the model's own (a Normalize module), else false. */
  normalize?: boolean;
  /** Record attention: one Attentions per input, over the batch's padded length. */
  attentions?: AttentionSelection;
}

export interface EmbedResult {
  /** One vector of dModel floats per input. */
  embeddings: Float32Array[];
  /** The token ids of each input (special tokens included, after truncation). */
  tokens: number[][];
  pieces: string[][];
  /** Which tokens of each input are special tokens ([CLS], [SEP], <s>, </s> …). */
  special: boolean[][];
  /** Tokens dropped from each input to fit the model's limit (texts only; token ids over it are an error). */
  truncated: number[];
  /** The padded length of the batch: each input's attention is [heads][length][length], its padded keys exactly 0. */
  length: number;
  pooling: 'mean' | 'cls' | 'max';
  normalize: boolean;
  attentions: Attentions[] | null;
}

export interface FillMaskOptions {
  /** Candidates per mask (default 5). */
  topK?: number;
  attentions?: AttentionSelection;
}

export interface FillMaskResult {
  tokens: number[];
  pieces: string[];
  /** For each mask token of the input: its best candidates, likeliest first. */
  masks: { position: number; candidates: { token: number; piece: string; score: number; sequence: string }[] }[];
  attentions: Attentions | null;
}

export interface SamplingOptions {
  /** New tokens at most (default 128). */
  maxNewTokens?: number;
  /** At least this many new tokens: end-of-sequence tokens are banned before (default 0). */
  minNewTokens?: number;
  /** 0 = greedy (default 1; 0 with numBeams > 1 or when the model's settings say do_sample false). */
  temperature?: number;
  /** Keep the k most likely tokens (0 = off, the default). */
  topK?: number;
  /** Nucleus sampling, in (0, 1] (default 1 = off). */
  topP?: number;
  /** > 0; 1 = off (default). */
  repetitionPenalty?: number;
  /** Seed of the sampler (an integer ≥ 0; default random, reported in the result). */
  seed?: number;
  /** Stop when the text contains one of these (the text is cut before it; not with beam search). */
  stop?: string | string[];
  /** Stops the generation within one token: it then resolves with finishReason "aborted". */
  signal?: AbortSignal;
  /** A conversation prompt: how it is rendered (addGenerationPrompt defaults to true here). */
  chat?: ChatTemplateOptions;
  /**
   * Beam search with this many beams (default 1 = none), as transformers' generate() does it:
   * greedy within beams (temperature 0), hypotheses scored sum(log p) / length^lengthPenalty.
   */
  numBeams?: number;
  /** Exponent of the length normalisation of beam scores (default 1; > 0 favours longer outputs). */
  lengthPenalty?: number;
  /** Beam search stops once numBeams hypotheses are done (true), when none can improve by a heuristic (false, default), or only when none can improve at all ('never'). */
  earlyStopping?: boolean | 'never';
  /** No n-gram of this size is generated twice (0 = off). */
  noRepeatNgramSize?: number;
  /** Token sequences never generated. */
  badWordsIds?: number[][];
  /** The first new token is forced to this one (BART). */
  forcedBosTokenId?: number | null;
  /** The last allowed new token (at maxNewTokens) is forced to this one. */
  forcedEosTokenId?: number | null;
}

export interface GenerateOptions extends SamplingOptions {
  /** Sees every new token as it is generated. */
  onToken?: (step: StreamStep) => void;
  /** onToken's steps carry the k most likely tokens. */
  predictions?: number;
  /** Heads switched off while generating. */
  ablate?: HeadAblation[];
}

export interface StreamOptions extends SamplingOptions {
  /** Record attention: each step then carries the weights of the pass that produced its token. */
  attentions?: AttentionSelection;
  /** Each step carries the k most likely tokens of the distribution it was drawn from (step.topk). */
  predictions?: number;
  /** Heads switched off while generating. */
  ablate?: HeadAblation[];
}

export type FinishReason = 'eos' | 'length' | 'stop' | 'context' | 'aborted';

export interface GenerateResult {
  /** The generated text (without the prompt). */
  text: string;
  /** Every token: the prompt's (encoder–decoder: the decoder start token), then the new ones. */
  tokens: number[];
  pieces: string[];
  /** Encoder–decoder models: the source (encoder) tokens. */
  source?: number[];
  /** How many of `tokens` are the prompt's. */
  promptTokens: number;
  finishReason: FinishReason;
  seed: number;
  /** prefilledTokens: prompt tokens the prefill fed (fewer than promptTokens when aborted during the prefill); decodedTokens counts every beam's tokens with beam search. */
  timings: { prefillMs: number; prefilledTokens: number; decodeMs: number; decodedTokens: number; tokensPerSecond: number };
  /** Beam search: the returned sequence's score (sum of log-probabilities / length^lengthPenalty). */
  score?: number;
  /** Beam search: every hypothesis kept (up to numBeams), best first. */
  hypotheses?: { tokens: number[]; text: string; score: number }[];
}

export interface StreamStep {
  /** The new token's id. */
  token: number;
  /** Its text piece (as the tokenizer has it). */
  piece: string;
  /** The text it adds to the output (may be "" until a multi-byte character is complete). */
  text: string;
  /** Its position in the sequence. */
  position: number;
  /**
   * With options.attentions: the weights of the forward pass that produced this token (the whole
   * prompt at the first step, for encoder–decoder models with the encoder's; then one query row).
   * With beam search the steps come once the search is over, one per token of the returned beam,
   * each with the pass of that beam that chose it.
   */
  attentions?: Attentions;
  /** With options.predictions: the most likely tokens at this step (the model's distribution, temperature 1). */
  topk?: Prediction[];
  /** On the last step: the result, as generate() returns it. */
  result?: GenerateResult;
}

/** What stream() returns: iterate it with for await; once done, `result` holds the result (also after an abort). */
export interface TokenStream extends AsyncIterable<StreamStep> {
  result: GenerateResult | null;
}

export interface MemoryStats extends Omit<EngineInfo, 'simd' | 'build' | 'threads'> {
  /** This model's files. */
  fileBytes: number;
  /** Converted weight copies and tables the model owns. */
  ownedBytes: number;
  /** This model's KV cache now. */
  kvCacheBytes: number;
  /** Scratch buffers, logits, encoder memory now. */
  scratchBytes: number;
  /** Everything this model holds now: the sum of the four above. */
  modelBytes: number;
}

/** A model running in this thread (loadModel without `worker`). */
export class Model {
  private constructor();
  /** The model card. */
  readonly info: Readonly<ModelInfo>;
  readonly promptFormat: Readonly<PromptFormat>;
  /** True once dispose() was called. */
  readonly disposed: boolean;
  /** Text → ids and pieces; { target: true }: an encoder–decoder's decoder text (TextSideOptions). */
  tokenize(text: string, options?: ModelTokenizeOptions): Promise<Tokenized>;
  /** The ids generation feeds for this prompt (special tokens; encoder–decoder: the source with its end token). */
  encodePrompt(text: string): Promise<Tokenized>;
  /** Ids → text; { target: true }: an encoder–decoder's decoder tokens (e.g. result.tokens after promptTokens). */
  detokenize(ids: TokenIds, options?: TextSideOptions): Promise<string>;
  /** The text piece of each token id; { target: true }: an encoder–decoder's decoder tokens. */
  pieces(ids: TokenIds, options?: TextSideOptions): Promise<string[]>;
  /** A conversation → the prompt text of the model's chat template (@huggingface/jinja). */
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): Promise<string>;
  /** A conversation → its text and the token ids generation feeds. */
  encodeChat(messages: readonly ChatMessage[], options?: ChatTemplateOptions): Promise<EncodedChat>;
  /** One forward pass from position 0, with the logits of every position and, if asked, attention. */
  forward(input: ForwardInput, options?: ForwardOptions): Promise<ForwardResult>;
  /** Sentence embeddings of an encoder-only model (one padded batch). */
  embed(inputs: string | string[] | TokenIds[], options?: EmbedOptions): Promise<EmbedResult>;
  /** Masked-token prediction of an encoder-only model with a masked-LM head. */
  fillMask(input: string | TokenIds, options?: FillMaskOptions): Promise<FillMaskResult>;
  /** Generates from text, token ids or a conversation (rendered with the generation prompt). */
  generate(prompt: Prompt, options?: GenerateOptions): Promise<GenerateResult>;
  /** Streams the generation token by token (breaking out of the loop stops it). */
  stream(prompt: Prompt, options?: StreamOptions): TokenStream;
  /** Activation patching at one site. */
  patch(options: PatchOptions): Promise<PatchResult>;
  /** Activation patching of every head or every (layer, position): the patching map. */
  patchSweep(options: PatchSweepOptions): Promise<PatchMap>;
  /** The head detectors on the repeated random-token probe. */
  detectHeads(options?: DetectHeadsOptions): Promise<DetectHeadsResult>;
  /** Memory now. */
  memory(): MemoryStats;
  /** Frees the model's memory; a running generation ends as "aborted"; later calls throw. */
  dispose(): Promise<void>;
}

/** A model running in a worker (loadModel with `worker`): Model's API, every method async. (A type only.) */
export interface WorkerModel {
  readonly info: Readonly<ModelInfo>;
  readonly promptFormat: Readonly<PromptFormat>;
  readonly disposed: boolean;
  /** The worker running the model. */
  readonly worker: WorkerLike;
  tokenize(text: string, options?: ModelTokenizeOptions): Promise<Tokenized>;
  encodePrompt(text: string): Promise<Tokenized>;
  detokenize(ids: TokenIds, options?: TextSideOptions): Promise<string>;
  pieces(ids: TokenIds, options?: TextSideOptions): Promise<string[]>;
  /** Rendered in the worker. */
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): Promise<string>;
  encodeChat(messages: readonly ChatMessage[], options?: ChatTemplateOptions): Promise<EncodedChat>;
  /** Logits and attention arrays are transferred from the worker (no copy). */
  forward(input: ForwardInput, options?: ForwardOptions): Promise<ForwardResult>;
  embed(inputs: string | string[] | TokenIds[], options?: EmbedOptions): Promise<EmbedResult>;
  fillMask(input: string | TokenIds, options?: FillMaskOptions): Promise<FillMaskResult>;
  generate(prompt: Prompt, options?: GenerateOptions): Promise<GenerateResult>;
  stream(prompt: Prompt, options?: StreamOptions): TokenStream;
  /** Activation patching at one site. */
  patch(options: PatchOptions): Promise<PatchResult>;
  /** Activation patching of every head or every (layer, position): the patching map. */
  patchSweep(options: PatchSweepOptions): Promise<PatchMap>;
  /** The head detectors on the repeated random-token probe. */
  detectHeads(options?: DetectHeadsOptions): Promise<DetectHeadsResult>;
  memory(): Promise<MemoryStats>;
  /** Engine facts of the worker's own wasm instance. */
  engineInfo(): Promise<EngineInfo>;
  /** Frees the model's memory and terminates the worker (unless you passed it in). */
  dispose(): Promise<void>;
}

// ---- attention -------------------------------------------------------------------------------------

/** "self": decoder(-only) self-attention; "encoder": encoder self-attention; "cross": decoder → encoder. */
export type AttentionKind = 'self' | 'encoder' | 'cross';

/** The weights of one attention layer in one forward pass. */
export interface AttentionRecord {
  kind: AttentionKind;
  layer: number;
  heads: number;
  /** Queries of this pass (the whole prompt at prefill, 1 per generated token). */
  queries: number;
  /** Keys each query could attend to (self: every position so far; cross: the source tokens). */
  keys: number;
  /** Position of the first query. */
  queryStart: number;
  /**
   * Post-softmax weights [head][query][key]; causal rows are 0 beyond their own position. The records
   * of one pass share one ArrayBuffer: `data` is a view into it (mind `byteOffset`).
   */
  data: Float32Array;
}

export class Attentions {
  constructor(records: AttentionRecord[]);
  readonly records: AttentionRecord[];
  /** Kinds present, e.g. ["self"] or ["encoder", "self", "cross"]. */
  readonly kinds: AttentionKind[];
  /** Layers recorded for a kind (default "self"), ascending. */
  layers(kind?: AttentionKind): number[];
  /** One layer's record (throws RangeError if it was not recorded). */
  layer(layer: number, kind?: AttentionKind): AttentionRecord;
  /** One head's weights: Float32Array [query][key] (a view into the record). */
  get(layer: number, head: number, kind?: AttentionKind): Float32Array;
  /** One query's weights over the keys. */
  row(layer: number, head: number, query: number, kind?: AttentionKind): Float32Array;
  /** The mean over heads: Float32Array [query][key]. */
  mean(layer: number, kind?: AttentionKind): Float32Array;
  /** Nested arrays [layer][head][query][key] of one kind. */
  toArray(kind?: AttentionKind): number[][][][];
  toJSON(): Partial<Record<AttentionKind, number[][][][]>>;
  /** The ArrayBuffers of the records, each once (for postMessage transfer lists). */
  readonly buffers: ArrayBuffer[];
}

// ---- tokenizer -------------------------------------------------------------------------------------

/** A tokenizer without a model (loadTokenizer). Synchronous: it runs in this thread. */
export class Tokenizer {
  private constructor();
  readonly kind: string;
  readonly vocabSize: number;
  /** Special tokens, add_bos/add_eos, length limit, chat template names (as model.info.tokenizer). */
  readonly info: Readonly<TokenizerInfo>;
  /** The chat templates' sources by name. */
  readonly chatTemplates: Readonly<Record<string, string>>;
  tokenize(text: string, options?: TokenizeOptions): Tokenized;
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string;
  encodeChat(messages: readonly ChatMessage[], options?: ChatTemplateOptions): EncodedChat;
  detokenize(ids: TokenIds): string;
  pieces(ids: TokenIds): string[];
  dispose(): void;
}
