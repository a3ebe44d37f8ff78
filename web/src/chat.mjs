// Chat templates: a conversation → the prompt text a chat model was trained on, rendered by the
// model's own Jinja template (tokenizer_config.json's chat_template, chat_template.jinja, or a
// GGUF's tokenizer.chat_template; the engine reads them, see src/runtime/tokenizer_config.h) with
// @huggingface/jinja, the Jinja implementation transformers.js renders them with, and the context
// transformers.js gives it: messages, add_generation_prompt, tools, documents, the special tokens'
// text (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token) and any extra
// variables; raise_exception and strftime_now come with the Jinja environment (as in transformers.js).
//
// The import is a relative path into the package's own node_modules: @huggingface/jinja is a
// bundled dependency of attnlens (package.json "bundleDependencies"), so the path is the same in
// this repository and in an installed package, resolves in a page served as plain files and in a
// module worker (neither can resolve a bare specifier without an import map, and workers have
// none), and bundlers follow it like any relative import.
import { Template } from '../../node_modules/@huggingface/jinja/dist/index.js';
import * as check from './validate.mjs';

const SPECIAL_TOKENS = [
  ['bos_token', 'bosToken'], ['eos_token', 'eosToken'], ['unk_token', 'unkToken'], ['sep_token', 'sepToken'],
  ['pad_token', 'padToken'], ['cls_token', 'clsToken'], ['mask_token', 'maskToken'],
];

// Parsed templates by source (a model has one or a few; parsing a long template takes ~1 ms).
const parsed = new Map();
const MAX_PARSED = 32;

function compile(source, name, owner) {
  let t = parsed.get(source);
  if (!t) {
    try {
      t = new Template(source);
    } catch (e) {
      throw new Error(`the chat template "${name}" of ${owner} cannot be parsed: ${e.message}`, { cause: e });
    }
    if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value);
    parsed.set(source, t);
  }
  return t;
}

/**
 * Which template renders: options.template (a template of the caller's), options.templateName, else
 * "tool_use" when tools are given and the model has one, else "default" (as transformers.js picks).
 */
function pick(templates, o, owner) {
  if (o.template) return { name: 'options.template', source: o.template };
  const names = Object.keys(templates ?? {});
  if (!names.length)
    throw new Error(`${owner} has no chat template (none in tokenizer_config.json, chat_template.jinja or the GGUF's ` +
      'tokenizer.chat_template): give the prompt as a plain string instead, or a template of your own as the template option');
  let name = o.templateName;
  if (name !== null) {
    if (!names.includes(name)) throw new RangeError(`templateName: ${owner} has no chat template "${name}" (it has: ${names.join(', ')})`);
  } else if (o.tools && names.includes('tool_use')) {
    name = 'tool_use';
  } else if (names.includes('default')) {
    name = 'default';
  } else {
    throw new RangeError(`${owner} has several chat templates and none is "default": choose one with templateName (${names.join(', ')})`);
  }
  return { name, source: templates[name] };
}

/**
 * Renders a conversation. `model`: { templates: {name: source}, tokenizer: info.tokenizer, owner:
 * how errors name the model }; `options` as check.chatOptions returns them. A template that fails —
 * its own raise_exception("…") included — throws an Error naming the template, its message last.
 */
export function renderChat({ templates, tokenizer, owner }, messages, options) {
  check.messages(messages);
  const { name, source } = pick(templates, options, owner);
  const template = compile(source, name, owner);
  const context = {
    messages,
    add_generation_prompt: options.addGenerationPrompt,
    tools: options.tools,
    documents: options.documents,
  };
  for (const [key, field] of SPECIAL_TOKENS) if (tokenizer?.[field]) context[key] = tokenizer[field];
  Object.assign(context, options.variables);
  try {
    return template.render(context);
  } catch (e) {
    throw new Error(`the chat template "${name}" of ${owner} failed: ${e.message}`, { cause: e });
  }
}

/** How errors name a model: "the llama model (model.gguf)". */
export function describeModel(info) {
  const files = (info.files ?? []).map((f) => f.name.split(/[\\/]/).pop());
  return `the ${info.architecture} model${files.length ? ` (${files.join(', ')})` : ''}`;
}
