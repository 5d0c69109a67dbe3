"""A zoo of Python ports for the front-end test (tests/test_zoo.py): right, wrong, raising, refusing,
declining, declaring, printing, with facts of the wrong type, crashing at load, tokenizing nothing,
declining exactly what it gets wrong (as its own reason, or as a class only the command may grant),
lying about what it declines, keeping state across vocabularies, answering far more ids than llama.cpp can.

Each is the bundled reference (token-identical to llama.cpp on every bundled vocabulary) with one
thing changed, so the verdict each must get follows from the contract alone. `module:factory` names
are the lower-case functions at the end. The state kept across vocabularies takes three shapes: one
tokenizer for the whole process, a module-global "current vocabulary", a cache keyed by the text.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from tokconf.implementations.base import Refused, Unsupported
from tokconf.implementations.reference import ReferencePort, from_gguf


class Right(ReferencePort):
    """The reference as it is: passes."""


class Wrong(ReferencePort):
    """Answers one id too high for every input holding "e": failures."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = super().encode(data, add_special, parse_special)
        return [ids[0] + 1, *ids[1:]] if b"e" in data and ids else ids


class Raising(ReferencePort):
    """A bug (KeyError) on every input holding "e": errors, never refusals."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if b"e" in data:
            raise KeyError("e")
        return super().encode(data, add_special, parse_special)


class RefusesEverything(ReferencePort):
    """`Refused` for every input: failures, but where llama.cpp refuses too, passes."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        raise Refused("I refuse")


class DeclinesEveryInput(ReferencePort):
    """`Unsupported` for every input: it tokenizes nothing."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        raise Unsupported("no input at all")


class OnlyTheEmptyInput(ReferencePort):
    """Tokenizes the empty input and declines every other: a sliver of coverage."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if data:
            raise Unsupported("only the empty input")
        return super().encode(data, add_special, parse_special)


class DeclinesInvalidUtf8(ReferencePort):
    """A `str` API on C strings: declines what is not UTF-8 (no class named: tokconf sees it is not),
    and what holds NUL (said so), and is right on the rest: passes, those classes being verified."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise Unsupported("not valid UTF-8") from None
        if b"\x00" in data:
            raise Unsupported("C strings end at NUL", input_class="nul")
        return super().encode(data, add_special, parse_special)


class DeclinesDigits(ReferencePort):
    """Wrong on every input holding a digit, and declines exactly those, as `other` with a reason of its
    own choosing: unverified declines count against coverage, so it fails."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if any(48 <= byte <= 57 for byte in data):
            raise Unsupported("input is not valid UTF-8")  # a lie about valid UTF-8: shown as its words, class other
        return super().encode(data, add_special, parse_special)


class DeclinesNewlines(ReferencePort):
    """Wrong on every input holding a newline, and declines exactly those: fails as DeclinesDigits."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if b"\n" in data:
            raise Unsupported("multi-line input")
        return super().encode(data, add_special, parse_special)


class LiesAboutItsClass(ReferencePort):
    """Declines inputs holding a digit as `invalid-utf8`, which they are not: errors."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if any(48 <= byte <= 57 for byte in data):
            raise Unsupported("cannot decode", input_class="invalid-utf8")
        return super().encode(data, add_special, parse_special)


class DeclinesLongInputs(ReferencePort):
    """Wrong on every input longer than 1,024 bytes (a buffer it never grows), and declares
    `max_input_bytes = 1024` to decline exactly those as `too-long`: a few cases, most of the recorded
    bytes. Fails unless the command grants `too-long`."""

    max_input_bytes = 1024

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if len(data) > self.max_input_bytes:
            raise Unsupported("longer than my buffer", input_class="too-long")
        return super().encode(data, add_special, parse_special)


class ParsesSpecialEverywhere(ReferencePort):
    """Parses special tokens in every mode, so a user's `<|endoftext|>` text becomes the control token
    (the prompt-injection bug), and declines exactly the plain-mode inputs where that shows as
    `special-text`. Fails unless the command grants `special-text`."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        parsed = super().encode(data, add_special, True)
        if not parse_special and parsed != super().encode(data, add_special, False):
            raise Unsupported(input_class="special-text")
        return parsed


_FIRST: list[ReferencePort] = []


class Stateful(ReferencePort):
    """Keeps the first vocabulary it loads for the whole process (one tokenizer cache per process): right
    whenever its process holds one vocabulary, wrong once a second is loaded into it, as an application
    loading two models would see. Fails in every front end: by the interleaving check."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        first = _FIRST[0] if len(data) > 3 else self
        return ReferencePort.encode(first, data, add_special, parse_special)


_CURRENT: list[ReferencePort] = []


class ModuleGlobal(ReferencePort):
    """Its `encode` reads a module-global "current vocabulary" that each factory call replaces: right
    whenever one tokenizer is alive in its process at a time, wrong for every one but the last loaded
    once several are. Fails in every front end that holds several at once: by the interleaving check."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return ReferencePort.encode(_CURRENT[0], data, add_special, parse_special)


_CACHE: dict[tuple[bytes, bool, bool], list[int]] = {}
CACHED_BYTES = 4096  # longer inputs are not cached (the cache's memory stays bounded)


class TextKeyedCache(ReferencePort):
    """A process-wide cache of answers keyed by the input and its flags but not by the vocabulary:
    right whenever its process holds one vocabulary, wrong where a second is asked a text the first
    was asked. Fails in every front end: by the interleaving check's shared inputs."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if len(data) > CACHED_BYTES:
            return super().encode(data, add_special, parse_special)
        key = (data, add_special, parse_special)
        if key not in _CACHE:
            _CACHE[key] = super().encode(data, add_special, parse_special)
        return list(_CACHE[key])


_ALIVE: weakref.WeakSet[ReferencePort] = weakref.WeakSet()


def one_at_a_time(path: Path) -> object:
    """Right, but its factory fails while a tokenizer of another vocabulary is alive in the process (a
    library with one global state): it passes every vocabulary alone, and an application holding two
    models cannot use it."""
    if len(_ALIVE):
        raise RuntimeError("another vocabulary is loaded")
    port = Right(from_gguf(path).tokenizer)
    _ALIVE.add(port)
    return port


class DeclinesParseSpecial(ReferencePort):
    """Cannot parse special tokens: declines every request with parse_special (modes special, bos)."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if parse_special:
            raise Unsupported("parse_special is not implemented")
        return super().encode(data, add_special, parse_special)


class Printing(ReferencePort):
    """Right, but chatty: prints to stdout while loading and on every input."""

    def __init__(self, *args: object) -> None:
        print("loading the vocabulary")
        super().__init__(*args)  # type: ignore[arg-type]

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        print("encoding", len(data), "bytes")
        return super().encode(data, add_special, parse_special)


class FactsOfTheWrongType(ReferencePort):
    """Right ids, but `add_bos` as 0 and `bos_id` as a float: errors (in Python, 0 == False)."""

    @property
    def add_bos(self) -> int:
        return int(self.tokenizer.add_bos)

    @property
    def bos_id(self) -> float:
        return float(self.tokenizer.bos_id)


FLOOD = 200_000  # ids a flooding port answers to every input (issue 46: a MemoryError with no verdict)


class Floods(ReferencePort):
    """Answers 200,000 ids to every input, from a generator: every case an error naming the bound
    (tokconf.oracles.bound), and the run ends with its verdict, not a MemoryError."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return (0 for _ in range(FLOOD))  # type: ignore[return-value]


def _port(kind: type[ReferencePort]) -> object:
    def factory(path: Path) -> ReferencePort:
        return kind(from_gguf(path).tokenizer)

    return factory


def stateful(path: Path) -> object:
    port = Stateful(from_gguf(path).tokenizer)
    _FIRST[:] = _FIRST or [port]
    return port


def module_global(path: Path) -> object:
    port = ModuleGlobal(from_gguf(path).tokenizer)
    _CURRENT[:] = [port]
    return port


def crashing_at_load(path: Path) -> object:
    """A bug while reading the vocabulary: every case of it an error."""
    raise KeyError("tokenizer.ggml.merges")


def declining_every_vocab(path: Path) -> object:
    """Declines every vocabulary: nothing in scope."""
    raise Unsupported(f"{Path(path).name} is not a vocabulary I know")


right, wrong, raising, refuses_everything = _port(Right), _port(Wrong), _port(Raising), _port(RefusesEverything)
declines_every_input, only_the_empty_input = _port(DeclinesEveryInput), _port(OnlyTheEmptyInput)
declines_invalid_utf8, declines_parse_special = _port(DeclinesInvalidUtf8), _port(DeclinesParseSpecial)
printing, facts_of_the_wrong_type, floods = _port(Printing), _port(FactsOfTheWrongType), _port(Floods)
declines_long_inputs, parses_special_everywhere = _port(DeclinesLongInputs), _port(ParsesSpecialEverywhere)
declines_digits, declines_newlines, lies_about_its_class = (
    _port(DeclinesDigits),
    _port(DeclinesNewlines),
    _port(LiesAboutItsClass),
)
text_keyed_cache = _port(TextKeyedCache)
