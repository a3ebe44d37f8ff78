// A tokenizer without a model: llama2.c tokenizer.bin, Hugging Face tokenizer.json, or a GGUF file's
// embedded tokenizer.
import { getModule } from './wasm.mjs';
import * as check from './validate.mjs';

export class Tokenizer {
  #t;
  #disposed = false;

  /** @internal use loadTokenizer() */
  constructor(handle) {
    this.#t = handle;
    this.kind = handle.kind();
    this.vocabSize = handle.vocabSize();
  }

  static async fromFile(file, vocabSize = 0) {
    const m = await getModule();
    const set = new m.FileSet();
    try {
      set.add(file.name, file.bytes.length).set(file.bytes);
      return new Tokenizer(new m.Tokenizer(set, vocabSize));
    } finally {
      set.delete();
    }
  }

  #alive() {
    if (this.#disposed) throw new Error('this tokenizer has been disposed');
  }

  /** Text → { ids, pieces } (with the special tokens the model family adds, unless told not to). */
  tokenize(text, { addSpecialTokens = true } = {}) {
    this.#alive();
    check.string(text, 'text');
    const ids = Array.from(this.#t.tokenize(text, !!addSpecialTokens));
    return { ids, pieces: this.#t.pieces(ids) };
  }

  detokenize(ids) {
    this.#alive();
    return this.#t.detokenize(check.tokenIds(ids, 'ids', this.vocabSize));
  }

  pieces(ids) {
    this.#alive();
    return this.#t.pieces(check.tokenIds(ids, 'ids', this.vocabSize));
  }

  dispose() {
    if (!this.#disposed) this.#t.delete();
    this.#disposed = true;
  }
}
