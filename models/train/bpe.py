"""Byte-level BPE: a small trainer, the GPT-2 encoder/decoder, and Hugging Face tokenizer.json export.

Everything here follows GPT-2's scheme (and so Hugging Face `tokenizers`' ByteLevel + BPE):
  * text is split into pre-tokens with the GPT-2 regex,
  * each pre-token's UTF-8 bytes are mapped to printable unicode symbols (`bytes_to_unicode`),
  * merges are applied by rank: repeatedly merge the adjacent pair with the lowest rank, all its
    occurrences left to right, until no ranked pair is left (GPT-2's `bpe()`).

The trainer is deterministic: at each step it merges the most frequent pair, ties broken by the
smallest (left, right) symbol pair in Python string order.
"""
import collections
import json

try:
    import regex as re  # python3-regex: needed for \p{L} / \p{N}
except ImportError:  # pragma: no cover
    raise SystemExit("needs Debian's python3-regex (apt-get install -y python3-regex)")

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_PAT = re.compile(GPT2_PATTERN)


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode symbol table (insertion order = GPT-2 id order)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {v: k for k, v in BYTE_ENCODER.items()}


def pretokenize(text):
    return _PAT.findall(text)


def to_symbols(pretoken):
    return "".join(BYTE_ENCODER[b] for b in pretoken.encode("utf-8"))


def train_bpe(texts, vocab_size, special_tokens=("<|endoftext|>",), min_frequency=2, log=print):
    """Train byte-level BPE on an iterable of strings.

    Returns (vocab: {symbol: id}, merges: [(a, b), ...]). Ids: the 256 byte symbols in GPT-2 order,
    then one id per merge in merge order, then the special tokens.
    """
    word_counts = collections.Counter()
    for t in texts:
        for p in pretokenize(t):
            word_counts[to_symbols(p)] += 1
    words = [list(w) for w in sorted(word_counts)]  # sorted: deterministic word order
    counts = [word_counts["".join(w)] for w in words]

    vocab = {}
    for b, s in BYTE_ENCODER.items():
        vocab[s] = len(vocab)
    n_merges = vocab_size - len(vocab) - len(special_tokens)

    pair_counts = collections.Counter()
    where = collections.defaultdict(set)  # pair -> indices of words containing it
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_counts[(a, b)] += counts[i]
            where[(a, b)].add(i)

    merges = []
    while len(merges) < n_merges:
        if not pair_counts:
            break
        best_count = max(pair_counts.values())
        if best_count < min_frequency:
            break
        best = min(p for p, c in pair_counts.items() if c == best_count)
        a, b = best
        new = a + b
        merges.append(best)
        vocab[new] = len(vocab)
        for i in sorted(where.pop(best, ())):
            w = words[i]
            c = counts[i]
            # remove this word's old pair counts
            for p in zip(w, w[1:]):
                pair_counts[p] -= c
                if pair_counts[p] <= 0:
                    del pair_counts[p]
            out = []
            j = 0
            while j < len(w):
                if j < len(w) - 1 and w[j] == a and w[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += c
                where[p].add(i)
        pair_counts.pop(best, None)
        if log and len(merges) % 250 == 0:
            log(f"  merge {len(merges)}/{n_merges}: {a!r}+{b!r} (count {best_count})")
    for s in special_tokens:
        vocab[s] = len(vocab)
    return vocab, merges


class ByteLevelBPE:
    """GPT-2 style encoder for a vocab + merges (the semantics an HF tokenizer.json of this shape has)."""

    def __init__(self, vocab, merges, special_tokens=(), unk_token=None):
        self.vocab = dict(vocab)
        self.inv = {i: s for s, i in self.vocab.items()}
        self.ranks = {tuple(m): r for r, m in enumerate(merges)}
        self.special = list(special_tokens)
        self.unk_token = unk_token
        self._cache = {}
        self._special_re = re.compile("(" + "|".join(re.escape(s) for s in self.special) + ")") if self.special else None

    def _bpe(self, sym):
        if sym in self._cache:
            return self._cache[sym]
        word = list(sym)
        while len(word) > 1:
            best, best_rank = None, None
            for p in zip(word, word[1:]):
                r = self.ranks.get(p)
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = p, r
            if best is None:
                break
            out, j = [], 0
            while j < len(word):
                if j < len(word) - 1 and (word[j], word[j + 1]) == best:
                    out.append(word[j] + word[j + 1])
                    j += 2
                else:
                    out.append(word[j])
                    j += 1
            word = out
        self._cache[sym] = word
        return word

    def _encode_plain(self, text):
        ids = []
        for p in pretokenize(text):
            for piece in self._bpe(to_symbols(p)):
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                elif self.unk_token is not None:
                    ids.append(self.vocab[self.unk_token])
                else:
                    raise KeyError(f"symbol {piece!r} not in vocab and no unk token")
        return ids

    def encode(self, text):
        """Special tokens written literally in `text` become their ids (as HF added tokens do)."""
        if not self._special_re:
            return self._encode_plain(text)
        ids = []
        for part in self._special_re.split(text):
            if part in self.special:
                ids.append(self.vocab[part])
            elif part:
                ids.extend(self._encode_plain(part))
        return ids

    def decode(self, ids, skip_special=False):
        out = []
        buf = []
        for i in ids:
            s = self.inv[int(i)]
            if s in self.special or s == self.unk_token:
                if buf:
                    out.append(bytearray(BYTE_DECODER[c] for c in "".join(buf)).decode("utf-8", errors="replace"))
                    buf = []
                if not skip_special:
                    out.append(s)
            else:
                buf.append(s)
        if buf:
            out.append(bytearray(BYTE_DECODER[c] for c in "".join(buf)).decode("utf-8", errors="replace"))
        return "".join(out)


def _added(i, s, normalized):
    return {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": normalized, "special": True}


def tokenizer_json(vocab, merges, special_tokens, unk_token=None):
    """A Hugging Face tokenizers `tokenizer.json` (GPT-2 layout: ByteLevel pre-tokenizer/decoder, BPE model)."""
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_added(vocab[s], s, False) for s in special_tokens],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk_token,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
            "merges": [f"{a} {b}" for a, b in merges],
        },
    }


def write_tokenizer_json(path, vocab, merges, special_tokens, unk_token=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges, special_tokens, unk_token), f, ensure_ascii=False, indent=1)
        f.write("\n")


def load_tokenizer_json(path):
    """Independent reader: tokenizer.json -> ByteLevelBPE (used by the round-trip checks)."""
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    assert tj["model"]["type"] == "BPE" and tj["pre_tokenizer"]["type"] == "ByteLevel"
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in tj["model"]["merges"]]
    vocab = dict(tj["model"]["vocab"])
    for t in tj["added_tokens"]:
        vocab[t["content"]] = t["id"]
    specials = [t["content"] for t in tj["added_tokens"]]
    return ByteLevelBPE(vocab, merges, special_tokens=specials, unk_token=tj["model"]["unk_token"])
