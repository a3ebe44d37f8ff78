"""Shared helpers: paths, seeding, safetensors import, small JSON utilities."""
import hashlib
import json
import os
import random
import sys

import numpy as np
import torch

TRAIN_DIR = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.dirname(TRAIN_DIR)
REPO = os.path.dirname(MODELS_DIR)
WORK = os.path.join(MODELS_DIR, "_work")  # gitignored: corpus dumps, checkpoints, logs
FIXTURES = os.path.join(REPO, "tests", "fixtures", "models")

sys.path.insert(0, os.path.join(REPO, "tools", "py"))
import safetensors_io  # noqa: E402  (tools/py/safetensors_io.py)


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def setup_torch(threads=1):
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1) if not getattr(setup_torch, "_done", False) else None
    setup_torch._done = True


def write_json(path, obj, indent=2):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=False)
        f.write("\n")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def state_sha(model):
    """Hash of all parameters: used to check bitwise determinism between runs."""
    h = hashlib.sha256()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def rounded(x, nd=6):
    """Nested lists of floats rounded to `nd` significant decimals (for compact JSON fixtures)."""
    a = np.asarray(x, dtype=np.float64)
    return np.round(a, nd).tolist()
