// Chat mode: for a model with a chat template, the prompt box writes the next user message of a
// conversation (an optional system message, the turns so far); Generate renders the whole
// conversation with the model's template (the API's encodeChat: the tokens the model reads, its
// special tokens included) and the assistant's reply joins the conversation. The rendered prompt is
// shown with its special tokens marked, and the attention views cover the whole conversation.
import { $, h } from './format.mjs';

const PREVIEW_DELAY_MS = 200;

export class ChatPanel {
  #model = null;
  #history = [];        // [{ role, content }] of the finished turns
  #previewTimer = 0;
  #previewSeq = 0;

  constructor({ onChange = () => {} } = {}) {
    this.box = $('#chat');
    this.toggle = $('#chat-mode');
    this.system = $('#chat-system');
    this.log = $('#chat-log');
    this.rendered = $('#chat-rendered');
    this.renderedText = $('#chat-rendered-text');
    this.prompt = $('#prompt');
    this.promptLabel = $('#prompt-heading label');
    this.onChange = onChange;
    this.template = $('#chat-template');
    this.toggle.addEventListener('change', () => this.#sync());
    this.template.addEventListener('change', () => this.#schedulePreview(0));
    $('#chat-new').addEventListener('click', () => {
      this.#history = [];
      this.#sync();
    });
    for (const el of [this.system, this.prompt]) el.addEventListener('input', () => this.#schedulePreview());
  }

  /** True when the next run is a chat turn (the model has a template and chat mode is on). */
  get active() {
    return !!this.#model && this.toggle.checked;
  }

  /** A new model: chat mode (on by default) if it has a chat template, the conversation cleared. */
  setModel(model) {
    const names = model?.info.tokenizer?.chatTemplates ?? [];
    this.#model = names.length && model.info.kind === 'decoder-only' ? model : null;
    this.#history = [];
    this.box.hidden = !this.#model;
    if (this.#model) {
      this.toggle.checked = true;
      const first = names.includes('default') ? 'default' : names[0];
      // One template: its name; several (e.g. "default" and "tool_use"): a choice.
      $('#chat-template-name').textContent = names.length > 1 ? 'template' : `template: ${first}`;
      this.template.hidden = names.length < 2;
      this.template.replaceChildren(...names.map((n) => h('option', { value: n, text: n })));
      this.template.value = first;
    }
    this.#sync();
  }

  /** The conversation a run sends: system message, the turns so far, the new user message. */
  messages(text) {
    const out = [];
    if (this.system.value.trim()) out.push({ role: 'system', content: this.system.value });
    out.push(...this.#history);
    if (text) out.push({ role: 'user', content: text });
    return out;
  }

  /** How the conversation is rendered (the API's chat options). */
  options() {
    return { addGenerationPrompt: true, templateName: this.template.value || undefined };
  }

  /** After a run: the user's message and the assistant's reply become part of the conversation. */
  commit(text, run) {
    if (!this.active || run.status === 'error') return;
    this.#history.push({ role: 'user', content: text }, { role: 'assistant', content: run.text });
    this.prompt.value = '';
    this.#sync();
  }

  #sync() {
    const on = this.active;
    this.box.dataset.on = String(on);
    this.system.closest('.chat-system').hidden = !on;
    this.rendered.hidden = !on;
    this.promptLabel.textContent = on ? 'Message' : 'Prompt';
    this.prompt.placeholder = on ? 'Write a message to the model…' : 'Type something for the model to continue…';
    this.#renderLog();
    this.#schedulePreview(0);
    this.onChange(on);
  }

  #renderLog() {
    const on = this.active;
    this.log.hidden = !on || !this.#history.length;
    this.log.replaceChildren(
      ...this.#history.map((m, i) =>
        h('li', { class: 'chat-turn', dataset: { role: m.role } },
          h('span', { class: 'chat-role', text: m.role }),
          h('span', { class: 'chat-content', text: m.content || '∅' }),
          // removing a turn removes the turns after it too (the conversation stays consistent)
          h('button', { type: 'button', class: 'button small quiet', 'aria-label': `Remove this ${m.role} turn and the ones after it`, title: 'Remove from here on', text: '×',
            onclick: () => { this.#history = this.#history.slice(0, i); this.#sync(); } }))),
    );
  }

  #schedulePreview(delay = PREVIEW_DELAY_MS) {
    clearTimeout(this.#previewTimer);
    if (!this.active) return;
    this.#previewTimer = setTimeout(() => this.#preview(), delay);
  }

  // The rendered prompt of the conversation as it stands (with the draft message), special tokens
  // marked: what the model will read.
  async #preview() {
    const model = this.#model;
    const seq = ++this.#previewSeq;
    const messages = this.messages(this.prompt.value);
    if (!messages.length) {
      this.renderedText.replaceChildren(h('span', { class: 'muted', text: 'Write a message: the model reads it through its chat template.' }));
      return;
    }
    let parts;
    try {
      const enc = await model.api.encodeChat(messages, this.options());
      parts = markSpecial(enc);
      this.rendered.dataset.tokens = String(enc.ids.length);
    } catch (e) {
      parts = [h('span', { class: 'chat-error', text: e.message })];
    }
    if (seq !== this.#previewSeq || model !== this.#model) return;  // a newer preview or another model
    this.renderedText.replaceChildren(...parts);
  }
}

// The rendered text with each special token (as the tokenizer found it) in a <mark>.
function markSpecial({ text, pieces, special }) {
  const parts = [];
  let at = 0;
  pieces.forEach((piece, i) => {
    if (!special[i]) return;
    const found = text.indexOf(piece, at);
    if (found < 0) return;
    if (found > at) parts.push(text.slice(at, found));
    parts.push(h('mark', { class: 'special-token', text: piece }));
    at = found + piece.length;
  });
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}
