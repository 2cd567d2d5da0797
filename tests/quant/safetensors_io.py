#!/usr/bin/python3
"""Safetensors files in NumPy alone, for the reference packers (hf_quant_packer.py,
hf_quant_packer8.py): 8-byte little-endian header length, JSON header {name: {dtype, shape,
data_offsets}} plus optional "__metadata__", then the raw little-endian bytes. bf16 is
handled as uint16 bit patterns and F8_E4M3 as uint8 bytes (NumPy has neither type).
"""
import json
import os
import struct

import numpy as np

_NP_OF = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
    "BOOL": np.bool_,
    # float8_e4m3fn: NumPy has no fp8 type, so its bytes (hf_quant_packer8.py encodes them).
    "F8_E4M3": np.uint8,
}


class Tensor:
    """A safetensors tensor: its dtype tag and a NumPy array (bf16 as uint16 bits, F8_E4M3 as
    uint8 bytes)."""

    __slots__ = ("dtype", "array")

    def __init__(self, dtype, array):
        if dtype not in _NP_OF:
            raise ValueError(f"unsupported safetensors dtype {dtype}")
        self.dtype = dtype
        self.array = np.ascontiguousarray(array, dtype=_NP_OF[dtype])

    def to_f32(self):
        return to_f32(self.dtype, self.array)


def bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (NaN stays NaN)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded[nan] = ((u[nan] >> 16) | np.uint32(0x40)).astype(np.uint16)
    return rounded


def to_f32(dtype, array):
    if dtype == "BF16":
        return bf16_bits_to_f32(array)
    return array.astype(np.float32)


def from_f32(dtype, x):
    """float32 values -> a Tensor of `dtype` (F32, F16 or BF16)."""
    if dtype == "BF16":
        return Tensor("BF16", f32_to_bf16_bits(x))
    if dtype in ("F16", "F32", "F64"):
        return Tensor(dtype, np.asarray(x).astype(_NP_OF[dtype]))
    raise ValueError(f"not a float dtype: {dtype}")


def read_safetensors(path):
    """-> ({name: Tensor}, metadata dict or None)."""
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len].decode("utf-8"))
    base = 8 + header_len
    metadata = header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        dtype, shape = info["dtype"], info["shape"]
        begin, end = info["data_offsets"]
        np_dtype = np.dtype(_NP_OF[dtype]).newbyteorder("<")
        count = int(np.prod(shape)) if shape else 1
        if end - begin != count * np_dtype.itemsize:
            raise ValueError(f"{path}: {name}: {end - begin} bytes for {dtype}{shape}")
        arr = np.frombuffer(data, dtype=np_dtype, count=count, offset=base + begin).reshape(shape)
        tensors[name] = Tensor(dtype, arr.astype(_NP_OF[dtype]))
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: Tensor}, names sorted, header padded with spaces to 8 bytes."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        t = tensors[name]
        # The array's own bytes, written from its buffer: tobytes() copied every tensor first
        # (~3.7 s of a qwen3-tiny-k packing's 10 s went to those copies and their page faults).
        blob = np.ascontiguousarray(t.array.astype(np.dtype(_NP_OF[t.dtype]).newbyteorder("<"), copy=False))
        blob = blob.reshape(-1).view(np.uint8)
        header[name] = {"dtype": t.dtype, "shape": list(t.array.shape),
                        "data_offsets": [offset, offset + blob.nbytes]}
        offset += blob.nbytes
        blobs.append(blob)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def read_checkpoint(model_dir):
    """All tensors of a (possibly sharded) checkpoint directory -> ({name: Tensor}, metadata)."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors, metadata = {}, None
    for name in files:
        part, meta = read_safetensors(os.path.join(model_dir, name))
        tensors.update(part)
        metadata = metadata or meta
    return tensors, metadata
