"""`module:factory` and registered names: a Python tokenizer called in this process.

The factory takes the GGUF path and returns an object with
`encode(data: bytes, add_special: bool, parse_special: bool) -> list[int]`. What its exceptions mean
is the verdict contract (docs/checking.md): `Unsupported` from the factory declines the vocabulary and
from `encode` declines one input; `Refused` from `encode` refuses the input as llama.cpp does where it
aborts; anything else (a bug, `sys.exit`, ids that are not ints) is an error, never a refusal and never
unsupported. The attributes of `Fact` it has are checked (`add_bos`, `add_eos`, `bos_id`, `eos_id`,
`eog_ids`, typed as llama.cpp's), and with `token_to_piece(id, special)`,
`decode(ids, remove_special, unparse_special)` and `n_tokens` its decoding is checked too.

The module is imported with the caller's `sys.path` as it is: `python -m tokconf` and pytest put the
current folder on it, the `tokconf` script does not (set `PYTHONPATH=.` or install the port).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.facts import ExposedFacts, Fact, is_token_id
from ..core.outcome import Outcome, Refusal, RefusalKind, Request
from .base import Broken, Decoder, Refused, Session, Unsupported, VocabInfo


class PortBroke(Exception):
    """The port's code ended abnormally (a `sys.exit`, a test framework's skip, any exception that is
    not an `Exception`) where tokconf called it: carried as an ordinary exception, so that it is that
    check's error and can never end the run, green, inside the code it checks."""


def _call(where: str, function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)`, port code, with everything it may raise but Ctrl-C an `Exception`: a
    `SystemExit` or a `pytest.skip` (a BaseException) from a port is a bug like any other."""
    try:
        return function(*args)
    except (Exception, KeyboardInterrupt, GeneratorExit):
        raise
    except SystemExit as error:
        raise PortBroke(f"{where} called sys.exit({error.code!r})") from None
    except BaseException as error:
        raise PortBroke(f"{where} raised {type(error).__name__}: {str(error)[:500]}") from None


def _listed(encode: Callable[..., Any], *request: Any) -> list[Any]:
    """`encode`'s answer as a list, taken inside `_call`: a generator runs port code as it is read."""
    return list(encode(*request))


class PythonSession:
    """An object from a Python factory; `Refused` from `encode` is a refusal, `Unsupported` declines
    the input, anything else is an error. Every call into the object goes through `_call`."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        try:
            encode = _call("reading encode", getattr, self.tokenizer, "encode")
        except Exception as error:
            return [Refusal(_raised("the tokenizer", error), RefusalKind.BROKEN)] * len(requests)
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                ids = _call("encode", _listed, encode, data, add_special, parse_special)
            except Refused as error:
                out.append(Refusal(str(error) or "refused"))
                continue
            except Unsupported as error:
                out.append(Refusal(str(error) or "unsupported", RefusalKind.UNSUPPORTED))
                continue
            except Exception as error:  # a bug is not a refusal: it must not pass where llama.cpp refuses
                out.append(Refusal(_raised("encode", error), RefusalKind.BROKEN))
                continue
            if all(is_token_id(i) for i in ids):
                out.append(ids)
            else:  # a bool or a float equal to the id is still not an id, and no id is negative
                out.append(Refusal(f"encode returned something other than token ids: {ids[:8]!r}", RefusalKind.BROKEN))
        return out

    def decoder(self) -> Decoder | None:
        """Given by `token_to_piece(id, special)`, `decode(ids, remove_special, unparse_special)` and
        `n_tokens` on the object (the reference's API); without all three, decoding is not checked.
        Looking them up is port code too (a property): if that breaks, every decoding check errs."""
        names = ("token_to_piece", "decode", "n_tokens")
        try:
            exposed = _call("looking up the decoding", lambda: all(hasattr(self.tokenizer, name) for name in names))
        except Exception as error:
            return _BrokenDecoder(_raised("the decoding", error))
        return _PythonDecoder(self.tokenizer) if exposed else None

    def facts(self) -> ExposedFacts:
        """The facts the object has as attributes, typed as llama.cpp's (`Fact.exposed`); a wrong type
        or an attribute that raises breaks them all, as a `cmd:` program's wrong `facts` answer does."""
        found: ExposedFacts = {}
        for fact in Fact:
            try:
                value = _call(f"the fact {fact.value}", getattr, self.tokenizer, fact.attribute, None)
                if value is not None:
                    found[fact] = fact.exposed(value)
            except Exception as error:
                raise Broken(_raised(f"the fact {fact.value}", error)) from None
        return found

    def close(self) -> None:
        """The object's own `close`, if it has one. It runs after every verdict of the vocabulary, so
        what it raises changes none: it is reported on stderr (as the worker does, whose close is its
        own process's end), never the run's end."""
        try:
            close = _call("close", getattr, self.tokenizer, "close", None)
            if callable(close):
                _call("close", close)
        except Exception as error:
            print(f"tokconf: {_raised('the tokenizer', error)} while closing", file=sys.stderr)


class _PythonDecoder:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def pieces(self, special: bool) -> list[bytes]:
        piece = self.tokenizer.token_to_piece
        n_tokens = _call("n_tokens", getattr, self.tokenizer, "n_tokens")
        return [bytes(_call("token_to_piece", piece, token, special)) for token in range(n_tokens)]

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        return bytes(_call("decode", self.tokenizer.decode, list(ids), remove_special, unparse_special))


class _BrokenDecoder:
    """The decoding of an object whose decoding methods could not even be looked up."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def pieces(self, special: bool) -> list[bytes]:
        raise PortBroke(self.reason)

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        raise PortBroke(self.reason)


class PythonImplementation:
    """`module:factory` or an entry point: a factory called with the GGUF path."""

    def __init__(self, name: str, factory: Callable[[Path], Any]) -> None:
        self.name = name
        self.factory = factory

    def open(self, vocab: VocabInfo) -> Session:
        """The factory's object for the vocabulary: `Unsupported` declines it, anything else raised
        (or no object at all) is broken, so every case of that vocabulary is an error."""
        try:
            tokenizer = _call("the factory", self.factory, vocab.path)
        except Unsupported as error:
            raise Unsupported(str(error) or f"{self.name} does not support {vocab.path.name}") from None
        except PortBroke as error:
            raise Broken(f"{self.name} failed loading {vocab.path.name}: {error}") from None
        except Exception as error:
            raise Broken(f"{self.name} failed loading {vocab.path.name}: {_raised('the factory', error)}") from None
        if tokenizer is None:
            raise Broken(f"{self.name} returned no tokenizer for {vocab.path.name} (raise Unsupported to decline it)")
        return PythonSession(tokenizer)

    def close(self) -> None:
        """Nothing shared across vocabularies."""


def _raised(where: str, error: Exception) -> str:
    """An unexpected exception as an error's reason, with the hint a port author needs."""
    if isinstance(error, PortBroke):
        return str(error)
    hint = ""
    if isinstance(error, NotImplementedError):
        hint = " (to decline, raise tokconf's Unsupported; to refuse an input as llama.cpp does, Refused)"
    return f"{where} raised {type(error).__name__}: {str(error)[:500]}{hint}"


def load_factory(spec: str) -> Callable[[Path], Any]:
    """The callable a `module:factory` value names."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise TokconfError(f"--impl {spec}: expected module:factory, e.g. mypkg.tok:load")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise TokconfError(
            f"--impl {spec}: cannot import {module_name}: {error}",
            "install the module, or put its folder on PYTHONPATH (e.g. PYTHONPATH=. tokconf check ...)",
        ) from None
    except (Exception, SystemExit) as error:  # its own code failed (or exited) at import
        raise TokconfError(
            f"--impl {spec}: importing {module_name} failed: {type(error).__name__}: {error}", "fix the module"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise TokconfError(f"--impl {spec}: {module_name} has no callable {attribute!r}", "name a factory function")
    return factory  # type: ignore[no-any-return]
