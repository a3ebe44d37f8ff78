// A tokenizer without a model: llama2.c tokenizer.bin, Hugging Face tokenizer.json (with its
// tokenizer_config.json, special_tokens_map.json, chat_template.jinja), or a GGUF file's embedded
// tokenizer.
import { renderChat } from './chat.mjs';
import { getModule, instanceLost, onEngineLost, trackOwner } from './wasm.mjs';
import { PieceLabels, idArray } from './pieces.mjs';
import * as check from './validate.mjs';

export class Tokenizer {
  #t;
  #disposed = false;
  #lost = null;
  #untrack;
  #labels;

  /** @internal use loadTokenizer() */
  constructor(module, handle) {
    this.#t = handle;
    this.#untrack = trackOwner(module, this);
    this.#labels = new PieceLabels((ids) => handle.pieces(ids));
    this.kind = handle.kind();
    this.vocabSize = handle.vocabSize();
    /** Special tokens, add_bos/add_eos, model_max_length, chat template names (as model.info.tokenizer). */
    this.info = Object.freeze(handle.info());
    /** The chat templates' sources by name ({} when there are none). */
    this.chatTemplates = Object.freeze(handle.chatTemplates());
  }

  static async fromFiles(files, vocabSize = 0) {
    const m = await getModule();
    const set = new m.FileSet();
    try {
      for (const f of files) set.add(f.name, f.bytes.length).set(f.bytes);
      return new Tokenizer(m, new m.Tokenizer(set, vocabSize));
    } finally {
      if (!instanceLost(m)) set.delete();
    }
  }

  /** @internal The engine instance holding this tokenizer failed and was discarded (wasm.mjs). */
  [onEngineLost](error) {
    this.#lost = error;
    this.#t = null;
  }

  #alive() {
    if (this.#disposed) throw new Error('this tokenizer has been disposed');
    if (this.#lost) throw new this.#lost.constructor(this.#lost.message, { cause: this.#lost.cause });
  }

  /** Text → { ids, pieces } (with the special tokens the model family adds, unless told not to). */
  tokenize(text, { addSpecialTokens = true, target } = {}) {
    this.#alive();
    check.string(text, 'text');
    if (target !== undefined && target !== false)
      throw new TypeError("tokenize: { target: true } asks for an encoder-decoder model's decoder text (model.tokenize); a tokenizer loaded alone has one side");
    const ids = idArray(this.#t.tokenize(text, !!addSpecialTokens));
    return { ids, pieces: this.#labels.of(ids) };
  }

  /** A conversation → its prompt text (options as Model.applyChatTemplate). */
  applyChatTemplate(messages, options = {}) {
    this.#alive();
    return renderChat(this.#chatModel(), messages, check.chatOptions(options, 'applyChatTemplate'));
  }

  /** A conversation → { text, ids, pieces, special }, the text tokenized without adding special tokens. */
  encodeChat(messages, options = {}) {
    this.#alive();
    const text = renderChat(this.#chatModel(), messages, check.chatOptions(options, 'encodeChat'));
    const ids = idArray(this.#t.tokenize(text, false));
    return { text, ids, pieces: this.#labels.of(ids), special: this.#t.special(ids) };
  }

  #chatModel() {
    return { templates: this.chatTemplates, tokenizer: this.info, owner: `this ${this.kind} tokenizer` };
  }

  detokenize(ids) {
    this.#alive();
    return this.#t.detokenize(check.tokenIds(ids, 'ids', this.vocabSize));
  }

  pieces(ids) {
    this.#alive();
    return this.#labels.of(check.tokenIds(ids, 'ids', this.vocabSize));
  }

  dispose() {
    if (!this.#disposed && !this.#lost) {
      this.#untrack();
      this.#t.delete();
    }
    this.#disposed = true;
  }
}
