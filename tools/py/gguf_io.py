"""Minimal GGUF v3 writer/reader (numpy only), for test fixtures and model export.

Run with Debian's /usr/bin/python3 (it has numpy). The format (ggml's docs/gguf.md): "GGUF", u32 version 3,
u64 tensor count, u64 metadata count, the metadata {gguf string key, u32 value type, value}, the tensor
infos {gguf string name, u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type, u64 offset}, padding
to `general.alignment` (default 32), then the tensor data, each tensor at an offset that is a multiple of
the alignment. gguf strings are u64 length + UTF-8 bytes; everything is little-endian.

Metadata values
---------------
`metadata` maps each key to a value. Give the type explicitly with a tuple, or let it be inferred:
  ("u32", 5)  ("i32", -1)  ("f32", 1e-5)  ("bool", True)  ("string", "llama")  ("u64", 2**40) ...
      scalar types: u8 i8 u16 i16 u32 i32 f32 bool string u64 i64 f64
  ("array", "string", ["<unk>", "<s>"])     an array of one element type
  ("array", "array", [("array", "i32", [1, 2]), ("array", "i32", [3])])   arrays of arrays
Inferred (the types llama.cpp's converters use for the usual keys):
  bool -> bool; str -> string; float -> f32; int -> u32 if 0 <= v < 2**32 (llama.block_count,
  llama.context_length, tokenizer.ggml.bos_token_id, general.alignment...), i32 if negative and fits,
  else u64 / i64; list of str -> array of string (tokenizer.ggml.tokens, tokenizer.ggml.merges);
  list of numbers with a float -> array of f32 (tokenizer.ggml.scores); list of ints -> array of i32
  (tokenizer.ggml.token_type); list of bools -> array of bool; 1-D numpy array -> array of its dtype
  (float64 -> f32). An empty list needs an explicit type. Use lists (never tuples) for arrays.

Tensors
-------
`tensors` maps each name to (array, type) with type "f32", "f16", "bf16" or "q8_0". Shapes are
outermost-first (numpy / PyTorch order); the file stores ne[] reversed. q8_0 quantizes along the last
dimension (its size must be a multiple of 32) exactly as ggml's quantize_row_q8_0_ref: per block of 32,
amax = max|x|, d = amax / 127, id = 1/d (0 when d == 0), q = roundf(x * id) (half away from zero),
d stored as f16; the weight the engine sees is f16(d) * q. bf16 rounds to nearest even, as torch does.

CLI: `/usr/bin/python3 tools/py/gguf_io.py dump FILE.gguf` prints a file; `... selftest` checks the module.
"""
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32

VALUE_TYPES = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "string": 8,
               "array": 9, "u64": 10, "i64": 11, "f64": 12}
VALUE_TYPE_NAMES = {v: k for k, v in VALUE_TYPES.items()}
_SCALAR_FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i", "f32": "<f",
               "bool": "<?", "u64": "<Q", "i64": "<q", "f64": "<d"}
_NP_TO_VALUE = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8", np.dtype(np.uint16): "u16",
                np.dtype(np.int16): "i16", np.dtype(np.uint32): "u32", np.dtype(np.int32): "i32",
                np.dtype(np.float32): "f32", np.dtype(np.bool_): "bool", np.dtype(np.uint64): "u64",
                np.dtype(np.int64): "i64", np.dtype(np.float64): "f32"}

GGML_TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "bf16": 30}
GGML_TYPE_NAMES = {v: k for k, v in GGML_TYPES.items()}
QK8_0 = 32
Q8_0_BLOCK_BYTES = 2 + QK8_0


# --- numeric conversions --------------------------------------------------------------------------

def roundf(x):
    """C roundf on a float32 array: round half away from zero (np.round rounds half to even)."""
    a = np.abs(x)
    floored = np.floor(a)
    return np.sign(x) * (floored + np.floor(2 * (a - floored)))  # exact in float32


def quantize_q8_0(x):
    """float32 array (last dim a multiple of 32) -> q8_0 bytes, as ggml's quantize_row_q8_0_ref."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim == 0 or x.shape[-1] % QK8_0 != 0:
        raise ValueError(f"q8_0 needs the last dimension to be a multiple of 32, got shape {x.shape}")
    blocks = x.reshape(-1, QK8_0)
    amax = np.abs(blocks).max(axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = roundf((blocks * inv[:, None]).astype(np.float32)).astype(np.int8)
    out = np.empty((blocks.shape[0], Q8_0_BLOCK_BYTES), dtype=np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def dequantize_q8_0(raw, shape):
    """q8_0 bytes -> float32 array of `shape` (f16(d) * q)."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, Q8_0_BLOCK_BYTES)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    return (d * q).astype(np.float32).reshape(shape)


def bf16_bits(x):
    """float32 array -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _tensor_bytes(arr, ttype):
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if ttype == "f32":
        return arr.astype("<f4").tobytes()
    if ttype == "f16":
        return arr.astype("<f2").tobytes()
    if ttype == "bf16":
        return bf16_bits(arr).astype("<u2").tobytes()
    if ttype == "q8_0":
        return quantize_q8_0(arr)
    raise ValueError(f"unsupported tensor type {ttype!r} (f32, f16, bf16, q8_0)")


# --- metadata values ------------------------------------------------------------------------------

def _is_typed(v):
    return isinstance(v, tuple) and len(v) >= 2 and isinstance(v[0], str) and v[0] in VALUE_TYPES


def _infer_int(v):
    if 0 <= v < 2**32:
        return "u32"
    if -2**31 <= v < 0:
        return "i32"
    if 0 <= v < 2**64:
        return "u64"
    if -2**63 <= v < 0:
        return "i64"
    raise ValueError(f"integer {v} does not fit in 64 bits")


def _normalize(key, v):
    """Any accepted metadata value -> ("array", elem_type, values) or (scalar_type, value)."""
    if _is_typed(v):
        if v[0] == "array":
            if len(v) != 3 or v[1] not in VALUE_TYPES:
                raise ValueError(f"{key}: arrays are ('array', elem_type, values), got {v!r}")
            elems = list(v[2])
            if v[1] == "array":
                elems = [_normalize(key, e) for e in elems]
                if any(e[0] != "array" for e in elems):
                    raise ValueError(f"{key}: elements of an array of arrays must be arrays")
            return ("array", v[1], elems)
        if len(v) != 2:
            raise ValueError(f"{key}: scalars are (type, value), got {v!r}")
        return v
    if isinstance(v, (bool, np.bool_)):
        return ("bool", bool(v))
    if isinstance(v, str):
        return ("string", v)
    if isinstance(v, np.integer):
        return (_NP_TO_VALUE[np.dtype(type(v))], int(v))
    if isinstance(v, int):
        return (_infer_int(v), v)
    if isinstance(v, (float, np.floating)):
        return ("f32", float(v))
    if isinstance(v, np.ndarray):
        if v.ndim != 1 or v.dtype not in _NP_TO_VALUE:
            raise ValueError(f"{key}: numpy metadata arrays must be 1-D of a GGUF dtype, got {v.dtype} {v.shape}")
        return ("array", _NP_TO_VALUE[v.dtype], v.tolist())
    if isinstance(v, list):
        if not v:
            raise ValueError(f"{key}: an empty list needs an explicit type: ('array', 'u8', [])")
        if all(isinstance(e, str) for e in v):
            return ("array", "string", v)
        if all(isinstance(e, (bool, np.bool_)) for e in v):
            return ("array", "bool", [bool(e) for e in v])
        if all(isinstance(e, (int, float, np.integer, np.floating)) and not isinstance(e, bool) for e in v):
            if any(isinstance(e, (float, np.floating)) for e in v):
                return ("array", "f32", [float(e) for e in v])
            return ("array", "i32", [int(e) for e in v])
        raise ValueError(f"{key}: cannot infer one GGUF element type for {v[:4]!r}...")
    raise ValueError(f"{key}: cannot store {type(v).__name__} in GGUF metadata")


def _pack_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _pack_scalar(t, v):
    if t == "string":
        return _pack_string(v)
    if t == "bool" and v not in (True, False, 0, 1):
        raise ValueError(f"bool value {v!r}")
    return struct.pack(_SCALAR_FMT[t], v)


def _pack_value(norm):
    if norm[0] == "array":
        _, et, elems = norm
        out = [struct.pack("<IQ", VALUE_TYPES[et], len(elems))]
        if et == "array":
            out += [_pack_value(e) for e in elems]
        elif et == "string":
            out += [_pack_string(e) for e in elems]
        else:
            out.append(np.asarray(elems, dtype=np.dtype(_SCALAR_FMT[et])).tobytes() if elems else b"")
        return b"".join(out)
    return _pack_scalar(norm[0], norm[1])


# --- writer / reader ------------------------------------------------------------------------------

def _pad(n, alignment):
    return (alignment - n % alignment) % alignment


def write_gguf(path, metadata, tensors, alignment=DEFAULT_ALIGNMENT):
    """Write a GGUF v3 file. metadata: {key: value} (see the module docstring); tensors:
    {name: (float32 array, "f32" | "f16" | "bf16" | "q8_0")}, written in the dict's order."""
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment {alignment} is not a power of two")
    meta = dict(metadata)
    if "general.alignment" in meta:
        given = _normalize("general.alignment", meta["general.alignment"])
        if given[1] != alignment:
            raise ValueError(f"general.alignment={given[1]} but alignment={alignment}")
    elif alignment != DEFAULT_ALIGNMENT:
        meta["general.alignment"] = ("u32", alignment)

    kv = []
    for key, value in meta.items():
        norm = _normalize(key, value)
        kv.append(_pack_string(key) + struct.pack("<I", VALUE_TYPES[norm[0]]) + _pack_value(norm))

    infos, blobs, offset = [], [], 0
    for name, (arr, ttype) in tensors.items():
        arr = np.asarray(arr, dtype=np.float32)
        if ttype not in GGML_TYPES:
            raise ValueError(f"{name}: unsupported tensor type {ttype!r} (f32, f16, bf16, q8_0)")
        blob = _tensor_bytes(arr, ttype)
        ne = list(reversed(arr.shape))
        infos.append(_pack_string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
                     + struct.pack("<IQ", GGML_TYPES[ttype], offset))
        blobs.append(blob + b"\0" * _pad(len(blob), alignment))
        offset += len(blobs[-1])

    head = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv)) + b"".join(kv) + b"".join(infos)
    head += b"\0" * _pad(len(head), alignment)
    with open(path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)


class _Cursor:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError(f"truncated at byte {self.pos}: need {n} bytes")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        return self.take(self.unpack("<Q")).decode("utf-8")


def _read_value(c, t):
    name = VALUE_TYPE_NAMES[t]
    if name == "string":
        return c.string()
    if name == "array":
        et, n = c.unpack("<I"), c.unpack("<Q")
        return [_read_value(c, et) for _ in range(n)]
    return c.unpack(_SCALAR_FMT[name])


def read_gguf(path):
    """Read a GGUF v3 file written by write_gguf (or llama.cpp, for f32/f16/bf16/q8_0 tensors).
    Returns {"metadata": {key: (type_name, value)}, "alignment": int,
             "tensors": {name: {"type": str, "shape": tuple, "data": float32 array, "raw": bytes}}}."""
    with open(path, "rb") as f:
        data = f.read()
    c = _Cursor(data)
    if c.take(4) != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    version = c.unpack("<I")
    if version != GGUF_VERSION:
        raise ValueError(f"{path}: GGUF version {version}, only 3")
    n_tensors, n_kv = c.unpack("<Q"), c.unpack("<Q")
    metadata = {}
    for _ in range(n_kv):
        key = c.string()
        t = c.unpack("<I")
        metadata[key] = (VALUE_TYPE_NAMES[t], _read_value(c, t))
    alignment = metadata.get("general.alignment", ("u32", DEFAULT_ALIGNMENT))[1]
    infos = []
    for _ in range(n_tensors):
        name = c.string()
        n_dims = c.unpack("<I")
        ne = [c.unpack("<Q") for _ in range(n_dims)]
        infos.append((name, tuple(reversed(ne)), GGML_TYPE_NAMES[c.unpack("<I")], c.unpack("<Q")))
    base = c.pos + _pad(c.pos, alignment)
    tensors = {}
    for name, shape, ttype, off in infos:
        n = int(np.prod(shape, dtype=np.int64))
        nbytes = {"f32": 4 * n, "f16": 2 * n, "bf16": 2 * n, "q8_0": n // QK8_0 * Q8_0_BLOCK_BYTES}[ttype]
        if off % alignment or base + off + nbytes > len(data):
            raise ValueError(f"{path}: tensor {name} at offset {off} ({nbytes} bytes) is misaligned or out of the file")
        raw = data[base + off:base + off + nbytes]
        if ttype == "f32":
            arr = np.frombuffer(raw, dtype="<f4").reshape(shape)
        elif ttype == "f16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32).reshape(shape)
        elif ttype == "bf16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
        else:
            arr = dequantize_q8_0(raw, shape)
        tensors[name] = {"type": ttype, "shape": shape, "data": arr.astype(np.float32), "raw": raw}
    return {"metadata": metadata, "alignment": alignment, "tensors": tensors}


# --- self-check and CLI ---------------------------------------------------------------------------

def _q8_0_reference(x):
    """Scalar transcription of ggml's quantize_row_q8_0_ref with Python's struct for f32/f16 rounding."""
    f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
    out = b""
    for i in range(0, len(x), QK8_0):
        blk = [f32(float(v)) for v in x[i:i + QK8_0]]
        amax = max(abs(v) for v in blk)
        d = f32(amax / 127.0)
        inv = f32(1.0 / d) if d else 0.0
        qs = []
        for v in blk:
            x0 = f32(v * inv)
            r = int(abs(x0) + 0.5)  # roundf: half away from zero (exact: x0 is a float32 in a double)
            qs.append(-r if x0 < 0 else r)
        out += struct.pack("<e", d) + struct.pack("<32b", *qs)
    return out


def selftest():
    import os
    import tempfile
    rng = np.random.default_rng(0)
    x = rng.standard_normal(32 * 64).astype(np.float32) * np.float32(3)
    x[:32] = [127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5] + [0] * 24   # d == 1: exercises roundf ties
    x[32:64] = 0                                                           # an all-zero block: d == 0
    assert quantize_q8_0(x) == _q8_0_reference(x), "q8_0 differs from the scalar ggml transcription"
    assert list(np.frombuffer(quantize_q8_0(x)[2:10], np.int8)) == [127, 3, -3, 1, -1, 2, -2, 127]
    deq = dequantize_q8_0(quantize_q8_0(x), x.shape)
    d = (np.abs(x.reshape(-1, 32)).max(axis=1) / np.float32(127)).astype(np.float32)
    bound = 0.5 * d + 127 * np.abs(d.astype(np.float16).astype(np.float32) - d) + 1e-6  # rounding + f16 scale
    assert np.all(np.abs(deq - x).reshape(-1, 32) <= bound[:, None])
    meta = {"general.architecture": "llama", "llama.block_count": 2, "x.neg": -3, "x.big": 2**40,
            "x.f": 0.5, "x.b": True, "tokenizer.ggml.tokens": ["a", "b"], "tokenizer.ggml.scores": [0.0, -1.5],
            "tokenizer.ggml.token_type": [1, 3], "x.u8": ("u8", 7), "x.empty": ("array", "u8", []),
            "x.nested": ("array", "array", [("array", "i32", [1, 2]), ("array", "string", ["z"])])}
    tensors = {"w": (x.reshape(64, 32), "q8_0"), "v": (np.arange(6, dtype=np.float32).reshape(2, 3), "f32"),
               "h": (np.array([1, -2, 0.5], np.float32), "f16"), "b": (np.array([[1, 1.00390625]], np.float32), "bf16")}
    with tempfile.TemporaryDirectory() as tmp:
        for alignment in (32, 64):
            p = os.path.join(tmp, "t.gguf")
            write_gguf(p, meta, tensors, alignment=alignment)
            g = read_gguf(p)
            m = g["metadata"]
            assert g["alignment"] == alignment
            assert m["llama.block_count"] == ("u32", 2) and m["x.neg"] == ("i32", -3) and m["x.big"] == ("u64", 2**40)
            assert m["tokenizer.ggml.scores"] == ("array", [0.0, -1.5]) and m["x.u8"] == ("u8", 7)
            assert m["x.nested"] == ("array", [[1, 2], ["z"]]) and m["x.empty"] == ("array", [])
            assert np.array_equal(g["tensors"]["w"]["data"], deq.reshape(64, 32))
            assert g["tensors"]["w"]["shape"] == (64, 32)
            assert np.array_equal(g["tensors"]["v"]["data"], tensors["v"][0])
            assert np.array_equal(g["tensors"]["h"]["data"], tensors["h"][0])
            assert list(g["tensors"]["b"]["data"][0]) == [1.0, 1.0]   # 1 + 2^-8 ties to even
    print("gguf_io selftest: ok")


def _dump(path):
    g = read_gguf(path)
    for k, (t, v) in g["metadata"].items():
        s = repr(v)
        print(f"{k} ({t}): {s[:120]}{'...' if len(s) > 120 else ''}")
    for name, t in g["tensors"].items():
        print(f"tensor {name} {t['type']} {list(t['shape'])}")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "selftest":
        selftest()
    elif len(sys.argv) == 3 and sys.argv[1] == "dump":
        _dump(sys.argv[2])
    else:
        sys.exit("usage: gguf_io.py selftest | dump FILE.gguf")
