"""Implementations under test, behind one interface: `--impl` forms.

- `module:factory` — a Python callable taking the GGUF path and returning an object with
  `encode(data: bytes, add_special: bool, parse_special: bool) -> list[int]` (raise to refuse;
  raise `Unsupported` for an input it cannot be given at all);
- a name registered in the `tokconf.implementations` entry-point group (a factory as above);
- `cmd:PROGRAM ARGS…` — a program in any language speaking docs/line-protocol.md;
- `llama.cpp@N` — a live llama.cpp build (for upgrade regressions), crash-isolated as in recording.

Each gives a `Session` per vocabulary; `Session.encode_many` answers many inputs at once so the
check spends its time in the implementation, not in the harness.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.cmake_build import require_build
from harness.errors import TokconfError
from harness.oracle import LibllamaOracle, Request
from harness.outcome import UNSUPPORTED_CASE, Outcome, Refusal

ENTRY_POINT_GROUP = "tokconf.implementations"

# The facts an implementation may expose as attributes, compared with the recording's facts.
FACT_ATTRIBUTES = {"add_bos": "add_bos", "add_eos": "add_eos", "bos_id": "bos", "eos_id": "eos", "eog_ids": "eog_ids"}


class Unsupported(Exception):
    """The implementation does not handle this vocabulary (reported as unsupported, never as passed)."""


class Decoder(Protocol):
    """Decoding as llama.cpp does it: `llama_token_to_piece` of every id, and `llama_detokenize`."""

    def pieces(self, special: bool) -> list[bytes]: ...

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes: ...


class Session(Protocol):
    """One vocabulary loaded into an implementation."""

    def encode_many(self, requests: list[Request]) -> list[Outcome]: ...

    def decoder(self) -> Decoder | None:
        """Its decoding, if it exposes one (checked against decoding recordings)."""
        ...

    def facts(self) -> dict[str, Any]:
        """Whatever of `FACT_ATTRIBUTES` the implementation exposes, under the recording's names."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class VocabInfo:
    """What an implementation is told about the vocabulary it loads."""

    path: Path
    vocab_type: str
    model: str | None
    pre: str | None


class Implementation(Protocol):
    name: str

    def open(self, vocab: VocabInfo) -> Session: ...

    def close(self) -> None: ...


class PythonSession:
    """An object from a Python factory; exceptions from `encode` are refusals."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        encode = self.tokenizer.encode
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                out.append(list(encode(data, add_special, parse_special)))
            except Unsupported as error:
                out.append(Refusal(f"{UNSUPPORTED_CASE} {error}"))
            except Exception as error:
                out.append(Refusal(f"{type(error).__name__}: {error}"))
        return out

    def decoder(self) -> Decoder | None:
        """Given by `token_to_piece(id, special)`, `decode(ids, remove_special, unparse_special)` and
        `n_tokens` on the object (the reference's API); without all three, decoding is not checked."""
        if all(hasattr(self.tokenizer, name) for name in ("token_to_piece", "decode", "n_tokens")):
            return _PythonDecoder(self.tokenizer)
        return None

    def facts(self) -> dict[str, Any]:
        found = {}
        for attribute, fact in FACT_ATTRIBUTES.items():
            value = getattr(self.tokenizer, attribute, None)
            if value is not None:
                found[fact] = sorted(value) if fact == "eog_ids" else value
        return found

    def close(self) -> None:
        close = getattr(self.tokenizer, "close", None)
        if callable(close):
            close()


class _PythonDecoder:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def pieces(self, special: bool) -> list[bytes]:
        piece = self.tokenizer.token_to_piece
        return [bytes(piece(token, special)) for token in range(self.tokenizer.n_tokens)]

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        return bytes(self.tokenizer.decode(ids, remove_special, unparse_special))


class PythonImplementation:
    """`module:factory` or an entry point: a factory called with the GGUF path."""

    def __init__(self, name: str, factory: Callable[[Path], Any]) -> None:
        self.name = name
        self.factory = factory

    def open(self, vocab: VocabInfo) -> Session:
        try:
            tokenizer = self.factory(vocab.path)
        except NotImplementedError as error:
            raise Unsupported(str(error) or f"{self.name} does not support {vocab.vocab_type}") from None
        except Exception as error:
            raise Unsupported(
                f"{self.name} could not load {vocab.path.name}: {type(error).__name__}: {error}"
            ) from None
        if tokenizer is None:
            raise Unsupported(f"{self.name} returned no tokenizer for {vocab.path.name}")
        return PythonSession(tokenizer)

    def close(self) -> None:
        """Nothing shared across vocabularies."""


class LlamaCppSession:
    def __init__(self, oracle: LibllamaOracle) -> None:
        self.oracle = oracle
        self._facts = oracle.facts()

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        return self.oracle.tokenize_many(requests)

    def decoder(self) -> Decoder | None:
        return self.oracle

    def facts(self) -> dict[str, Any]:
        return {
            "add_bos": self._facts["add_bos"],
            "add_eos": self._facts["add_eos"],
            "bos": self._facts["special_ids"]["bos"],
            "eos": self._facts["special_ids"]["eos"],
            "eog_ids": self._facts["eog_ids"],
        }

    def close(self) -> None:
        self.oracle.close()


class LlamaCppImplementation:
    """`llama.cpp@N`: a live build, to see whether it still answers as the recordings say."""

    def __init__(self, build: int) -> None:
        self.build = require_build(build)
        self.name = f"llama.cpp@{build}"

    def open(self, vocab: VocabInfo) -> Session:
        return LlamaCppSession(LibllamaOracle(self.build, vocab.path))

    def close(self) -> None:
        """Each session owns its worker."""


def _load_factory(spec: str) -> Callable[[Path], Any]:
    module_name, _, attribute = spec.partition(":")
    if "" not in sys.path:  # find modules in the current folder, as `python -m pytest` would
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise TokconfError(f"--impl {spec}: cannot import {module_name}: {error}", "check PYTHONPATH") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise TokconfError(f"--impl {spec}: {module_name} has no callable {attribute!r}", "name a factory function")
    return factory  # type: ignore[no-any-return]


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def resolve(spec: str, timeout: float) -> Implementation:
    """Turn an `--impl` value into an implementation."""
    if spec.startswith("cmd:"):
        from harness.line_protocol import CommandImplementation

        return CommandImplementation(spec[4:], timeout)
    if spec.startswith("llama.cpp@"):
        number = spec.removeprefix("llama.cpp@")
        if not number.isdigit():
            raise TokconfError(f"--impl {spec}: expected llama.cpp@BUILD, e.g. llama.cpp@11192")
        return LlamaCppImplementation(int(number))
    if ":" in spec:
        return PythonImplementation(spec, _load_factory(spec))
    points = _entry_points()
    if spec in points:
        return PythonImplementation(spec, points[spec].load())
    known = ", ".join(sorted(points)) or "none installed"
    raise TokconfError(
        f"unknown implementation {spec!r}",
        f"use module:factory, 'cmd:PROGRAM ARGS', llama.cpp@BUILD or a registered name ({known})",
    )
