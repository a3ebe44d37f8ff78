"""Export kjv-gpt2 from models/_work/kjv/<tag>/ckpt.pt:

  models/kjv-gpt2/{config.json, model.safetensors, tokenizer.json, generation_config.json}
  tests/fixtures/models/kjv-gpt2.json       parity reference for the engine
  models/_work/kjv/<tag>/samples.json       text samples for the README

then reload the folder with the independent numpy loader and check its logits equal the model's.

    /usr/bin/python3 models/train/export_kjv.py
"""
import argparse
import json
import math
import os
import shutil

import numpy as np
import torch

from common import FIXTURES, MODELS_DIR, WORK, rounded, safetensors_io, setup_torch, write_json
from gpt2 import GPT2LMHeadModel
import numpy_ref

EOT = "<|endoftext|>"
PROMPTS = ["And God said", "In the beginning", "The LORD is my shepherd", "Jesus wept.", "Blessed are the"]
N_NEW = 24
LOGIT_DECIMALS = 5


def hf_config(cfg, eot):
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": cfg["vocab_size"], "n_positions": cfg["n_positions"], "n_ctx": cfg["n_positions"],
        "n_embd": cfg["n_embd"], "n_layer": cfg["n_layer"], "n_head": cfg["n_head"], "n_inner": None,
        "activation_function": "gelu_new", "layer_norm_epsilon": cfg["layer_norm_epsilon"],
        "resid_pdrop": cfg["resid_pdrop"], "embd_pdrop": cfg["embd_pdrop"], "attn_pdrop": 0.0,
        "initializer_range": 0.02, "scale_attn_weights": True, "use_cache": True,
        "bos_token_id": eot, "eos_token_id": eot, "tie_word_embeddings": True, "torch_dtype": "float32",
    }


@torch.no_grad()
def greedy(model, ids, n_new, eot):
    """Greedy decoding without KV cache, float32; argmax ties -> lowest id; stops early at <|endoftext|>.
    Also returns, per step, the gap between the best and second-best logit."""
    ids = list(ids)
    out, margins = [], []
    for _ in range(n_new):
        logits = model(torch.tensor([ids]))[0, -1].numpy()
        top = np.argsort(-logits, kind="stable")[:2]
        nxt = int(np.argmax(logits))
        out.append(nxt)
        margins.append(float(logits[top[0]] - logits[top[1]]))
        ids.append(nxt)
        if nxt == eot:
            break
    return out, margins


@torch.no_grad()
def sample(model, tok, prompt, n_new, temperature, top_k, seed):
    g = torch.Generator().manual_seed(seed)
    ids = tok.encode(prompt)
    for _ in range(n_new):
        logits = model(torch.tensor([ids[-model.cfg["n_positions"]:]]))[0, -1] / temperature
        v, i = torch.topk(logits, top_k)
        p = torch.softmax(v, -1)
        ids.append(int(i[torch.multinomial(p, 1, generator=g)]))
        if ids[-1] == tok.vocab[EOT]:
            break
    return tok.decode(ids[len(tok.encode(prompt)):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="main")
    args = ap.parse_args()
    setup_torch(1)
    torch.set_grad_enabled(False)
    src = os.path.join(WORK, "kjv", args.tag)
    ck = torch.load(os.path.join(src, "ckpt.pt"))
    result = json.load(open(os.path.join(src, "result.json")))
    cfg = ck["config"]
    model = GPT2LMHeadModel(cfg)
    model.load_state_dict(ck["state_dict"])
    model.eval()
    model.set_exact_gelu(True)

    from bpe import load_tokenizer_json
    tok = load_tokenizer_json(os.path.join(src, "tokenizer.json"))
    eot = tok.vocab[EOT]

    out = os.path.join(MODELS_DIR, "kjv-gpt2")
    os.makedirs(out, exist_ok=True)
    tensors = {k: v.float() for k, v in model.state_dict().items()}
    n_bytes = sum(v.numel() * 4 for v in tensors.values())
    dtype = "F32" if n_bytes < 9.5e6 else "F16"
    safetensors_io.save_file(tensors, os.path.join(out, "model.safetensors"), dtype=dtype, metadata={"format": "pt"})
    write_json(os.path.join(out, "config.json"), hf_config(cfg, eot))
    write_json(os.path.join(out, "generation_config.json"),
               {"bos_token_id": eot, "eos_token_id": eot, "max_new_tokens": 100, "do_sample": True,
                "temperature": 0.8, "top_k": 40})
    shutil.copy(os.path.join(src, "tokenizer.json"), os.path.join(out, "tokenizer.json"))

    # --- round trip through the independent loader
    rcfg, rw, rtok = numpy_ref.load_folder(out)
    if dtype == "F16":  # compare against the weights as stored
        model.load_state_dict({k: torch.from_numpy(v) for k, v in rw.items()}, strict=False)
    worst = 0.0
    for p in PROMPTS:
        ids = rtok.encode(p)
        assert ids == tok.encode(p)
        ref, _ = numpy_ref.gpt2_forward(rcfg, rw, ids)
        got = model(torch.tensor([ids]))[0].numpy()
        worst = max(worst, float(np.abs(ref - got).max()))
    print(f"round trip: max |logit diff| numpy(float64, exported folder) vs torch = {worst:.2e}")
    assert worst < 1e-3, worst

    # --- parity fixture
    cases = []
    for n, p in enumerate(PROMPTS):
        ids = tok.encode(p)
        logits, atts = model(torch.tensor([ids]), want_attn=True)
        logits = logits[0].numpy()
        new, margins = greedy(model, ids, N_NEW, eot)
        case = {"prompt": p, "input_ids": ids, "tokens": [tok.inv[i] for i in ids],
                "last_logits": rounded(logits[-1], LOGIT_DECIMALS),
                "position_logits": {}, "greedy_new_ids": new, "greedy_text": tok.decode(new),
                "greedy_top2_margins": [round(m, 4) for m in margins]}
        if n == 0:
            for pos in range(len(ids) - 1):
                case["position_logits"][str(pos)] = rounded(logits[pos], LOGIT_DECIMALS)
            case["attentions"] = rounded(torch.cat(atts).numpy(), 6)  # [L, H, T, T]
        cases.append(case)
    fixture = {
        "model": "kjv-gpt2", "model_dir": "models/kjv-gpt2",
        "semantics": {
            "dtype": "float32 (PyTorch, eval mode, no dropout); logits rounded to 5 decimals, attentions to 6",
            "prompt_encoding": "tokenizer.encode(prompt) with NO BOS/<|endoftext|> prepended and nothing appended",
            "greedy": "argmax of the last position's logits, ties -> lowest id; full recompute each step (no KV cache); "
                      f"{N_NEW} new tokens, stopping early only if <|endoftext|> (id {eot}) is produced",
            "greedy_top2_margins": "per greedy step, best minus second-best logit (small values = near-ties)",
            "attentions": "post-softmax weights [layer][head][query][key], causal (0 above the diagonal), first case only",
            "position_logits": "full logits at the listed positions (first case: every position but the last)",
        },
        "vocab_size": cfg["vocab_size"], "eot_id": eot, "cases": cases,
    }
    os.makedirs(FIXTURES, exist_ok=True)
    fpath = os.path.join(FIXTURES, "kjv-gpt2.json")
    with open(fpath, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    print(f"fixture {fpath}: {os.path.getsize(fpath)} bytes")

    # --- samples for the README
    samples = {"greedy": {c["prompt"]: c["prompt"] + c["greedy_text"] for c in cases}, "sampled": {}}
    torch.manual_seed(0)
    for i, p in enumerate(["And God said", "And it came to pass", "The LORD is my shepherd", "Blessed are the"]):
        samples["sampled"][p] = p + sample(model, tok, p, 60, 0.8, 40, seed=i)
    write_json(os.path.join(src, "samples.json"), samples)
    for k, v in samples.items():
        print(f"== {k}")
        for p, t in v.items():
            print(repr(t))
    print("valid loss", result["valid_loss"], "ppl", math.exp(result["valid_loss"]))
    for f in sorted(os.listdir(out)):
        print(f, os.path.getsize(os.path.join(out, f)))


if __name__ == "__main__":
    main()
