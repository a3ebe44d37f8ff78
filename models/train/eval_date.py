"""Extra evaluation of the shipped date-normalizer on a larger held-out set (batched greedy decoding
with padding masks; the same function as the unbatched decoding up to float rounding).

    /usr/bin/python3 models/train/eval_date.py [--n 5000] [--seed 777]
"""
import argparse
import collections
import os

import torch

import date_data
from common import MODELS_DIR, safetensors_io, setup_torch
from seq2seq import Seq2Seq
from train_date import EOS, batch_tensors, batched_greedy, date_tokenizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=777)
    args = ap.parse_args()
    setup_torch(1)
    torch.set_grad_enabled(False)
    import json
    folder = os.path.join(MODELS_DIR, "date-normalizer")
    cfg = json.load(open(os.path.join(folder, "config.json")))
    model = Seq2Seq(cfg, dropout=0.0)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in safetensors_io.load_file(os.path.join(folder, "model.safetensors")).items()})
    model.eval()
    _, tok = date_tokenizer()
    samples = date_data.make_set(args.seed, args.n, holdout=True)
    ok, per_kind, errors = 0, collections.Counter(), []
    for k in range(0, len(samples), 250):
        chunk = samples[k:k + 250]
        src, tgt = batch_tensors(tok, chunk)
        out = batched_greedy(model, src)
        for s, o in zip(chunk, out.tolist()):
            good = o[1:] == tok.encode(s["target"]) + [EOS]
            ok += good
            if not good:
                per_kind[s["kind"]] += 1
                errors.append((s["source"], s["target"], tok.decode(o[1:])))
    print(f"held-out exact match {ok}/{len(samples)} = {ok / len(samples):.4f}; errors by layout {dict(per_kind)}")
    for e in errors[:20]:
        print("  ", e)


if __name__ == "__main__":
    main()
