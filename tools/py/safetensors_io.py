"""Minimal safetensors reader/writer (the format: u64 little-endian header length, a JSON header
mapping tensor names to {dtype, shape, data_offsets}, then the raw little-endian data).

Used by the fixture scripts and the model export code. Debian has no `safetensors` Python package;
this is the whole format (https://github.com/huggingface/safetensors#format).
"""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
           "I8": np.int8, "U8": np.uint8}


def _bf16_bytes(arr):
    """float32 array -> bfloat16 bytes (round to nearest even), as torch does."""
    u = np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.tobytes()


def save_file(tensors, path, dtype="F32", metadata=None, dtypes=None):
    """Write {name: array-like} to `path`. dtype: "F32", "F16" or "BF16" for every float tensor;
    dtypes: optional {name: dtype} overriding it per tensor."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name].detach().cpu().numpy() if hasattr(tensors[name], "detach") else tensors[name])
        dt = (dtypes or {}).get(name, dtype)
        if dt == "BF16":
            blob = _bf16_bytes(arr)
        else:
            blob = np.ascontiguousarray(arr, dtype=_DTYPES[dt]).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((8 - len(head) % 8) % 8)  # keep the data 8-byte aligned, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def load_file(path):
    """Read a safetensors file into {name: float32 numpy array} (F16/BF16 widened)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = data[base + a:base + b]
        if info["dtype"] == "BF16":
            arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=_DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"]).astype(np.float32) if arr.dtype.kind == "f" else arr.reshape(info["shape"])
    return out
