"""A bounds-checked reader of the GGUF header that keeps only the tokenizer's keys.

`gguf.GGUFReader` maps the whole file and builds numpy views of every field and tensor (about 7 s for
the qwen2 vocab here); a tokenizer needs a few keys of the header. This reader walks the key/value
section once (llama.cpp's gguf.cpp layout: magic, version, tensor count, key/value count, then typed
values), keeps `tokenizer.*`, `general.architecture` and `general.name`, skips everything else, and never reads
the tensor section.

Every length is checked against what is left of the file before anything is read or allocated, so
a truncated or hostile file raises `GGUFError` — never a hang, a huge allocation or an over-read.
"""

from __future__ import annotations

import mmap
import struct
from enum import IntEnum
from pathlib import Path
from typing import Any


class GGUFValueType(IntEnum):
    """GGUF's value types (ggml's `enum gguf_type`, ggml/include/gguf.h), as the `gguf` package's
    enum of the same name numbers them. Written out because importing `gguf` (numpy with it) took 0.09 s
    of the 0.11 s every process that loads the reference spent importing it (0.03 s now; `python -X
    importtime`): a `cmd:` port, a worker, each test's subprocess. tests/test_gguf_reader.py holds
    this enum equal to gguf's."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


MAGIC = b"GGUF"
KEPT_PREFIXES = ("tokenizer.", "general.architecture", "general.name")  # llama.cpp reads the name for phi-3

# Fixed-size value types: struct format by GGUFValueType (tokconf's GGUF writer uses it too).
SCALAR_FORMATS: dict[int, str] = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.BOOL: "<?",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
}


_LENGTH = struct.Struct("<Q")  # a string's length


class GGUFError(ValueError):
    """The file is not a GGUF file this reader can trust; the message says where it went wrong."""


class _Cursor:
    def __init__(self, data: bytes | mmap.mmap, path: Path) -> None:
        self.data = data
        self.pos = 0
        self.path = path

    def need(self, size: int, what: str) -> None:
        if size < 0 or self.pos + size > len(self.data):
            raise GGUFError(f"{self.path}: truncated or corrupt at byte {self.pos}: {what} needs {size} bytes")

    def unpack(self, fmt: str, what: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size, what)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self, what: str) -> bytes:
        size = self.unpack("<Q", f"{what} length")
        self.need(size, what)
        value = bytes(self.data[self.pos : self.pos + size])
        self.pos += size
        return value

    def strings(self, count: int, what: str) -> list[str]:
        """`count` strings in one tight loop (a vocabulary has ~250,000; this is most of the load time)."""
        data, pos, end = self.data, self.pos, len(self.data)
        out: list[str] = []
        length, append = _LENGTH.unpack_from, out.append  # the length read in place, not sliced out first
        try:
            for _ in range(count):
                (size,) = length(data, pos)
                pos += 8
                if pos + size > end:
                    self.pos = pos - 8
                    self.need(8 + size, f"{what} (string of {size} bytes)")
                append(data[pos : pos + size].decode("utf-8", "surrogateescape"))
                pos += size
        except struct.error:  # fewer than 8 bytes left for a length
            self.pos = pos
            self.need(8, f"{what} (string length)")
        self.pos = pos
        return out

    def value(self, kind: int, what: str, keep: bool) -> Any:
        if kind in SCALAR_FORMATS:
            return self.unpack(SCALAR_FORMATS[kind], what)
        if kind == GGUFValueType.STRING:
            raw = self.string(what)
            return _text(raw) if keep else None
        if kind == GGUFValueType.ARRAY:
            return self.array(what, keep)
        raise GGUFError(f"{self.path}: {what} has unknown value type {kind}")

    def array(self, what: str, keep: bool) -> list[Any] | None:
        kind = self.unpack("<I", f"{what} element type")
        count = self.unpack("<Q", f"{what} element count")
        if kind in SCALAR_FORMATS:
            fmt = SCALAR_FORMATS[kind]
            size = struct.calcsize(fmt) * count
            self.need(size, f"{what} ({count} elements)")
            start, self.pos = self.pos, self.pos + size
            if not keep:
                return None
            return list(struct.unpack_from(f"<{count}{fmt[1]}", self.data, start))
        if kind == GGUFValueType.STRING:
            self.need(8 * count, f"{what} ({count} strings)")  # each string has at least its length
            if not keep:
                for _ in range(count):
                    size = self.unpack("<Q", f"{what} string length")
                    self.need(size, what)
                    self.pos += size
                return None
            return self.strings(count, what)
        # gguf_init_from_file_impl refuses an array of arrays ("has invalid GGUF type"), as any other type.
        raise GGUFError(f"{self.path}: {what} has invalid element type {kind} (llama.cpp refuses it)")


def _text(raw: bytes) -> str:
    """GGUF strings are UTF-8; llama.cpp keeps bytes as they are, so undecodable ones survive as surrogates."""
    return raw.decode("utf-8", errors="surrogateescape")


def read_tokenizer_fields(path: Path) -> dict[str, Any]:
    """The `tokenizer.*` keys (and `general.architecture`) of a GGUF file, as Python values."""
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _read(_Cursor(data, path))
    except ValueError as error:  # mmap of an empty file
        if isinstance(error, GGUFError):
            raise
        raise GGUFError(f"{path}: empty file") from None
    except OSError as error:
        raise GGUFError(f"{path}: cannot read: {error.strerror}") from None


def _read(cursor: _Cursor) -> dict[str, Any]:
    cursor.need(4, "magic")
    if bytes(cursor.data[:4]) != MAGIC:
        raise GGUFError(f"{cursor.path}: not a GGUF file (magic {bytes(cursor.data[:4])!r})")
    cursor.pos = 4
    version = cursor.unpack("<I", "version")
    if version not in (2, 3):
        raise GGUFError(f"{cursor.path}: GGUF version {version} is not supported (2 and 3 are)")
    cursor.unpack("<Q", "tensor count")
    n_kv = cursor.unpack("<Q", "key/value count")
    cursor.need(12 * n_kv, f"{n_kv} key/value pairs")  # a key length and a type each, at least
    fields: dict[str, Any] = {}
    for _ in range(n_kv):
        key = _text(cursor.string("key"))
        kind = cursor.unpack("<I", f"type of {key}")
        keep = key.startswith(KEPT_PREFIXES)
        value = cursor.value(kind, key, keep)
        if keep:
            fields[key] = value
    return fields
