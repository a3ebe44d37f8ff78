"""Extra evaluation of the shipped date-normalizer (models/date-normalizer/) on larger held-out sets:
exact match and validity (every output must be a YYYY-MM-DD date that exists, leap years included),
with batched greedy decoding with padding masks (the same function as the unbatched decoding up to
float rounding).

    /usr/bin/python3 models/train/eval_date.py [--n 5000] [--seed 777]

Sets: --n held-out samples of every layout; --n held-out US/EU numeric samples (year last,
month-first, or day-first with a day > 12); the hand-picked canonical cases of date_data.CANONICAL.
Also reported, not required: how many outputs are valid dates for --n_junk random printable strings
(not dates at all; the model still answers with something date-shaped).
"""
import argparse
import collections
import json
import os
import random

import torch

import date_data
from common import MODELS_DIR, safetensors_io, setup_torch
from seq2seq import Seq2Seq
from train_date import EOS, batch_tensors, batched_greedy, date_tokenizer, numeric_group


def decode_all(model, tok, sources, bs=250):
    """-> output texts (the ids between <s> and </s>; '' + raw ids when no </s> within 11 steps)."""
    outs = []
    for k in range(0, len(sources), bs):
        src, _ = batch_tensors(tok, [{"source": s, "target": ""} for s in sources[k:k + bs]])
        for row in batched_greedy(model, src, steps=16).tolist():
            body = row[1:row.index(EOS)] if EOS in row else row[1:]
            outs.append(tok.decode(body, skip_special=False))
    return outs


def report(name, samples, outs, group):
    ok = sum(o == s["target"] for s, o in zip(samples, outs))
    valid = sum(date_data.valid_iso(o) for o in outs)
    groups = collections.defaultdict(lambda: [0, 0, 0])
    for s, o in zip(samples, outs):
        g = groups[group(s)]
        g[0] += o == s["target"]
        g[1] += date_data.valid_iso(o)
        g[2] += 1
    print(f"{name}: exact match {ok}/{len(samples)} = {ok / len(samples):.4f}; "
          f"valid dates {valid}/{len(samples)} = {valid / len(samples):.4f}")
    for k, (a, v, n) in sorted(groups.items()):
        print(f"    {k:28} exact {a}/{n}   valid {v}/{n}")
    for s, o in [(s, o) for s, o in zip(samples, outs) if o != s["target"]][:20]:
        print(f"    error: {s['source']!r} -> {o!r} (want {s['target']}{'' if date_data.valid_iso(o) else '; NOT A VALID DATE'})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--n_junk", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=777)
    args = ap.parse_args()
    setup_torch(1)
    torch.set_grad_enabled(False)
    folder = os.path.join(MODELS_DIR, "date-normalizer")
    cfg = json.load(open(os.path.join(folder, "config.json")))
    model = Seq2Seq(cfg, dropout=0.0)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in safetensors_io.load_file(os.path.join(folder, "model.safetensors")).items()})
    model.eval()
    _, tok = date_tokenizer()

    general = date_data.make_set(args.seed, args.n, holdout=True)
    report("held-out, every layout", general, decode_all(model, tok, [s["source"] for s in general]), lambda s: s["kind"])
    numeric = date_data.make_set(args.seed + 1, args.n, holdout=True, kinds=date_data.NUMERIC_KINDS)
    report("held-out, US/EU numeric (year last)", numeric, decode_all(model, tok, [s["source"] for s in numeric]),
           numeric_group)
    canonical = [{"source": a, "target": b} for a, b in date_data.canonical_pairs()]
    outs = decode_all(model, tok, [s["source"] for s in canonical])
    report("canonical cases", canonical, outs, lambda s: "canonical")
    for s, o in zip(canonical, outs):
        print(f"    {s['source']:>12} -> {o}")

    rng = random.Random(args.seed + 2)
    junk = ["".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(1, 40))) for _ in range(args.n_junk)]
    outs = decode_all(model, tok, junk)
    valid = sum(date_data.valid_iso(o) for o in outs)
    print(f"not dates ({args.n_junk} random printable strings, informational): {valid}/{len(junk)} outputs are valid dates; "
          f"invalid examples: {[(j, o) for j, o in zip(junk, outs) if not date_data.valid_iso(o)][:5]}")


if __name__ == "__main__":
    main()
