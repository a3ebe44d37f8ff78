"""GPT-2 in plain PyTorch, with Hugging Face GPT2LMHeadModel's parameter names and layouts.

Learned absolute positions, pre-LN blocks, fused c_attn, GELU tanh approximation ("gelu_new"),
final ln_f, lm_head tied to wte.  Conv1D weights are [in, out] (y = x @ W + b) as HF stores them,
so `state_dict()` (minus nothing: there are no buffers) is exactly what HF saves.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["n_embd"]
        self.n_head = cfg["n_head"]
        self.c_attn = Conv1D(d, 3 * d)
        self.c_proj = Conv1D(d, d)
        self.drop = nn.Dropout(cfg.get("resid_pdrop", 0.0))

    def forward(self, x, want_attn=False):
        B, T, D = x.shape
        H = self.n_head
        q, k, v = self.c_attn(x).split(D, dim=2)
        q = q.view(B, T, H, D // H).transpose(1, 2)
        k = k.view(B, T, H, D // H).transpose(1, 2)
        v = v.view(B, T, H, D // H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.drop(self.c_proj(y)), (att if want_attn else None)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["n_embd"]
        inner = cfg.get("n_inner") or 4 * d
        self.c_fc = Conv1D(d, inner)
        self.c_proj = Conv1D(inner, d)
        self.drop = nn.Dropout(cfg.get("resid_pdrop", 0.0))
        self.exact_gelu = False  # True: the explicit formula (reference paths); False: torch's tanh-GELU

    def forward(self, x):
        h = self.c_fc(x)
        h = gelu_new(h) if self.exact_gelu else F.gelu(h, approximate="tanh")
        return self.drop(self.c_proj(h))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, eps = cfg["n_embd"], cfg["layer_norm_epsilon"]
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(cfg)

    def forward(self, x, want_attn=False):
        a, att = self.attn(self.ln_1(x), want_attn)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, att


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
        self.drop = nn.Dropout(cfg.get("embd_pdrop", 0.0))
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
        self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg)
        nn.init.normal_(self.transformer.wte.weight, std=0.02)
        nn.init.normal_(self.transformer.wpe.weight, std=0.01)
        for blk in self.transformer.h:  # GPT-2's scaled init of the residual projections
            for p in (blk.attn.c_proj.weight, blk.mlp.c_proj.weight):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg["n_layer"]))

    def forward(self, idx, want_attn=False):
        """idx [B, T] -> logits [B, T, V] (and per layer attention [B, H, T, T] if want_attn)."""
        t = self.transformer
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        x = t.drop(t.wte(idx) + t.wpe(pos)[None])
        atts = []
        for blk in t.h:
            x, a = blk(x, want_attn)
            atts.append(a)
        x = t.ln_f(x)
        logits = x @ t.wte.weight.t()  # tied lm_head
        return (logits, atts) if want_attn else logits

    def hf_state_dict(self):
        return {k: v.detach().clone() for k, v in self.state_dict().items()}

    def set_exact_gelu(self, on=True):
        for blk in self.transformer.h:
            blk.mlp.exact_gelu = on
