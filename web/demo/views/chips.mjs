// Token chips: one element per token of a sequence, appended as tokens stream in, coloured by the
// weight the focused query gives them. Every chip carries its exact weight in data-weight (the
// float32 value the engine computed, as a decimal string that reads back to it) for tests and tools.
import { h, visiblePiece } from '../format.mjs';

export class ChipList {
  /**
   * @param {HTMLElement} root  the list element
   * @param {object} o  axis ('source' | 'target'), label (piece → text), weightLabel (show the number)
   */
  constructor(root, { axis, label = (p) => p, weightLabel = false, className = 'tok' }) {
    this.root = root;
    this.axis = axis;
    this.label = label;
    this.weightLabel = weightLabel;
    this.className = className;
    this.chips = [];
    this.ids = null;
    this.query = null;
  }

  /**
   * Makes the chips match `tokens` ({ids, pieces, origin?}), appending when only new ones came: at
   * most `limit` new chips a call. True once every token has its chip.
   */
  sync(tokens, limit = Infinity) {
    const n = tokens.ids.length;
    const same = this.ids === tokens.ids;
    if (!same || n < this.chips.length) {
      this.root.replaceChildren();
      this.chips = [];
      this.ids = tokens.ids;
      this.query = null;  // the chip marked as the focused query (paint)
    }
    const end = Math.min(n, this.chips.length + limit);
    for (let i = this.chips.length; i < end; i++) {
      const piece = tokens.pieces[i] ?? '';
      const chip = h('li', {
        class: this.className,
        role: 'option',
        'aria-selected': 'false',
        dataset: { axis: this.axis, i: String(i), origin: tokens.origin?.[i] ?? 'source' },
        title: `#${i} ${visiblePiece(piece)} (id ${tokens.ids[i]})`,
      });
      chip.append(h('span', { class: 'tok-text', text: this.label(piece) }));
      if (this.weightLabel) chip.append(h('span', { class: 'tok-weight', 'aria-hidden': 'true' }));
      this.root.append(chip);
      this.chips.push(chip);
    }
    return end === n;
  }

  /**
   * Colours the chips by their weight (null: no weights shown) and marks the focused query. rows
   * ({ from, to }, chip indices, `to` excluded): only those chips get their weights; the others keep
   * what they showed (a view streaming tokens repaints the rows on screen, and every row once done).
   * At most `limit` chips change a call; true once every chip of `rows` shows its weight.
   */
  paint(focus, scale, queryIndex, rows = null, limit = Infinity) {
    if (this.query !== queryIndex) {
      for (const i of [this.query, queryIndex]) {
        const chip = this.chips[i];
        if (!chip) continue;
        const isQuery = queryIndex === i;
        chip.classList.toggle('is-query', isQuery);
        chip.setAttribute('aria-selected', String(isQuery));
      }
      this.query = this.chips[queryIndex] ? queryIndex : null;  // a chip still to come is marked when it is
    }
    const from = rows ? Math.max(0, rows.from) : 0;
    const to = rows ? Math.min(this.chips.length, rows.to) : this.chips.length;
    let left = limit;
    for (let i = from; i < to; i++) {
      const chip = this.chips[i];
      const shown = !focus || focus.missing || i >= focus.weights.length
        ? paintChip(chip, null, scale, this.weightLabel)
        : paintChip(chip, focus.masked[i] ? null : focus.weights[i], scale, this.weightLabel, focus.masked[i]);
      if (!shown && --left <= 0 && i + 1 < to) return false;
    }
    return true;
  }
}

// Shows weight w on the chip; true when it already did (nothing changed).
function paintChip(chip, w, scale, withNumber, masked = false) {
  const weight = w === null ? (masked ? '0' : '') : String(w);
  const key = `${weight}|${scale.key}`;
  if (chip.paintKey === key) return true;
  chip.paintKey = key;
  chip.dataset.weight = weight;
  if (masked) chip.dataset.masked = '';
  else delete chip.dataset.masked;
  if (w === null) {
    chip.style.removeProperty('background-color');
    chip.style.removeProperty('color');
  } else {
    const p = scale.position(w);
    chip.style.backgroundColor = scale.css(w, p);
    if (p > 0.45) chip.style.color = scale.ink(w);
    else chip.style.removeProperty('color');
  }
  if (withNumber) chip.lastChild.textContent = w === null ? '' : w > 0 && w < 0.0005 ? '<.001' : w.toFixed(3);
  return false;
}
