"""An independent minimal loader: an exported folder (config.json + model.safetensors + tokenizer.json)
-> numpy forward passes.  Shares no code with the training models (only the safetensors reader and
the tokenizer.json reader), so agreement with the trained PyTorch model checks the export itself.
"""
import json
import math
import os

import numpy as np

from bpe import load_tokenizer_json
from common import safetensors_io


def load_folder(path):
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    w = safetensors_io.load_file(os.path.join(path, "model.safetensors"))
    tok = load_tokenizer_json(os.path.join(path, "tokenizer.json"))
    return cfg, w, tok


def _ln(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def gpt2_forward(cfg, w, ids):
    """-> logits [T, V], attention [L, H, T, T] (float64 internally)."""
    W = {k: v.astype(np.float64) for k, v in w.items()}
    T, D, H, eps = len(ids), cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    hd = D // H
    x = W["transformer.wte.weight"][ids] + W["transformer.wpe.weight"][:T]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    atts = []
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        h = _ln(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = h @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = (qkv[:, j * D:(j + 1) * D].reshape(T, H, hd).transpose(1, 0, 2) for j in range(3))
        a = _softmax(q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask)
        atts.append(a)
        y = (a @ v).transpose(1, 0, 2).reshape(T, D)
        x = x + y @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        h = _ln(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        h = h @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"]
        h = 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))
        x = x + h @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = _ln(x, W["transformer.ln_f.weight"], W["transformer.ln_f.bias"], eps)
    head = W["lm_head.weight"] if "lm_head.weight" in W else W["transformer.wte.weight"]
    return x @ head.T, np.stack(atts)


def _mha(xq, xkv, W, p, H, mask=None):
    d = xq.shape[-1]
    hd = d // H
    Wi, bi = W[p + "in_proj_weight"], W[p + "in_proj_bias"]
    q = (xq @ Wi[:d].T + bi[:d]).reshape(len(xq), H, hd).transpose(1, 0, 2)
    k = (xkv @ Wi[d:2 * d].T + bi[d:2 * d]).reshape(len(xkv), H, hd).transpose(1, 0, 2)
    v = (xkv @ Wi[2 * d:].T + bi[2 * d:]).reshape(len(xkv), H, hd).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
    if mask is not None:
        s = s + mask
    a = _softmax(s)
    o = (a @ v).transpose(1, 0, 2).reshape(len(xq), d)
    return o @ W[p + "out_proj.weight"].T + W[p + "out_proj.bias"], a


def sinusoid(n, d):
    pos = np.arange(n)[:, None].astype(np.float64)
    ang = pos / np.power(10000.0, np.arange(0, d, 2)[None] / d)
    pe = np.zeros((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe


def seq2seq_forward(cfg, w, src, tgt):
    """-> logits [Tt, V], {"encoder_self", "decoder_self", "cross"} (float64 internally)."""
    assert cfg["model_type"] == "attnlens-seq2seq" and not cfg["norm_first"] and cfg["activation"] == "relu"
    W = {k: v.astype(np.float64) for k, v in w.items()}
    d, H, eps = cfg["d_model"], cfg["n_heads"], cfg["layer_norm_eps"]
    pe = sinusoid(cfg["max_position_embeddings"], d)
    E = W["embed.weight"]
    scale = math.sqrt(d) if cfg["scale_embeddings"] else 1.0
    ln = lambda x, n: _ln(x, W[n + ".weight"], W[n + ".bias"], eps)  # noqa: E731
    ffn = lambda x, p: np.maximum(x @ W[p + "linear1.weight"].T + W[p + "linear1.bias"], 0) @ W[p + "linear2.weight"].T + W[p + "linear2.bias"]  # noqa: E731,E501
    x = E[src] * scale + pe[:len(src)]
    att = {"encoder_self": [], "decoder_self": [], "cross": []}
    for i in range(cfg["encoder_layers"]):
        p = f"encoder.layers.{i}."
        a, A = _mha(x, x, W, p + "self_attn.", H)
        att["encoder_self"].append(A)
        x = ln(x + a, p + "norm1")
        x = ln(x + ffn(x, p), p + "norm2")
    mem = ln(x, "encoder.norm") if cfg["final_layer_norm"] else x
    T = len(tgt)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    y = E[tgt] * scale + pe[:T]
    for i in range(cfg["decoder_layers"]):
        p = f"decoder.layers.{i}."
        a, A = _mha(y, y, W, p + "self_attn.", H, mask)
        att["decoder_self"].append(A)
        y = ln(y + a, p + "norm1")
        a, A = _mha(y, mem, W, p + "multihead_attn.", H)
        att["cross"].append(A)
        y = ln(y + a, p + "norm2")
        y = ln(y + ffn(y, p), p + "norm3")
    if cfg["final_layer_norm"]:
        y = ln(y, "decoder.norm")
    head = E if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return y @ head.T, {k: np.stack(v) for k, v in att.items()}
