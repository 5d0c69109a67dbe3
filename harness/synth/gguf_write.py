"""A vocabulary-only GGUF file, the same bytes on every tokconf install.

A synthetic vocabulary's recordings pin its sha256, so its bytes must not depend on the installed
gguf-py, whose `GGUFWriter` chooses key order, alignment keys and padding as its version sees fit.
This writes GGUF v3 as ggml's `gguf_init_from_file_impl` reads it: magic, version, no tensors, the
keys in the order given, each value typed by the table below (the types llama.cpp's converter
writes for these keys); with no tensors there is no data section to align.
"""

from __future__ import annotations

import struct
from typing import Any

from tokconf_reference.gguf_reader import SCALAR_FORMATS, GGUFValueType

_ARRAYS = {  # key -> element type
    "tokenizer.ggml.tokens": GGUFValueType.STRING,
    "tokenizer.ggml.merges": GGUFValueType.STRING,
    "tokenizer.ggml.token_type": GGUFValueType.INT32,
    "tokenizer.ggml.scores": GGUFValueType.FLOAT32,
    "tokenizer.ggml.precompiled_charsmap": GGUFValueType.UINT8,
}


def kind_of(key: str, value: Any) -> GGUFValueType:
    """A key's GGUF type: arrays by the table, token ids UINT32, flags BOOL, names STRING."""
    if key in _ARRAYS:
        return GGUFValueType.ARRAY
    if isinstance(value, bool):
        return GGUFValueType.BOOL
    if isinstance(value, int) and key.endswith("_token_id"):
        return GGUFValueType.UINT32
    if isinstance(value, str):
        return GGUFValueType.STRING
    raise ValueError(f"no GGUF type for {key} = {value!r}")


def _strings(texts: list[str]) -> list[bytes]:
    """Each text as a GGUF string (u64 length, UTF-8 bytes, lone surrogates as the bytes they stand
    for), as pieces to join; the lengths packed at once (all recipes write 10 million strings)."""
    raws = [text.encode("utf-8", "surrogateescape") for text in texts]
    lengths = struct.pack(f"<{len(raws)}Q", *map(len, raws))
    return [piece for at, raw in enumerate(raws) for piece in (lengths[8 * at : 8 * at + 8], raw)]


def _string(text: str) -> bytes:
    return b"".join(_strings([text]))


def _value(kind: GGUFValueType, value: Any) -> bytes:
    return _string(value) if kind is GGUFValueType.STRING else struct.pack(SCALAR_FORMATS[kind], value)


def gguf_bytes(fields: dict[str, Any]) -> bytes:
    """The file: `fields` in their order (`general.architecture` first, as llama.cpp expects)."""
    out = [b"GGUF", struct.pack("<IQQ", 3, 0, len(fields))]
    for key, value in fields.items():
        kind = kind_of(key, value)
        out += [_string(key), struct.pack("<I", kind)]
        if kind is GGUFValueType.ARRAY:
            element = _ARRAYS[key]
            out.append(struct.pack("<IQ", element, len(value)))
            if element is GGUFValueType.UINT8:
                out.append(bytes(value))
            elif element is GGUFValueType.STRING:
                out += _strings(value)
            else:
                out.append(struct.pack(f"<{len(value)}{SCALAR_FORMATS[element][1]}", *value))
        else:
            out.append(_value(kind, value))
    return b"".join(out)
