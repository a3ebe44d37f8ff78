// tests/js/fixtures/interop-formats.mjs — the checks tests/e2e/analysis.test.mjs applies to the page's
// BertViz and CircuitsVis exports — accept what those tools take and reject what they would refuse or
// render wrongly (each rule is cited from their source in that file). The engine's own attention (a
// real kjv-gpt2 pass) in both documents' shapes is the positive case.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { checkBertviz, checkCircuitsvis, tensorShape } from './fixtures/interop-formats.mjs';
import { kjv, noKjv, web } from './fixtures/models.mjs';

const { loadModel } = await import(web);

const eye = (n) => Array.from({ length: n }, (_, q) => Array.from({ length: n }, (_, k) => (k === q ? 1 : 0)));

test('tensorShape: rectangular nested lists only', () => {
  assert.deepEqual(tensorShape([[[1, 0]], [[0, 1]]], 'x'), [2, 1, 2]);
  assert.throws(() => tensorShape([[1, 0], [1]], 'x'), /ragged/);
  assert.throws(() => tensorShape([[1, NaN]], 'x'), /not a finite number/);
});

test('BertViz: self-attention and encoder–decoder arguments', () => {
  const layer = [[eye(3), eye(3)]];  // [1][2 heads][3][3]
  assert.deepEqual(checkBertviz({ attention: [layer, layer], tokens: ['a', 'b', 'c'] }), { layers: 2, heads: 2, n: 3 });
  assert.throws(() => checkBertviz({ attention: [layer[0]], tokens: ['a', 'b', 'c'] }), /3 dimensions, format_attention needs 4/);
  assert.throws(() => checkBertviz({ attention: [[eye(3), eye(3)].concat([eye(3)])].map((h) => [h]).concat([layer]), tokens: ['a', 'b', 'c'] }), /torch.stack/);
  assert.throws(() => checkBertviz({ attention: [layer], tokens: ['a', 'b'] }), /3 × 3 but there are 2 tokens/);
  assert.throws(() => checkBertviz({ attention: [layer], tokens: ['a', 'b', 'c'], encoder_tokens: ['x'] }), /cannot be given with encoder_tokens/);
  assert.throws(() => checkBertviz({ attention: [layer], tokens: ['a', 'b', 'c'], query_tokens: [] }), /no argument query_tokens/);
  assert.throws(() => checkBertviz({ attention: [[[[[0.5, 0.6, 0], [0, 1, 0], [0, 0, 1]]]]], tokens: ['a', 'b', 'c'] }), /sums to 1.1/);
  const cross = [[[[0.5, 0.5, 0], [0, 0, 1]]]];  // [1][1 head][2 target][3 source]
  const ok = { encoder_attention: [[[eye(3)]]], decoder_attention: [[[eye(2)]]], cross_attention: [cross], encoder_tokens: ['x', 'y', 'z'], decoder_tokens: ['p', 'q'] };
  assert.deepEqual(checkBertviz(ok).cross_attention, { layers: 1, heads: 1, rows: 2, cols: 3 });
  assert.throws(() => checkBertviz({ ...ok, cross_attention: [[[[[1, 0], [0, 1]]]]] }), /cross_attention is 2 × 2, the tokens give 2 × 3/);
  assert.throws(() => checkBertviz({ ...ok, encoder_attention: [[[eye(3)]], [[eye(3)]]] }), /include_layers defaults to 2/);
  assert.throws(() => checkBertviz({ ...ok, decoder_tokens: undefined, cross_attention: undefined, decoder_attention: [[[eye(2)]]] }), /is not a list of strings/);
});

test('CircuitsVis: attention_heads arguments per layer', () => {
  const causal = [[[1, 0], [0.5, 0.5]]];
  assert.deepEqual(checkCircuitsvis([{ attention: causal, tokens: ['a', 'b'], attention_head_names: ['L0H0'], mask_upper_tri: true }]), [{ heads: 1, n: 2 }]);
  // what the page wrote for cross-attention before: an extra keyword (TypeError in attention_heads)
  assert.throws(() => checkCircuitsvis([{ attention: [[[0.5, 0.5, 0]]], tokens: ['x', 'y', 'z'], query_tokens: ['p'] }]), /no argument query_tokens/);
  assert.throws(() => checkCircuitsvis([{ attention: [[[0.5, 0.5, 0]]], tokens: ['x', 'y', 'z'] }]), /1 × 3 but tokens \(both axes\) has 3/);
  assert.throws(() => checkCircuitsvis([{ attention: causal, tokens: ['a', 'b'], attention_head_names: ['h0', 'h1'] }]), /2 head names for 1 heads/);
  // a bidirectional (encoder) pattern under the default mask loses its upper half
  assert.throws(() => checkCircuitsvis([{ attention: [[[0.5, 0.5], [0.5, 0.5]]], tokens: ['a', 'b'] }]), /mask_upper_tri must be false/);
  assert.deepEqual(checkCircuitsvis([{ attention: [[[0.5, 0.5], [0.5, 0.5]]], tokens: ['a', 'b'], mask_upper_tri: false }]), [{ heads: 1, n: 2 }]);
});

test('the engine\'s attention of a kjv-gpt2 pass in both shapes passes the checks', { skip: noKjv }, async () => {
  const model = await loadModel(kjv.dir);
  try {
    const { ids, pieces } = await model.tokenize('In the beginning God created the heaven', { addSpecialTokens: false });
    const out = await model.forward(ids, { attentions: true });
    const { layers, heads } = model.info;
    const n = ids.length;
    const pattern = (l, h) => { const a = out.attentions.get(l, h); return Array.from({ length: n }, (_, q) => Array.from(a.subarray(q * n, (q + 1) * n))); };
    const perLayer = Array.from({ length: layers }, (_, l) => Array.from({ length: heads }, (_, h) => pattern(l, h)));
    assert.deepEqual(checkBertviz({ attention: perLayer.map((hs) => [hs]), tokens: pieces }), { layers, heads, n });
    assert.equal(checkCircuitsvis(perLayer.map((hs) => ({ attention: hs, tokens: pieces, mask_upper_tri: true }))).length, layers);
  } finally {
    await model.dispose();
  }
});
