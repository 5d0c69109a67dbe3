"""`module:factory` and registered names: a Python tokenizer called in this process.

The factory takes the GGUF path and returns an object with
`encode(data: bytes, add_special: bool, parse_special: bool) -> list[int]`. What its exceptions mean
is the verdict contract (docs/checking.md): `Unsupported` from the factory declines the vocabulary and
from `encode` declines one input; `Refused` from `encode` refuses the input as llama.cpp does where it
aborts; anything else (a bug, `sys.exit`, ids that are not ints) is an error, never a refusal and never
unsupported. The attributes of `Fact` it has are checked (`add_bos`, `add_eos`, `bos_id`, `eos_id`,
`eog_ids`, typed as llama.cpp's), and with `token_to_piece(id, special)`,
`decode(ids, remove_special, unparse_special)` and `n_tokens` its decoding is checked too.

The module is imported with the caller's `sys.path` as it is: `python -m harness` and pytest put the
current folder on it, the `tokconf` script does not (set `PYTHONPATH=.` or install the port).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.core.errors import TokconfError
from harness.core.facts import ExposedFacts, Fact
from harness.core.outcome import Outcome, Refusal, RefusalKind, Request
from harness.implementations.base import Broken, Decoder, Refused, Session, Unsupported, VocabInfo


class PythonSession:
    """An object from a Python factory; `Refused` from `encode` is a refusal, `Unsupported` declines
    the input, anything else is an error."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        encode = self.tokenizer.encode
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                ids = list(encode(data, add_special, parse_special))
            except Refused as error:
                out.append(Refusal(str(error) or "refused"))
                continue
            except Unsupported as error:
                out.append(Refusal(str(error) or "unsupported", RefusalKind.UNSUPPORTED))
                continue
            except Exception as error:  # a bug is not a refusal: it must not pass where llama.cpp refuses
                out.append(Refusal(_raised("encode", error), RefusalKind.BROKEN))
                continue
            except SystemExit as error:  # a gate must not end, green, inside the code it checks
                out.append(Refusal(f"encode called sys.exit({error.code!r})", RefusalKind.BROKEN))
                continue
            if all(type(i) is int for i in ids):
                out.append(ids)
            else:  # a bool or a float equal to the id is still not an id
                out.append(Refusal(f"encode returned something other than ints: {ids[:8]!r}", RefusalKind.BROKEN))
        return out

    def decoder(self) -> Decoder | None:
        """Given by `token_to_piece(id, special)`, `decode(ids, remove_special, unparse_special)` and
        `n_tokens` on the object (the reference's API); without all three, decoding is not checked."""
        if all(hasattr(self.tokenizer, name) for name in ("token_to_piece", "decode", "n_tokens")):
            return _PythonDecoder(self.tokenizer)
        return None

    def facts(self) -> ExposedFacts:
        """The facts the object has as attributes, typed as llama.cpp's (`Fact.exposed`); a wrong type
        or an attribute that raises breaks them all, as a `cmd:` program's wrong `facts` answer does."""
        found: ExposedFacts = {}
        for fact in Fact:
            try:
                value = getattr(self.tokenizer, fact.attribute, None)
                if value is not None:
                    found[fact] = fact.exposed(value)
            except Exception as error:
                raise Broken(_raised(f"the fact {fact.value}", error)) from None
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
        """The factory's object for the vocabulary: `Unsupported` declines it, anything else raised
        (or no object at all) is broken, so every case of that vocabulary is an error."""
        try:
            tokenizer = self.factory(vocab.path)
        except Unsupported as error:
            raise Unsupported(str(error) or f"{self.name} does not support {vocab.path.name}") from None
        except Exception as error:
            raise Broken(f"{self.name} failed loading {vocab.path.name}: {_raised('the factory', error)}") from None
        except SystemExit as error:
            raise Broken(f"{self.name} called sys.exit({error.code!r}) loading {vocab.path.name}") from None
        if tokenizer is None:
            raise Broken(f"{self.name} returned no tokenizer for {vocab.path.name} (raise Unsupported to decline it)")
        return PythonSession(tokenizer)

    def close(self) -> None:
        """Nothing shared across vocabularies."""


def _raised(where: str, error: Exception) -> str:
    """An unexpected exception as an error's reason, with the hint a port author needs."""
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
