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
import importlib.metadata
import itertools
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.facts import ExposedFacts, Fact, are_token_ids
from ..core.outcome import MIN_DECLARED_LIMIT, InputClass, Outcome, Refusal, RefusalKind, Request
from ..core.printable import kept
from ..core.sandbox import IN_PROCESS, OWN_CODE, Confiner
from ..oracles.bound import max_ids, over_bound
from .base import Broken, Detokenize, Refused, Unsupported, VocabInfo


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
        raise PortBroke(f"{where} raised {type(error).__name__}: {said(error)[:500]}") from None


def _listed(encode: Callable[..., Any], data: bytes, *flags: bool) -> list[Any]:
    """`encode`'s answer as a list, taken inside `_call`: a generator runs port code as it is read. No
    more than one id past the bound is taken (`tokconf.oracles.bound`): an endless generator ends there."""
    return list(itertools.islice(encode(data, *flags), max_ids(len(data)) + 1))


class PythonSession:
    """An object from a Python factory; `Refused` from `encode` is a refusal, `Unsupported` declines
    the input, anything else is an error. Every call into the object goes through `_call`."""

    def __init__(self, tokenizer: Any, max_input_bytes: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.max_input_bytes = max_input_bytes

    def encode_many(self, requests: list[Request], llama_aborts: frozenset[int] = frozenset()) -> list[Outcome]:
        """In tokconf's process (`--in-process`): a port that aborts it ends the run, so `llama_aborts`
        changes nothing here; a worker process (`tokconf.implementations.command_worker`) is what survives one."""
        try:
            encode = _call("reading encode", getattr, self.tokenizer, "encode")
        except Exception as error:
            return [Refusal(_raised("the tokenizer", error), RefusalKind.BROKEN)] * len(requests)
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                ids = _call("encode", _listed, encode, data, add_special, parse_special)
            except Refused as error:
                out.append(Refusal(said(error) or "refused"))
                continue
            except Unsupported as error:
                declined = getattr(error, "input_class", None) or InputClass.of_input(data)
                if not isinstance(declined, InputClass):  # set after construction: not a class at all
                    out.append(
                        Refusal(f"Unsupported.input_class is no InputClass: {declined!r}"[:200], RefusalKind.BROKEN)
                    )
                    continue
                out.append(Refusal(said(error), RefusalKind.UNSUPPORTED, declined))
                continue
            except Exception as error:  # a bug is not a refusal: it must not pass where llama.cpp refuses
                out.append(Refusal(_raised("encode", error), RefusalKind.BROKEN))
                continue
            if len(ids) > max_ids(len(data)):
                out.append(Refusal(over_bound(f"more than {max_ids(len(data))}", len(data)), RefusalKind.BROKEN))
            elif are_token_ids(ids):
                out.append(ids)
            else:  # a bool or a float equal to the id is still not an id, and no id is negative
                out.append(Refusal(f"encode returned something other than token ids: {ids[:8]!r}", RefusalKind.BROKEN))
        return out

    def decoder(self) -> PythonDecoder | BrokenDecoder | None:
        """Given by `token_to_piece(id, special)`, `decode(ids, remove_special, unparse_special)` and
        `n_tokens` on the object (the reference's API); without all three, decoding is not checked.
        Looking them up is port code too (a property): if that breaks, every decoding check errs."""
        names = ("token_to_piece", "decode", "n_tokens")
        try:
            exposed = _call("looking up the decoding", lambda: all(hasattr(self.tokenizer, name) for name in names))
        except Exception as error:
            return BrokenDecoder(_raised("the decoding", error))
        return PythonDecoder(self.tokenizer) if exposed else None

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


class PythonDecoder:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def pieces(self, special: bool) -> list[bytes]:
        n_tokens = _call("n_tokens", getattr, self.tokenizer, "n_tokens")
        return self.some_pieces(range(n_tokens), special)

    def some_pieces(self, ids: Iterable[int], special: bool) -> list[bytes]:
        """The pieces of these ids (a worker answers the ids it is asked, each request in its time)."""
        piece = self.tokenizer.token_to_piece
        return [bytes(_call("token_to_piece", piece, token, special)) for token in ids]

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        return bytes(_call("decode", self.tokenizer.decode, list(ids), remove_special, unparse_special))

    def detokenize_many(self, requests: list[Detokenize]) -> list[bytes]:
        return [self.detokenize(*request) for request in requests]


class BrokenDecoder:
    """The decoding of an object whose decoding methods could not even be looked up."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def pieces(self, special: bool) -> list[bytes]:
        raise PortBroke(self.reason)

    def some_pieces(self, ids: Iterable[int], special: bool) -> list[bytes]:
        raise PortBroke(self.reason)

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        raise PortBroke(self.reason)

    def detokenize_many(self, requests: list[Detokenize]) -> list[bytes]:
        raise PortBroke(self.reason)


class PythonImplementation:
    """`module:factory` or an entry point: a factory called with the GGUF path, in this process.
    `contained` is False when that is a port's code in tokconf's own process (`--in-process`): it can
    then change the run, and the verdict line says so."""

    def __init__(self, name: str, factory: Callable[[Path], Any], contained: bool = True) -> None:
        self.name = name
        self.factory = factory
        self.contained = contained

    @property
    def confiner(self) -> Confiner:
        """In tokconf's process: a port's code (`--in-process`), or tokconf's own reference."""
        return OWN_CODE if self.contained else IN_PROCESS

    def open(self, vocab: VocabInfo) -> PythonSession:
        """The factory's object for the vocabulary: `Unsupported` declines it, anything else raised
        (or no object at all) is broken, so every case of that vocabulary is an error."""
        try:
            tokenizer = _call("the factory", self.factory, vocab.path)
        except Unsupported as error:  # a LoadRefused stays one: a binding says its llama.cpp refused
            raise type(error)(said(error) or f"{self.name} does not support {vocab.path.name}") from None
        except PortBroke as error:
            raise Broken(f"{self.name} failed loading {vocab.path.name}: {error}") from None
        except Exception as error:
            raise Broken(f"{self.name} failed loading {vocab.path.name}: {_raised('the factory', error)}") from None
        if tokenizer is None:
            raise Broken(f"{self.name} returned no tokenizer for {vocab.path.name} (raise Unsupported to decline it)")
        return PythonSession(tokenizer, _declared_limit(self.name, tokenizer))

    def close(self) -> None:
        """Nothing shared across vocabularies."""


def _declared_limit(name: str, tokenizer: Any) -> int | None:
    """The object's `max_input_bytes`: longer inputs it may decline as `too-long`. A limit below
    `MIN_DECLARED_LIMIT` would decline ordinary text as `too-long`, so it is no declaration but a bug."""
    try:
        limit = _call("max_input_bytes", getattr, tokenizer, "max_input_bytes", None)
    except Exception as error:
        raise Broken(_raised("max_input_bytes", error)) from None
    if limit is None:
        return None
    if type(limit) is not int or limit < MIN_DECLARED_LIMIT:
        raise Broken(f"{name}: max_input_bytes must be an int of at least {MIN_DECLARED_LIMIT}, not {limit!r}")
    return limit


def said(error: BaseException) -> str:
    """What an exception from port code says, kept bounded (`core.printable.kept`); an exception whose
    `__str__` itself raises says so instead of ending the run."""
    try:
        return kept(str(error))
    except Exception as broken:
        return f"<{type(error).__name__} whose message raised {type(broken).__name__}>"


def _raised(where: str, error: Exception) -> str:
    """An unexpected exception as an error's reason, with the hint a port author needs."""
    if isinstance(error, PortBroke):
        return said(error)
    hint = ""
    if isinstance(error, NotImplementedError):
        hint = " (to decline, raise tokconf's Unsupported; to refuse an input as llama.cpp does, Refused)"
    return f"{where} raised {type(error).__name__}: {said(error)[:500]}{hint}"


def load_factory(spec: str) -> Callable[[Path], Any]:
    """The callable a `module:factory` value names; for `module:factory:ARG`, what `factory(ARG)`
    returns, as for a registered `NAME:ARG` (one port, one tokenizer.json per vocabulary: one factory,
    not one generated name per file). ARG is the rest of the value, colons and all (a path)."""
    module_name, _, rest = spec.partition(":")
    attribute, colon, argument = rest.partition(":")
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
    if colon:
        return _factory_for(spec, f"{module_name}:{attribute}", factory, argument, "ARG")
    return factory  # type: ignore[no-any-return]


ENTRY_POINT_GROUP = "tokconf.implementations"
FORMS = (
    "module:factory, module:factory:ARG, NAME:ARG, 'cmd:PROGRAM ARGS', llama.cpp@BUILD, llama.cpp:PATH or a "
    "registered name"
)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def resolve_python(spec: str) -> PythonImplementation:
    """`module:factory`, a registered name, or `NAME:ARG` for a registered name that takes an argument."""
    points = _entry_points()
    name, colon, argument = spec.partition(":")
    if colon and name in points:
        loaded = _load(spec, points[name])
        takes = _argument_of(loaded)
        if takes is not None:
            return PythonImplementation(spec, _factory_for(spec, name, loaded, argument, takes))
        if not _may_be_module(name):
            raise TokconfError(f"--impl {spec}: {name} takes no argument", f"use --impl {name}")
    if colon:
        return PythonImplementation(spec, load_factory(spec))
    if spec in points:
        loaded = _load(spec, points[spec])
        takes = _argument_of(loaded)
        if takes is not None:
            raise TokconfError(f"--impl {spec}: {spec} needs an argument", f"use --impl {spec}:{takes}")
        return PythonImplementation(spec, loaded)
    known = ", ".join(sorted(points)) or "none installed"
    raise TokconfError(f"unknown implementation {spec!r}", f"use {FORMS} ({known})")


def _load(spec: str, point: importlib.metadata.EntryPoint) -> Any:
    """The object an entry point names; its import failing is the user's to fix (a missing extra)."""
    try:
        return point.load()
    except ImportError as error:
        raise TokconfError(
            f"--impl {spec}: cannot import {point.value}: {error}", "install it (peers: pip install -e '.[peers]')"
        ) from None
    except (Exception, SystemExit) as error:
        raise TokconfError(f"--impl {spec}: importing {point.value} failed: {type(error).__name__}: {error}") from None


def _argument_of(loaded: Any) -> str | None:
    """What a registered entry point takes as ARG (its `argument` attribute), or None if it takes none."""
    takes = getattr(loaded, "argument", None)
    return takes if isinstance(takes, str) and callable(loaded) else None


def _may_be_module(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _factory_for(spec: str, name: str, loaded: Any, argument: str, takes: str) -> Callable[[Path], Any]:
    """`loaded(argument)`: the factory; whatever it raises is a usage error, said with the form."""
    if not argument:
        raise TokconfError(f"--impl {spec}: {name} needs an argument", f"use --impl {name}:{takes}")
    try:
        factory = loaded(argument)
    except TokconfError:
        raise
    except (Exception, SystemExit) as error:
        raise TokconfError(
            f"--impl {spec}: {name} cannot use {argument!r}: {type(error).__name__}: {error}",
            f"use --impl {name}:{takes}",
        ) from None
    if not callable(factory):
        raise TokconfError(f"--impl {spec}: {name}({argument!r}) returned no factory, but {factory!r}")
    return factory  # type: ignore[no-any-return]
