"""Train date-normalizer on synthetic data; evaluate exact match, validity (every output must be a
date that exists) and cross-attention alignment.

    nice -n 15 /usr/bin/python3 models/train/train_date.py             # the shipped model
    nice -n 15 /usr/bin/python3 models/train/train_date.py --steps 30 --tag smoke

Writes models/_work/date/<tag>/{ckpt.pt,result.json,test_set.json,numeric_test_set.json,tokenizer.json,train.log};
`export_date.py` turns that into models/date-normalizer/ and the test fixtures.
"""
import argparse
import json
import math
import os
import random
import time

import torch
import torch.nn.functional as F

import date_data
from bpe import BYTE_ENCODER, ByteLevelBPE, write_tokenizer_json
from common import WORK, seed_everything, setup_torch, state_sha, write_json
from seq2seq import Seq2Seq, reference_forward

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
PAD, BOS, EOS, UNK = 0, 1, 2, 3


def date_tokenizer():
    """Character-level tokenizer as byte-level BPE with no merges: specials, then printable ASCII."""
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for b in range(0x20, 0x7F):
        vocab[BYTE_ENCODER[b]] = len(vocab)
    return vocab, ByteLevelBPE(vocab, [], special_tokens=SPECIALS, unk_token="<unk>")


def model_config(args, vocab_size):
    return {"architectures": ["AttnLensSeq2Seq"], "model_type": "attnlens-seq2seq",
            "d_model": args.d_model, "n_heads": args.n_heads, "d_ff": args.d_ff,
            "encoder_layers": args.enc_layers, "decoder_layers": args.dec_layers,
            "vocab_size": vocab_size, "max_position_embeddings": 64, "norm_first": False, "activation": "relu",
            "layer_norm_eps": 1e-5, "position_encoding": "sinusoidal", "scale_embeddings": True,
            "tie_word_embeddings": True, "final_layer_norm": True,
            "pad_token_id": PAD, "bos_token_id": BOS, "eos_token_id": EOS, "decoder_start_token_id": BOS,
            "source_suffix_eos": True}


def encode_source(tok, text):
    return tok.encode(text) + [EOS]


def encode_target(tok, iso):
    return [BOS] + tok.encode(iso) + [EOS]


def batch_tensors(tok, samples):
    srcs = [encode_source(tok, s["source"]) for s in samples]
    tgts = [encode_target(tok, s["target"]) for s in samples]
    S, T = max(map(len, srcs)), max(map(len, tgts))
    src = torch.full((len(samples), S), PAD, dtype=torch.long)
    tgt = torch.full((len(samples), T), PAD, dtype=torch.long)
    for i, (a, b) in enumerate(zip(srcs, tgts)):
        src[i, :len(a)] = torch.tensor(a)
        tgt[i, :len(b)] = torch.tensor(b)
    return src, tgt


def exact_match(model, tok, samples):
    """Unbatched greedy decoding, no masks (the engine's inference semantics).
    -> (exact-match rate, share of outputs that are valid ISO dates, output texts)."""
    ok, valid, outs = 0, 0, []
    for s in samples:
        ids = model.greedy(encode_source(tok, s["source"]))
        text = tok.decode([i for i in ids if i != EOS], skip_special=False)
        outs.append(text)
        ok += text == s["target"] and ids[-1] == EOS
        valid += date_data.valid_iso(text) and ids[-1] == EOS
    return ok / len(samples), valid / len(samples), outs


def evaluation(model, tok, samples, group, keep_outputs=False):
    """Exact match and validity of one held-out set, overall and per group(sample)."""
    em, valid, outs = exact_match(model, tok, samples)
    groups = {}
    for s, o in zip(samples, outs):
        g = groups.setdefault(group(s), [0, 0, 0])
        g[0] += o == s["target"]
        g[1] += date_data.valid_iso(o)
        g[2] += 1
    r = {"n": len(samples), "exact_match": em, "valid_rate": valid,
         "by_group": {k: {"n": n, "exact_match": round(a / n, 4), "valid_rate": round(v / n, 4)}
                      for k, (a, v, n) in sorted(groups.items())},
         "errors": [{"source": s["source"], "target": s["target"], "output": o, "valid": date_data.valid_iso(o)}
                    for s, o in zip(samples, outs) if o != s["target"]]}
    if keep_outputs:
        r["outputs"] = [[s["source"], o] for s, o in zip(samples, outs)]
    return r


def numeric_group(s):
    order = "month-first" if s["kind"] == "mdy_num" else "day-first"
    return f"{order}, {'both <= 12' if s['ambiguous'] else 'day > 12'}"


@torch.no_grad()
def batched_greedy(model, src, steps=11):
    """Greedy decoding of a padded batch of sources [B, S]: [B, 1 + steps] ids, <s> first."""
    pad = src == PAD
    mem = model.encoder(model.embed_pos(src), src_key_padding_mask=pad)
    out = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    for _ in range(steps):
        T = out.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        h = model.decoder(model.embed_pos(out), mem, tgt_mask=causal, memory_key_padding_mask=pad)
        out = torch.cat([out, (h[:, -1] @ model.embed.weight.t()).argmax(-1)[:, None]], 1)
    return out


@torch.no_grad()
def batched_exact_match(model, tok, samples, bs=250):
    """-> (exact-match rate, valid-date rate) with batched greedy decoding (padding masks)."""
    model.eval()
    ok = valid = 0
    for k in range(0, len(samples), bs):
        chunk = samples[k:k + bs]
        src, tgt = batch_tensors(tok, chunk)
        out = batched_greedy(model, src)
        ok += int((out == tgt[:, :12]).all(1).sum()) if tgt.shape[1] == 12 else 0
        for row in out.tolist():
            valid += row[11] == EOS and date_data.valid_iso(tok.decode(row[1:11], skip_special=False))
    model.train()
    return ok / len(samples), valid / len(samples)


# decoder query positions whose prediction is each ISO character: target = <s> Y Y Y Y - M M - D D </s>;
# query t (input = target[t]) predicts target[t+1]
FIELD_QUERIES = {"year": [0, 1, 2, 3], "month": [5, 6], "day": [8, 9]}


def field_masks(samples, shape):
    """[B, T, S] 1 where decoder query t's output digit comes from source position s (FIELD_QUERIES, spans)."""
    m = torch.zeros(shape)
    for b, s in enumerate(samples):
        for f, qs in FIELD_QUERIES.items():
            a, e = s["spans"][f]
            for q in qs:
                m[b, q, a:e] = 1.0
    return m


def alignment(model, cfg, tok, samples):
    """Cross-attention of the LAST decoder layer, averaged over heads (sum over heads / n_heads): mean
    fraction of each output field digit's attention that lies on the source characters of that field.
    Only sources with a 4-digit year; month counted when written as a number or a name (always)."""
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    sums = {f: [0.0] * len(q) for f, q in FIELD_QUERIES.items()}
    majority = {f: 0 for f in FIELD_QUERIES}
    counts = {f: 0 for f in FIELD_QUERIES}
    n = 0
    with torch.no_grad():
        for s in samples:
            if s["two_digit_year"]:
                continue
            n += 1
            src = encode_source(tok, s["source"])
            tgt = encode_target(tok, s["target"])
            _, att = reference_forward(sd, cfg, src, tgt[:-1])
            cross = att["cross"][-1].mean(0)  # [Tt, Ts], heads averaged
            for f, qs in FIELD_QUERIES.items():
                a, b = s["spans"][f]
                fr = [float(cross[q, a:b].sum()) for q in qs]
                for j, v in enumerate(fr):
                    sums[f][j] += v
                majority[f] += sum(v > 0.5 for v in fr)
                counts[f] += len(fr)
    return {"n_sources": n,
            "mean_fraction_per_digit": {f: [round(v / n, 4) for v in sums[f]] for f in sums},
            "mean_fraction": {f: round(sum(sums[f]) / (n * len(sums[f])), 4) for f in sums},
            "share_of_digits_with_majority_on_field": {f: round(majority[f] / counts[f], 4) for f in sums}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--d_model", type=int, default=128)
    ap.add_argument("--n_heads", type=int, default=4)
    ap.add_argument("--d_ff", type=int, default=512)
    ap.add_argument("--enc_layers", type=int, default=3)
    ap.add_argument("--dec_layers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--dropout", type=float, default=0.05)
    ap.add_argument("--eval_every", type=int, default=500)
    ap.add_argument("--n_test", type=int, default=1000)
    ap.add_argument("--align_weight", type=float, default=0.0,
                    help="weight of the auxiliary loss -log(mass of the last decoder layer's head-averaged "
                         "cross-attention on the source span of the field each output digit comes from)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tag", default="main")
    args = ap.parse_args()

    setup_torch(args.threads)
    seed_everything(args.seed)
    outdir = os.path.join(WORK, "date", args.tag)
    os.makedirs(outdir, exist_ok=True)
    logf = open(os.path.join(outdir, "train.log"), "w")

    def log(*a):
        s = " ".join(str(x) for x in a)
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    vocab, tok = date_tokenizer()
    write_tokenizer_json(os.path.join(outdir, "tokenizer.json"), vocab, [], SPECIALS, unk_token="<unk>")
    cfg = model_config(args, len(vocab))
    test = date_data.make_set(args.seed + 1_000_003, args.n_test, holdout=True)
    numeric_test = date_data.make_set(args.seed + 3_000_003, args.n_test, holdout=True, kinds=date_data.NUMERIC_KINDS)
    canonical = [{"source": a, "target": b, "kind": "canonical"} for a, b in date_data.canonical_pairs()]
    dev = date_data.make_set(args.seed + 2_000_003, 500, holdout=True)
    numeric_dev = date_data.make_set(args.seed + 4_000_003, 500, holdout=True, kinds=date_data.NUMERIC_KINDS)
    write_json(os.path.join(outdir, "test_set.json"), test, indent=None)
    write_json(os.path.join(outdir, "numeric_test_set.json"), numeric_test, indent=None)
    model = Seq2Seq(cfg, dropout=args.dropout)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"params {n_params} ({n_params * 4 / 1e6:.2f} MB f32)")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * p)))

    rng = random.Random(args.seed)
    t0 = time.time()
    history = []
    model.train()
    for step in range(args.steps):
        samples = [date_data.sample(rng, holdout=False) for _ in range(args.batch)]
        src, tgt = batch_tensors(tok, samples)
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        if args.align_weight > 0:
            logits, cross = model.forward_with_cross(src, tgt_in, src_pad=src == PAD, tgt_pad=tgt_in == PAD)
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD)
            mass = (cross * field_masks(samples, cross.shape)).sum(-1)  # [B, T]
            sel = torch.zeros_like(mass, dtype=torch.bool)
            sel[:, sum(FIELD_QUERIES.values(), [])] = True
            al = -torch.log(mass[sel] + 1e-6).mean()
            loss = ce + args.align_weight * al
        else:
            logits = model(src, tgt_in, src_pad=src == PAD, tgt_pad=tgt_in == PAD)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD)
            ce = al = loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0:
            log(f"step {step} loss {loss.item():.4f} ce {ce.item():.4f} align {al.item():.4f} lr {lr_at(step):.2e} {time.time() - t0:.0f}s")
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            em, valid = batched_exact_match(model, tok, dev)
            nem, nvalid = batched_exact_match(model, tok, numeric_dev)
            history.append({"step": step + 1, "dev_exact_match": em, "dev_valid_rate": valid,
                            "numeric_dev_exact_match": nem, "numeric_dev_valid_rate": nvalid,
                            "seconds": time.time() - t0})
            log(f"eval step {step + 1} dev (batched) exact match {em:.4f} valid {valid:.4f}; "
                f"US/EU numeric dev exact match {nem:.4f} valid {nvalid:.4f}")
    train_seconds = time.time() - t0
    model.eval()
    general = evaluation(model, tok, test, lambda s: s["kind"])
    numeric = evaluation(model, tok, numeric_test, numeric_group)
    canon = evaluation(model, tok, canonical, lambda s: "canonical", keep_outputs=True)
    al = alignment(model, cfg, tok, test)
    result = {"args": vars(args), "config": cfg, "params": n_params, "train_seconds": train_seconds,
              "train_samples": args.steps * args.batch,
              "test_exact_match": general["exact_match"], "test_valid_rate": general["valid_rate"],
              "n_test": len(test), "test": general,
              "numeric_test_exact_match": numeric["exact_match"], "numeric_test_valid_rate": numeric["valid_rate"],
              "numeric_test": numeric, "canonical": canon,
              "alignment": al, "history": history, "state_sha256": state_sha(model)}
    log(json.dumps({k: v for k, v in result.items() if k not in ("history",)}, indent=1))
    torch.save({"config": cfg, "state_dict": model.state_dict()}, os.path.join(outdir, "ckpt.pt"))
    write_json(os.path.join(outdir, "result.json"), result)


if __name__ == "__main__":
    main()
