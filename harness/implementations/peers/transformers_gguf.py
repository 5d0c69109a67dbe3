"""A peer under test: transformers' own GGUF tokenizer loading, `AutoTokenizer.from_pretrained(folder,
gguf_file=...)`, without torch (`--impl transformers-gguf`, `pip install -e '.[peers]'`).

transformers gates GGUF loading on torch although a tokenizer reads no tensor: `load_gguf_checkpoint`
refuses unless `is_torch_available()`, and its fast metadata reader imports torch at module level
for tensor dtypes. Two narrow stand-ins let the real code path run: the gate answers yes inside
`load_gguf_checkpoint` only (it is then called with `return_tensors=False` and touches no torch
name), and the reader module is imported once with a placeholder `torch` whose attributes are
never used by `read_gguf_metadata`. Everything that decides ids is transformers' and tokenizers'.

One more stand-in is for time only: while the tokenizer loads, `gguf.GGUFReader` (which
`load_gguf_checkpoint` imports when called) parses the same bytes through a plain array view of
its memory map (`_ArrayViewReader`); numpy.memmap's Python hooks on each of the ~750,000 slices a
150,000-token vocabulary makes took 11 of qwen2's 18 s.

Modes: `add_special` is `add_special_tokens`; `parse_special=False` is `split_special_tokens=True`
(special tokens' texts are then ordinary text). An input that is not valid UTF-8 cannot be given to
a `str` API, so such cases are reported as unsupported, never as passed or failed.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
from pathlib import Path
from typing import Any
from unittest import mock

import gguf
import numpy as np

from ..base import Unsupported

_READY = False


class _Placeholder:
    """Stands for any torch attribute at import time (dtype constants, annotations)."""

    def __getattr__(self, name: str) -> _Placeholder:
        return _Placeholder()

    def __call__(self, *args: Any, **kwargs: Any) -> _Placeholder:
        return _Placeholder()


def _prepare() -> None:
    """Open transformers' torch gates for the tokenizer path only (see the module docstring)."""
    global _READY
    if _READY:
        return
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
    except ImportError as error:
        raise Unsupported(f"transformers is not installed ({error}): pip install -e '.[peers]'") from None
    if "torch" not in sys.modules:
        stub = types.ModuleType("torch")
        stub.__getattr__ = lambda name: _Placeholder()  # type: ignore[method-assign]
        sys.modules["torch"] = stub
        try:
            importlib.import_module("transformers.integrations.gguf.reader")
        finally:
            del sys.modules["torch"]
    gguf_utils.is_torch_available = lambda: True  # read only by its GGUF loaders' guards
    logging.getLogger("transformers").setLevel(logging.ERROR)
    _READY = True


class _ArrayViewReader(gguf.GGUFReader):
    """gguf-py's reader, parsing its memory map through an `np.ndarray` view: the same bytes and code,
    without memmap's per-slice `__getitem__`/`__array_finalize__` (see the module docstring)."""

    @property  # type: ignore[override]
    def data(self) -> np.ndarray[Any, Any]:
        return self._array

    @data.setter
    def data(self, mapped: np.memmap[Any, Any]) -> None:
        self._array = mapped.view(np.ndarray)  # keeps the map alive as its base


class TransformersGGUF:
    """A GGUF vocabulary as `AutoTokenizer` loads it."""

    def __init__(self, path: Path) -> None:
        _prepare()
        from transformers import AutoTokenizer

        try:
            with mock.patch.object(gguf, "GGUFReader", _ArrayViewReader):
                self.tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        except (
            ValueError,
            KeyError,
            NotImplementedError,
        ) as error:  # "GGUF model with architecture x is not supported"
            raise Unsupported(f"transformers does not load {path.name}: {error}") from None
        # The facts the check compares (tokconf.core.facts.Fact); None is "not exposed".
        self.add_bos = getattr(self.tokenizer, "add_bos_token", None)
        self.add_eos = getattr(self.tokenizer, "add_eos_token", None)
        self.bos_id = self.tokenizer.bos_token_id
        self.eos_id = self.tokenizer.eos_token_id

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Unsupported("not valid UTF-8: a str API cannot be given these bytes") from None
        encoded = self.tokenizer(text, add_special_tokens=add_special, split_special_tokens=not parse_special)
        return list(encoded["input_ids"])


def from_gguf(path: Path) -> TransformersGGUF:
    """The `tokconf.implementations` entry point `transformers-gguf`."""
    return TransformersGGUF(path)
