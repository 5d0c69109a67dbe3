"""A vocabulary-only GGUF file, the same bytes on every tokconf install.

A synthetic vocabulary's recordings pin its sha256, so its bytes must not depend on the installed
gguf-py, whose `GGUFWriter` chooses key order, alignment keys and padding as its version sees fit.
This writes GGUF v3 as ggml's `gguf_init_from_file_impl` reads it: magic, version, no tensors, the
keys in the order given, each value typed by the table below (the types llama.cpp's converter
writes for these keys); with no tensors there is no data section to align.
"""

from __future__ import annotations

import enum
import struct
from typing import Any


class Kind(enum.IntEnum):
    """`enum gguf_type` (ggml/include/gguf.h)."""

    UINT8 = 0
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9


_SCALAR = {Kind.UINT8: "<B", Kind.UINT32: "<I", Kind.INT32: "<i", Kind.FLOAT32: "<f", Kind.BOOL: "<?"}
_ARRAYS = {  # key -> element type
    "tokenizer.ggml.tokens": Kind.STRING,
    "tokenizer.ggml.merges": Kind.STRING,
    "tokenizer.ggml.token_type": Kind.INT32,
    "tokenizer.ggml.scores": Kind.FLOAT32,
    "tokenizer.ggml.precompiled_charsmap": Kind.UINT8,
}


def kind_of(key: str, value: Any) -> Kind:
    """A key's GGUF type: arrays by the table, token ids UINT32, flags BOOL, names STRING."""
    if key in _ARRAYS:
        return Kind.ARRAY
    if isinstance(value, bool):
        return Kind.BOOL
    if isinstance(value, int) and key.endswith("_token_id"):
        return Kind.UINT32
    if isinstance(value, str):
        return Kind.STRING
    raise ValueError(f"no GGUF type for {key} = {value!r}")


def _strings(texts: list[str]) -> list[bytes]:
    """Each text as a GGUF string (u64 length, UTF-8 bytes, lone surrogates as the bytes they stand
    for), as pieces to join; the lengths packed at once (all recipes write 10 million strings)."""
    raws = [text.encode("utf-8", "surrogateescape") for text in texts]
    lengths = struct.pack(f"<{len(raws)}Q", *map(len, raws))
    return [piece for at, raw in enumerate(raws) for piece in (lengths[8 * at : 8 * at + 8], raw)]


def _string(text: str) -> bytes:
    return b"".join(_strings([text]))


def _value(kind: Kind, value: Any) -> bytes:
    return _string(value) if kind is Kind.STRING else struct.pack(_SCALAR[kind], value)


def gguf_bytes(fields: dict[str, Any]) -> bytes:
    """The file: `fields` in their order (`general.architecture` first, as llama.cpp expects)."""
    out = [b"GGUF", struct.pack("<IQQ", 3, 0, len(fields))]
    for key, value in fields.items():
        kind = kind_of(key, value)
        out += [_string(key), struct.pack("<I", kind)]
        if kind is Kind.ARRAY:
            element = _ARRAYS[key]
            out.append(struct.pack("<IQ", element, len(value)))
            if element is Kind.UINT8:
                out.append(bytes(value))
            elif element is Kind.STRING:
                out += _strings(value)
            else:
                out.append(struct.pack(f"<{len(value)}{_SCALAR[element][1]}", *value))
        else:
            out.append(_value(kind, value))
    return b"".join(out)
