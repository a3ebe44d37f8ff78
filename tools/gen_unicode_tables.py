#!/usr/bin/python3
"""Generates src/tokenizers/unicode_tables.h: compact Unicode tables for the tokenizers.

Run with Debian's interpreter (its unicodedata is the one the committed header names):
    /usr/bin/python3 tools/gen_unicode_tables.py > src/tokenizers/unicode_tables.h

Tables (all sorted, searched by binary search in src/tokenizers/unicode.cpp):
  kCategoryFirst   general category of every code point, as ranges: the low 16 bits of each range's
  kCategoryIndex   first code point, and its category index (a byte). kCategoryPlaneStart[p] is the
  kCategoryPlaneStart  index of the first range starting in plane p (p = 0..17; [17] = the count).
  kLowerRuns       simple lowercase mappings grouped into runs (first, last, stride, delta):
                   cp in [first, last] with (cp - first) % stride == 0 maps to cp + delta.
                   The only multi-code-point lowercase (U+0130) is handled in unicode.cpp.
  kCombiningClass  canonical combining class of every code point, as ranges: (first << 8) | ccc.
  kDecompRuns      single-level decompositions that map consecutive code points to one code point
                   each with a constant offset (fullwidth forms, mathematical alphanumerics, ...), as
                   pairs (first << 1 | compat, length << 20 | (delta & 0xFFFFF)).
  kDecompKeys      the other single-level decompositions (UnicodeData.txt field 5), sorted by code
                   point, as its low 16 bits; kDecompPlaneStart[p] is the index of the first entry of
                   plane p (planes 0-3). kDecompFlags: 2 bits per entry (bit 0 primary_composite: the
                   two-code-point canonical decomposition recomposes under NFC, so the composition
                   table is built from these entries at run time; bit 1 compat), 4 entries a byte.
  kDecompLengths   the length of each mapping in UTF-16 units, a byte per entry; the mapping
  kDecompPool      of entry i starts in kDecompPool at kDecompAnchors[i / 64] plus the lengths of the
  kDecompAnchors   entries before it in its group of 64. Decompositions are applied recursively.
  kPythonExtras    what Python's str methods count beyond the general categories unicode.cpp derives
                   them from, as ranges (first << 9 | (length - 1) << 2 | kind), sorted: kind 0
                   Case_Ignorable beyond Mn Me Cf Lm Sk, kind 1 Cased (not case-ignorable) beyond
                   Lu Ll Lt (str.lower()'s Final_Sigma context), kind 2 str.isdigit() beyond Nd. Each
                   set is read off str.lower() / str.isdigit() themselves.
"""
import sys
import unicodedata

CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
              "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs",
              "Co", "Cn"]
MAX_CP = 0x110000


def category_ranges():
    index = {c: i for i, c in enumerate(CATEGORIES)}
    out, prev = [], None
    for cp in range(MAX_CP):
        cat = index[unicodedata.category(chr(cp))]
        if cat != prev:
            out.append((cp << 5) | cat)
            prev = cat
    return out


def lower_runs():
    pairs = []
    for cp in range(MAX_CP):
        low = chr(cp).lower()
        if len(low) == 1 and ord(low) != cp:
            pairs.append((cp, ord(low) - cp))
    runs = []  # [first, last, stride, delta]
    for cp, delta in pairs:
        if runs:
            first, last, stride, d = runs[-1]
            step = cp - last
            if d == delta and step in (1, 2) and (first == last or step == stride):
                runs[-1] = [first, cp, step, d]
                continue
        runs.append([cp, cp, 1, delta])
    return runs


def combining_class_ranges():
    out, prev = [], None
    for cp in range(MAX_CP):
        ccc = unicodedata.combining(chr(cp))
        if ccc != prev:
            out.append((cp << 8) | ccc)
            prev = ccc
    return out


def decompositions():
    """Single-level decompositions: (cp, compat, [code points]), Hangul syllables excluded."""
    out = []
    for cp in range(MAX_CP):
        d = unicodedata.decomposition(chr(cp))
        if not d or 0xAC00 <= cp <= 0xD7A3:
            continue
        parts = d.split()
        compat = parts[0].startswith("<")
        if compat:
            parts = parts[1:]
        out.append((cp, compat, [int(p, 16) for p in parts]))
    return out


def decomposition_tables():
    runs, rest = [], []
    singles = []  # candidate runs: [first, last, delta, compat]
    for cp, compat, mapping in decompositions():
        if len(mapping) == 1:
            r = singles[-1] if singles else None
            if r and r[1] == cp - 1 and r[2] == mapping[0] - cp and r[3] == compat:
                r[1] = cp
                continue
            singles.append([cp, cp, mapping[0] - cp, compat])
        else:
            rest.append((cp, compat, mapping))
    for first, last, delta, compat in singles:
        if last - first >= 2:
            assert -(1 << 19) <= delta < (1 << 19) and last - first + 1 < (1 << 12)
            runs.append((first, compat, last - first + 1, delta))
        else:
            for cp in range(first, last + 1):
                rest.append((cp, compat, [cp + delta]))
    rest.sort()
    keys, offsets, pool = [], [0], []
    for cp, compat, mapping in rest:
        text = "".join(chr(c) for c in mapping)
        primary = (not compat and len(mapping) == 2 and unicodedata.normalize("NFC", text) == chr(cp))
        keys.append((cp << 2) | (int(compat) << 1) | int(primary))
        units = text.encode("utf-16-le")
        pool.extend(int.from_bytes(units[i:i + 2], "little") for i in range(0, len(units), 2))
        offsets.append(len(pool))
    assert len(pool) < 65536
    run_words = []
    for first, compat, length, delta in runs:
        run_words += [(first << 1) | int(compat), (length << 20) | (delta & 0xFFFFF)]
    cps = [k >> 2 for k in keys]
    assert all(c < 0x40000 for c in cps)
    plane_start = [next((i for i, c in enumerate(cps) if c >> 16 >= p), len(cps)) for p in range(5)]
    low = [c & 0xFFFF for c in cps]
    flags = [0] * ((len(keys) + 3) // 4)
    for i, k in enumerate(keys):
        flags[i // 4] |= (k & 3) << (2 * (i % 4))
    lengths = [offsets[i + 1] - offsets[i] for i in range(len(keys))]
    assert all(0 < n < 256 for n in lengths)
    packed = lengths
    anchors = [offsets[i] for i in range(0, len(keys), 64)]
    return run_words, plane_start, low, flags, packed, anchors, pool


def python_extras():
    """Ranges where Python's str methods differ from the category rule unicode.cpp applies."""
    sigma, final = "\u03a3", "\u03c2"
    ignorable_cats, cased_cats = ("Mn", "Me", "Cf", "Lm", "Sk"), ("Lu", "Ll", "Lt")
    sets = ([], [], [])
    for cp in range(MAX_CP):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        cat = unicodedata.category(c)
        # CPython's handle_capital_sigma skips case-ignorable code points before the sigma, then
        # wants a cased one: "cΣ" is final iff c is cased and not ignorable; "AcΣ" iff c is either
        alone, after_a = (c + sigma).lower()[-1] == final, ("A" + c + sigma).lower()[-1] == final
        ignorable, cased = after_a and not alone, alone
        if ignorable != (cat in ignorable_cats):
            assert ignorable, hex(cp)
            sets[0].append(cp)
        if cased != (cat in cased_cats and not ignorable):
            assert cased, hex(cp)
            sets[1].append(cp)
        if c.isdigit() != (cat == "Nd"):
            assert c.isdigit(), hex(cp)
            sets[2].append(cp)
    assert not (set(sets[0]) & set(sets[1]) or set(sets[0]) & set(sets[2]) or set(sets[1]) & set(sets[2]))  # one kind each
    out = []
    for kind, cps in enumerate(sets):
        for cp in cps:
            if out and out[-1][2] == kind and out[-1][1] == cp - 1 and out[-1][1] - out[-1][0] < 127:
                out[-1][1] = cp
            else:
                out.append([cp, cp, kind])
    out.sort()
    return [(a << 9) | ((b - a) << 2) | k for a, b, k in out]


def emit_array(name, ctype, values, per_line=8):
    lines = [f"inline constexpr {ctype} {name}[] = {{"]
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(values[i:i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines)


def main():
    cats = category_ranges()
    runs = lower_runs()
    ccc = combining_class_ranges()
    run_words, plane_start, dkeys, dflags, dlengths, danchors, dpool = decomposition_tables()
    out = [
        "// GENERATED by tools/gen_unicode_tables.py from Python "
        f"{sys.version.split()[0]}'s unicodedata (Unicode {unicodedata.unidata_version}). Do not edit.",
        "// Included only by src/tokenizers/unicode.cpp.",
        "#pragma once",
        "#include <cstdint>",
        "",
        "namespace attnlens::unicode::tables {",
        "",
        f'inline constexpr const char* kUnicodeVersion = "{unicodedata.unidata_version}";',
        "// Category index order (matches unicode::Category).",
        "// " + " ".join(CATEGORIES),
        emit_array("kCategoryPlaneStart", "uint16_t", [str(sum(1 for v in cats if (v >> 5) >> 16 < p)) for p in range(18)], 18),
        emit_array("kCategoryFirst", "uint16_t", [f"0x{(v >> 5) & 0xFFFF:x}" for v in cats], 12),
        emit_array("kCategoryIndex", "uint8_t", [str(v & 31) for v in cats], 24),
        "",
        "struct LowerRun { uint32_t first, last, stride; int32_t delta; };",
        emit_array("kLowerRuns", "LowerRun", [f"{{0x{a:x}, 0x{b:x}, {s}, {d}}}" for a, b, s, d in runs], 4),
        "",
        emit_array("kCombiningClass", "uint32_t", [f"0x{v:x}" for v in ccc]),
        emit_array("kDecompRuns", "uint32_t", [f"0x{v:x}" for v in run_words]),
        emit_array("kDecompPlaneStart", "uint16_t", [str(v) for v in plane_start]),
        emit_array("kDecompKeys", "uint16_t", [f"0x{v:x}" for v in dkeys], 12),
        emit_array("kDecompFlags", "uint8_t", [f"0x{v:x}" for v in dflags], 16),
        emit_array("kDecompLengths", "uint8_t", [str(v) for v in dlengths], 24),
        emit_array("kDecompAnchors", "uint16_t", [str(v) for v in danchors], 16),
        emit_array("kDecompPool", "uint16_t", [f"0x{v:x}" for v in dpool], 12),
        emit_array("kPythonExtras", "uint32_t", [f"0x{v:x}" for v in python_extras()]),
        "",
        "}  // namespace attnlens::unicode::tables",
        "",
    ]
    sys.stdout.write("\n".join(out))
    print(f"categories {len(cats)} ranges, lower {len(runs)} runs, ccc {len(ccc)} ranges, decompositions {len(run_words) // 2} runs + "
          f"{len(dkeys)} entries ({len(dpool)} UTF-16 units)", file=sys.stderr)


if __name__ == "__main__":
    main()
