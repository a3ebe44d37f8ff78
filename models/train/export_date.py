"""Export date-normalizer from models/_work/date/<tag>/ckpt.pt:

  models/date-normalizer/{config.json, model.safetensors, tokenizer.json, generation_config.json}
  tests/fixtures/models/date-normalizer.json        parity reference for the engine
  tests/fixtures/models/date-normalizer-eval.json   the held-out evaluation sets (source/target pairs): every
                                                    layout, US/EU numeric, and the canonical numeric cases

then reload the folder with the independent numpy loader and check its logits equal the model's.

    /usr/bin/python3 models/train/export_date.py
"""
import argparse
import json
import os
import shutil

import numpy as np
import torch

import date_data
from common import FIXTURES, MODELS_DIR, WORK, rounded, safetensors_io, setup_torch, write_json
import numpy_ref
from seq2seq import Seq2Seq, reference_forward
from train_date import BOS, EOS, encode_source

EXAMPLES = ["Wednesday, 3rd of March 2021", "03/03/21", "March 3, 2021", "3 mar 2021", "2021.03.03",
            "the 3rd of march, 2021", "Mar 3rd '21", "09/14/1990", "14/09/1990", "03/04/2001", "hello world"]
ATTN_CASE = 0
MAX_NEW = 16


def greedy_ref(sd, cfg, src, max_new=MAX_NEW):
    """Greedy decoding with the step-by-step reference (full recompute per step, no masks but the causal one)."""
    out, margins = [BOS], []
    for _ in range(max_new):
        logits, _ = reference_forward(sd, cfg, src, out)
        last = logits[-1].numpy()
        top = np.argsort(-last, kind="stable")[:2]
        nxt = int(np.argmax(last))  # first maximal index = lowest id on ties
        margins.append(float(last[top[0]] - last[top[1]]))
        out.append(nxt)
        if nxt == EOS:
            break
    return out[1:], margins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="main")
    args = ap.parse_args()
    setup_torch(1)
    torch.set_grad_enabled(False)
    src_dir = os.path.join(WORK, "date", args.tag)
    ck = torch.load(os.path.join(src_dir, "ckpt.pt"))
    result = json.load(open(os.path.join(src_dir, "result.json")))
    test = json.load(open(os.path.join(src_dir, "test_set.json")))
    numeric_test = json.load(open(os.path.join(src_dir, "numeric_test_set.json")))
    cfg = ck["config"]
    model = Seq2Seq(cfg, dropout=0.0)
    model.load_state_dict(ck["state_dict"])
    model.eval()
    sd = {k: v.float() for k, v in model.state_dict().items()}

    from bpe import load_tokenizer_json
    tok = load_tokenizer_json(os.path.join(src_dir, "tokenizer.json"))

    out = os.path.join(MODELS_DIR, "date-normalizer")
    os.makedirs(out, exist_ok=True)
    safetensors_io.save_file(sd, os.path.join(out, "model.safetensors"), dtype="F32", metadata={"format": "pt"})
    write_json(os.path.join(out, "config.json"), cfg)
    write_json(os.path.join(out, "generation_config.json"),
               {"decoder_start_token_id": cfg["decoder_start_token_id"], "bos_token_id": cfg["bos_token_id"],
                "eos_token_id": cfg["eos_token_id"], "pad_token_id": cfg["pad_token_id"],
                "max_new_tokens": MAX_NEW, "do_sample": False})
    shutil.copy(os.path.join(src_dir, "tokenizer.json"), os.path.join(out, "tokenizer.json"))

    # --- round trip: independent numpy loader vs the nn.Transformer model vs the step-by-step reference
    rcfg, rw, rtok = numpy_ref.load_folder(out)
    worst_np, worst_ref = 0.0, 0.0
    for s in EXAMPLES + [t["source"] for t in test[:20]]:
        src = encode_source(rtok, s)
        assert src == encode_source(tok, s)
        ids, _ = greedy_ref(sd, cfg, src)
        tgt = [BOS] + ids[:-1] if ids[-1] == EOS else [BOS] + ids
        ref, _ = numpy_ref.seq2seq_forward(rcfg, rw, src, tgt)
        T = len(tgt)
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        mem = model.encoder(model.embed_pos(torch.tensor([src])))
        got = (model.decoder(model.embed_pos(torch.tensor([tgt])), mem, tgt_mask=causal) @ model.embed.weight.t())[0]
        stepwise, _ = reference_forward(sd, cfg, src, tgt)
        worst_np = max(worst_np, float(np.abs(ref - got.numpy()).max()))
        worst_ref = max(worst_ref, float((stepwise - got).abs().max()))
    print(f"round trip: max |logit diff| numpy(exported folder) vs nn.Transformer = {worst_np:.2e}; "
          f"step-by-step reference vs nn.Transformer = {worst_ref:.2e}")
    assert worst_np < 1e-3 and worst_ref < 1e-3

    # --- parity fixture
    cases = []
    for n, s in enumerate(EXAMPLES):
        src = encode_source(tok, s)
        ids, margins = greedy_ref(sd, cfg, src)
        dec_in = [BOS] + (ids[:-1] if ids[-1] == EOS else ids)
        logits, att = reference_forward(sd, cfg, src, dec_in)
        case = {"source": s, "source_ids": src, "source_tokens": [tok.inv[i] for i in src],
                "output_ids": ids, "output_text": tok.decode([i for i in ids if i != EOS]),
                "decoder_input_ids": dec_in, "logits": rounded(logits.numpy(), 5),
                "greedy_top2_margins": [round(m, 4) for m in margins]}
        if n == ATTN_CASE:
            case["attentions"] = {k: rounded(v.numpy(), 5) for k, v in att.items()}
        cases.append(case)
    fixture = {
        "model": "date-normalizer", "model_dir": "models/date-normalizer",
        "semantics": {
            "dtype": "float32 (PyTorch, eval mode); logits rounded to 5 decimals, attentions to 5",
            "source": "tokenizer.encode(text) (no special tokens; one token per character) + [</s>=2]",
            "decoder": "starts from <s>=1 (decoder_start_token_id); greedy argmax of the last position, ties -> lowest id; "
                       f"full recompute per step; stops after </s>=2 or {MAX_NEW} new tokens",
            "masks": "no padding masks (single sequence); causal mask on decoder self-attention only",
            "output_ids": "generated ids after <s>, including the final </s> when produced",
            "decoder_input_ids": "[<s>] + output_ids without the final </s>: the teacher-forced decoder input the "
                                 "logits and attentions are computed on",
            "logits": "[decoder position][vocab] for every decoder position",
            "attentions": "first case only; post-softmax; encoder_self [layer][head][src_q][src_k], "
                          "decoder_self [layer][head][dec_q][dec_k] (causal), cross [layer][head][dec_q][src_k]",
        },
        "vocab_size": cfg["vocab_size"], "cases": cases,
    }
    os.makedirs(FIXTURES, exist_ok=True)
    fpath = os.path.join(FIXTURES, "date-normalizer.json")
    with open(fpath, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    epath = os.path.join(FIXTURES, "date-normalizer-eval.json")
    evalset = {"description": "held-out synthetic date sets (dates never seen in training, see models/README.md): "
                              "'pairs' every layout, 'numeric_pairs' US/EU numeric dates with the year last; "
                              "'canonical_pairs' hand-picked numeric cases (their dates may occur in training). "
                              "The model should reach >= 99% exact match with greedy decoding on each set, "
                              "all of 'canonical_pairs', and every output must be a valid YYYY-MM-DD date",
               "convention": "as python-dateutil's default parser (dayfirst=False): numeric dates with the year last "
                             "(/ - .) are month-first (MM/DD/YYYY) unless the first number is > 12, then day-first; "
                             "4-digit year first: Y-M-D; 2-digit years in dateutil's window as of "
                             f"{date_data.TWO_DIGIT_YEAR_NOW}: YY >= 76 -> 19YY, YY <= 75 -> 20YY",
               "python_exact_match": result["test_exact_match"], "python_valid_rate": result["test_valid_rate"],
               "python_numeric_exact_match": result["numeric_test_exact_match"],
               "python_numeric_valid_rate": result["numeric_test_valid_rate"],
               "pairs": [[t["source"], t["target"]] for t in test],
               "numeric_pairs": [[t["source"], t["target"]] for t in numeric_test],
               "canonical_pairs": [list(p) for p in date_data.canonical_pairs()]}
    with open(epath, "w") as f:
        json.dump(evalset, f, indent=0, ensure_ascii=False)
        f.write("\n")
    for c in cases:
        print(f"{c['source']!r:34} -> {c['output_text']!r}  min margin {min(c['greedy_top2_margins']):.2f}")
    print(f"fixture {fpath}: {os.path.getsize(fpath)} bytes; eval set {epath}: {os.path.getsize(epath)} bytes")
    print("test exact match", result["test_exact_match"], "valid", result["test_valid_rate"],
          "numeric exact match", result["numeric_test_exact_match"], "valid", result["numeric_test_valid_rate"],
          "canonical exact match", result["canonical"]["exact_match"], "alignment", json.dumps(result["alignment"]))
    for f in sorted(os.listdir(out)):
        print(f, os.path.getsize(os.path.join(out, f)))


if __name__ == "__main__":
    main()
