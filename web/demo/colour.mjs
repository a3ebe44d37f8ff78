// Colour scales for attention weights: perceptually uniform and readable with colour-vision
// deficiencies (viridis, cividis, magma — no red–green), as 256-entry lookup tables.
//
// A weight w ∈ [0, 1] is first mapped by the contrast curve (linear, or √ which spreads the small
// weights most heads are made of), then looked up. Both are fixed functions of w, so a pixel drawn
// once never needs redrawing while tokens stream in.

// Ten evenly spaced stops of each scale (as matplotlib / viridisLite define them), interpolated.
const STOPS = {
  viridis: ['#440154', '#482878', '#3e4a89', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6dcd59', '#b4de2c', '#fde725'],
  cividis: ['#00204d', '#00336f', '#39486b', '#575c6d', '#707173', '#8a8779', '#a69d75', '#c4b56c', '#e4cf5b', '#ffea46'],
  magma: ['#000004', '#180f3e', '#451077', '#721f81', '#9f2f7f', '#cd4071', '#f1605d', '#fd9567', '#fec98d', '#fcfdbf'],
};

export const SCALES = Object.keys(STOPS);
export const CONTRASTS = { sqrt: '√ weight', linear: 'linear' };

const hex = (s) => [1, 3, 5].map((i) => parseInt(s.slice(i, i + 2), 16));

function buildLut(stops) {
  const rgb = stops.map(hex);
  const lut = new Uint8ClampedArray(256 * 4);
  for (let i = 0; i < 256; i++) {
    const x = (i / 255) * (rgb.length - 1);
    const j = Math.min(rgb.length - 2, Math.floor(x));
    const t = x - j;
    for (let c = 0; c < 3; c++) lut[i * 4 + c] = Math.round(rgb[j][c] * (1 - t) + rgb[j + 1][c] * t);
    lut[i * 4 + 3] = 255;
  }
  return lut;
}

const LUTS = Object.fromEntries(Object.entries(STOPS).map(([k, v]) => [k, buildLut(v)]));

/** A colour scale: weight → LUT index / CSS colour, with a contrast curve. */
export class ColourScale {
  constructor(name = 'viridis', contrast = 'sqrt') {
    if (!LUTS[name]) throw new RangeError(`unknown colour scale ${name}`);
    this.name = name;
    this.contrast = contrast;
    this.lut = LUTS[name];
  }

  get key() {
    return `${this.name}/${this.contrast}`;
  }

  /** Weight → position on the scale, 0 … 1. */
  position(w) {
    const x = w > 0 ? (w < 1 ? w : 1) : 0;
    return this.contrast === 'sqrt' ? Math.sqrt(x) : x;
  }

  /** Inverse of position(): the weight shown at a point of the legend. */
  weightAt(p) {
    return this.contrast === 'sqrt' ? p * p : p;
  }

  index(w) {
    return Math.round(this.position(w) * 255);
  }

  rgb(w) {
    const i = this.index(w) * 4;
    return [this.lut[i], this.lut[i + 1], this.lut[i + 2]];
  }

  css(w, alpha = 1) {
    const [r, g, b] = this.rgb(w);
    return alpha >= 1 ? `rgb(${r} ${g} ${b})` : `rgb(${r} ${g} ${b} / ${alpha.toFixed(3)})`;
  }

  /** Text colour that stays readable on css(w): dark on the light end, light on the dark end. */
  ink(w) {
    const [r, g, b] = this.rgb(w);
    const lum = 0.2126 * (r / 255) ** 2.2 + 0.7152 * (g / 255) ** 2.2 + 0.0722 * (b / 255) ** 2.2;
    return lum > 0.28 ? '#111' : '#fff';
  }

  /** Legend ticks: round weights spread along the bar. */
  ticks() {
    return this.contrast === 'sqrt' ? [0, 0.01, 0.1, 0.25, 0.5, 1] : [0, 0.25, 0.5, 0.75, 1];
  }
}

/**
 * Draws a horizontal legend (bar + ticks + caption) into a canvas of the given CSS size. `ink` and
 * `muted` are the page's text colours.
 */
export function drawLegend(canvas, scale, { width = 240, height = 38, ink = '#222', font = '11px system-ui, sans-serif' } = {}) {
  const dpr = globalThis.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, height);
  const pad = 8;
  const barW = width - 2 * pad;
  const barH = 12;
  const img = g.createImageData(256, 1);
  img.data.set(scale.lut);
  const strip = document.createElement('canvas');
  strip.width = 256;
  strip.height = 1;
  strip.getContext('2d').putImageData(img, 0, 0);
  g.imageSmoothingEnabled = true;
  g.drawImage(strip, pad, 2, barW, barH);
  g.fillStyle = ink;
  g.strokeStyle = ink;
  g.font = font;
  g.textBaseline = 'top';
  for (const t of scale.ticks()) {
    const x = pad + scale.position(t) * barW;
    g.globalAlpha = 0.6;
    g.fillRect(Math.round(x) - 0.5, 2 + barH, 1, 4);
    g.globalAlpha = 1;
    g.textAlign = t === 0 ? 'left' : t === 1 ? 'right' : 'center';
    g.fillText(String(t), Math.min(Math.max(x, pad), pad + barW), 2 + barH + 6);
  }
}
