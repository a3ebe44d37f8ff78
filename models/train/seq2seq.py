"""The date-normalizer model: "Attention Is All You Need" encoder-decoder in plain PyTorch.

Training uses torch.nn.Transformer (post-LN, ReLU, batch_first, final encoder/decoder LayerNorms)
with one shared embedding (source, target and the tied output projection), embeddings scaled by
sqrt(d_model) plus sinusoidal positions.  `state_dict()` names are exactly the exported ones:
embed.weight, encoder.layers.{i}..., encoder.norm, decoder.layers.{i}..., decoder.norm.

`reference_forward` recomputes the same function step by step from the weights and returns every
attention weight (encoder self, decoder self, cross): the semantics the engine implements.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal_table(n_pos, d):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same angle)."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, d, 2, dtype=torch.float64)[None]
    ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / d)
    pe = torch.zeros(n_pos, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(ang)
    pe[:, 1::2] = torch.cos(ang)
    return pe.float()


class Seq2Seq(nn.Module):
    def __init__(self, cfg, dropout=0.1):
        super().__init__()
        self.cfg = cfg
        d = cfg["d_model"]
        self.embed = nn.Embedding(cfg["vocab_size"], d)
        nn.init.normal_(self.embed.weight, std=d ** -0.5)
        t = nn.Transformer(d_model=d, nhead=cfg["n_heads"], num_encoder_layers=cfg["encoder_layers"],
                           num_decoder_layers=cfg["decoder_layers"], dim_feedforward=cfg["d_ff"], dropout=dropout,
                           activation="relu", layer_norm_eps=cfg["layer_norm_eps"], batch_first=True, norm_first=False)
        self.encoder, self.decoder = t.encoder, t.decoder
        self.register_buffer("pe", sinusoidal_table(cfg["max_position_embeddings"], d), persistent=False)
        self.drop = nn.Dropout(dropout)

    def embed_pos(self, ids):
        return self.drop(self.embed(ids) * math.sqrt(self.cfg["d_model"]) + self.pe[: ids.shape[1]][None])

    def forward(self, src, tgt_in, src_pad=None, tgt_pad=None):
        T = tgt_in.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        mem = self.encoder(self.embed_pos(src), src_key_padding_mask=src_pad)
        out = self.decoder(self.embed_pos(tgt_in), mem, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                           memory_key_padding_mask=src_pad)
        return out @ self.embed.weight.t()

    def forward_with_cross(self, src, tgt_in, src_pad=None, tgt_pad=None):
        """Same function as forward(), but the last decoder layer is run step by step (exactly as
        nn.TransformerDecoderLayer with norm_first=False) to also return its cross-attention weights
        averaged over heads: -> logits [B, T, V], cross [B, T, S]."""
        T = tgt_in.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        mem = self.encoder(self.embed_pos(src), src_key_padding_mask=src_pad)
        x = self.embed_pos(tgt_in)
        layers = self.decoder.layers
        for layer in layers[:-1]:
            x = layer(x, mem, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        L = layers[-1]
        a = L.self_attn(x, x, x, attn_mask=causal, key_padding_mask=tgt_pad, need_weights=False)[0]
        x = L.norm1(x + L.dropout1(a))
        a, w = L.multihead_attn(x, mem, mem, key_padding_mask=src_pad, need_weights=True, average_attn_weights=True)
        x = L.norm2(x + L.dropout2(a))
        x = L.norm3(x + L.dropout3(L.linear2(L.dropout(L.activation(L.linear1(x))))))
        x = self.decoder.norm(x)
        return x @ self.embed.weight.t(), w

    @torch.no_grad()
    def greedy(self, src_ids, max_len=16):
        """Greedy decoding of one source (list of ids, already with </s>): -> output ids without <s>."""
        self.eval()
        src = torch.tensor([src_ids])
        mem = self.encoder(self.embed_pos(src))
        out = [self.cfg["decoder_start_token_id"]]
        for _ in range(max_len):
            tgt = torch.tensor([out])
            T = tgt.shape[1]
            causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            h = self.decoder(self.embed_pos(tgt), mem, tgt_mask=causal)
            logits = h[0, -1] @ self.embed.weight.t()
            nxt = int(torch.argmax(logits))  # torch.argmax returns the first maximal index
            out.append(nxt)
            if nxt == self.cfg["eos_token_id"]:
                break
        return out[1:]


def _mha(x_q, x_kv, prefix, sd, n_heads, mask=None):
    """Multi-head attention from nn.MultiheadAttention weights -> (out [Tq, d], weights [H, Tq, Tk])."""
    d = x_q.shape[-1]
    W, b = sd[prefix + "in_proj_weight"], sd[prefix + "in_proj_bias"]
    q = x_q @ W[:d].t() + b[:d]
    k = x_kv @ W[d:2 * d].t() + b[d:2 * d]
    v = x_kv @ W[2 * d:].t() + b[2 * d:]
    hd = d // n_heads
    q = q.view(-1, n_heads, hd).transpose(0, 1)
    k = k.view(-1, n_heads, hd).transpose(0, 1)
    v = v.view(-1, n_heads, hd).transpose(0, 1)
    s = (q / math.sqrt(hd)) @ k.transpose(1, 2)
    if mask is not None:
        s = s + mask
    a = F.softmax(s, dim=-1)
    o = (a @ v).transpose(0, 1).reshape(-1, d)
    return o @ sd[prefix + "out_proj.weight"].t() + sd[prefix + "out_proj.bias"], a


def _ln(x, sd, name, eps):
    return F.layer_norm(x, x.shape[-1:], sd[name + ".weight"], sd[name + ".bias"], eps)


def reference_forward(sd, cfg, src_ids, tgt_ids):
    """Step-by-step forward of one (source, decoder input) pair from a {name: tensor} dict.

    -> logits [Tt, V], {"encoder_self": [L, H, Ts, Ts], "decoder_self": [L, H, Tt, Tt], "cross": [L, H, Tt, Ts]}
    """
    d, H, eps = cfg["d_model"], cfg["n_heads"], cfg["layer_norm_eps"]
    E = sd["embed.weight"]
    pe = sinusoidal_table(cfg["max_position_embeddings"], d)
    src = torch.as_tensor(src_ids)
    tgt = torch.as_tensor(tgt_ids)
    x = E[src] * math.sqrt(d) + pe[: len(src)]
    enc_self, dec_self, cross = [], [], []
    for i in range(cfg["encoder_layers"]):
        p = f"encoder.layers.{i}."
        a, w = _mha(x, x, p + "self_attn.", sd, H)
        enc_self.append(w)
        x = _ln(x + a, sd, p + "norm1", eps)
        f = F.relu(x @ sd[p + "linear1.weight"].t() + sd[p + "linear1.bias"]) @ sd[p + "linear2.weight"].t() + sd[p + "linear2.bias"]
        x = _ln(x + f, sd, p + "norm2", eps)
    mem = _ln(x, sd, "encoder.norm", eps) if cfg.get("final_layer_norm", True) else x
    T = len(tgt)
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    y = E[tgt] * math.sqrt(d) + pe[:T]
    for i in range(cfg["decoder_layers"]):
        p = f"decoder.layers.{i}."
        a, w = _mha(y, y, p + "self_attn.", sd, H, causal)
        dec_self.append(w)
        y = _ln(y + a, sd, p + "norm1", eps)
        a, w = _mha(y, mem, p + "multihead_attn.", sd, H)
        cross.append(w)
        y = _ln(y + a, sd, p + "norm2", eps)
        f = F.relu(y @ sd[p + "linear1.weight"].t() + sd[p + "linear1.bias"]) @ sd[p + "linear2.weight"].t() + sd[p + "linear2.bias"]
        y = _ln(y + f, sd, p + "norm3", eps)
    if cfg.get("final_layer_norm", True):
        y = _ln(y, sd, "decoder.norm", eps)
    W_out = E if cfg.get("tie_word_embeddings", True) else sd["lm_head.weight"]
    logits = y @ W_out.t()
    return logits, {"encoder_self": torch.stack(enc_self), "decoder_self": torch.stack(dec_self),
                    "cross": torch.stack(cross)}
