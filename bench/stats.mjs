// What the benchmarks summarize their runs with.

/** The median of the finite values of xs (the mean of the middle two for an even count); null if none. */
export function median(xs) {
  const s = xs.filter((x) => x != null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}
