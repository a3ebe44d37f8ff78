"""Train kjv-gpt2: corpus -> byte-level BPE -> GPT-2 -> checkpoint in models/_work/kjv/.

    nice -n 15 /usr/bin/python3 models/train/train_kjv.py            # the shipped model
    nice -n 15 /usr/bin/python3 models/train/train_kjv.py --steps 20 --tag smoke   # quick check

Then `export_kjv.py` writes models/kjv-gpt2/ and the test fixtures from the checkpoint.
Deterministic for a given --seed (single thread, torch.use_deterministic_algorithms).
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch

from bpe import ByteLevelBPE, train_bpe, write_tokenizer_json
from common import WORK, seed_everything, setup_torch, state_sha, write_json
from gpt2 import GPT2LMHeadModel
import kjv_data

EOT = "<|endoftext|>"


def build_tokens(vocab_size, outdir):
    train_docs, valid_docs, stats = kjv_data.load_split()
    vocab, merges = train_bpe(train_docs, vocab_size, special_tokens=(EOT,), log=None)
    tok = ByteLevelBPE(vocab, merges, special_tokens=(EOT,))
    eot = vocab[EOT]

    def stream(docs):
        ids = []
        for d in docs:
            ids.append(eot)
            ids.extend(tok.encode(d))
        ids.append(eot)
        return np.array(ids, dtype=np.int64)

    tr, va = stream(train_docs), stream(valid_docs)
    write_tokenizer_json(os.path.join(outdir, "tokenizer.json"), vocab, merges, [EOT])
    stats.update(train_tokens=int(len(tr)), valid_tokens=int(len(va)), vocab_size=len(vocab), merges=len(merges))
    return tok, tr, va, stats


@torch.no_grad()
def evaluate(model, data, block, max_windows=None):
    """Mean next-token cross-entropy over non-overlapping windows of `block` predictions."""
    model.eval()
    n = (len(data) - 1) // block
    if max_windows:
        n = min(n, max_windows)
    total, count = 0.0, 0
    for s in range(0, n, 16):
        idx = [(i * block) for i in range(s, min(n, s + 16))]
        x = torch.stack([torch.from_numpy(data[i:i + block]) for i in idx])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block]) for i in idx])
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum")
        total += loss.item()
        count += y.numel()
    model.train()
    return total / count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--n_embd", type=int, default=192)
    ap.add_argument("--n_layer", type=int, default=4)
    ap.add_argument("--n_head", type=int, default=6)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--eval_every", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tag", default="main")
    args = ap.parse_args()

    setup_torch(args.threads)
    seed_everything(args.seed)
    outdir = os.path.join(WORK, "kjv", args.tag)
    os.makedirs(outdir, exist_ok=True)
    logf = open(os.path.join(outdir, "train.log"), "w")

    def log(*a):
        s = " ".join(str(x) for x in a)
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    tok, tr, va, stats = build_tokens(args.vocab, outdir)
    log("data", json.dumps(stats))
    cfg = {"vocab_size": stats["vocab_size"], "n_positions": args.block, "n_embd": args.n_embd,
           "n_layer": args.n_layer, "n_head": args.n_head, "n_inner": None, "layer_norm_epsilon": 1e-5,
           "resid_pdrop": args.dropout, "embd_pdrop": args.dropout}
    model = GPT2LMHeadModel(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"params {n_params} ({n_params * 4 / 1e6:.2f} MB f32)")

    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "wpe" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "wpe" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))

    gen = torch.Generator().manual_seed(args.seed)
    tr_t = torch.from_numpy(tr)
    offs = torch.arange(args.block + 1)
    t0 = time.time()
    history = []
    for step in range(args.steps):
        starts = torch.randint(0, len(tr) - args.block - 1, (args.batch,), generator=gen)
        chunk = tr_t[starts[:, None] + offs[None]]
        x, y = chunk[:, :-1], chunk[:, 1:]
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0:
            log(f"step {step} loss {loss.item():.4f} lr {lr_at(step):.2e} {time.time() - t0:.0f}s")
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            vl = evaluate(model, va, args.block)
            history.append({"step": step + 1, "valid_loss": vl, "seconds": time.time() - t0})
            log(f"eval step {step + 1} valid_loss {vl:.4f} ppl {math.exp(vl):.2f}")
    train_seconds = time.time() - t0
    model.eval()
    vl = evaluate(model, va, args.block)
    trl = evaluate(model, tr, args.block, max_windows=len(va) // args.block + 1)
    result = {"args": vars(args), "config": cfg, "params": n_params, "data": stats, "train_seconds": train_seconds,
              "valid_loss": vl, "valid_ppl": math.exp(vl), "train_loss_sample": trl, "history": history,
              "state_sha256": state_sha(model), "tokens_seen": args.steps * args.batch * args.block}
    log(json.dumps({k: v for k, v in result.items() if k != "history"}))
    torch.save({"config": cfg, "state_dict": model.state_dict()}, os.path.join(outdir, "ckpt.pt"))
    write_json(os.path.join(outdir, "result.json"), result)


if __name__ == "__main__":
    main()
