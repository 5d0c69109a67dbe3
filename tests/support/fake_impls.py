"""Implementations for the harness's own tests: llama.cpp itself, and deliberately broken variants.

Each wraps the live pinned llama.cpp (so everything not deliberately broken is right) and breaks
exactly one thing, so tests can assert the exact failures the check reports.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from tokconf.builds.build import require_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.core.outcome import Refusal
from tokconf.implementations.base import Refused, Unsupported
from tokconf.oracles.libllama_client import LibllamaOracle

HELLO = b"Hello world"


class LlamaCpp:
    """The pinned llama.cpp behind the `module:factory` interface, exposing its facts."""

    def __init__(self, path: Path) -> None:
        self.oracle = LibllamaOracle(require_build(DEFAULT_BUILD), path)
        facts = self.oracle.facts()
        self.add_bos = facts["add_bos"]
        self.add_eos = facts["add_eos"]
        self.add_sep = facts["add_sep"]
        self.bos_id = facts["special_ids"]["bos"]
        self.eos_id = facts["special_ids"]["eos"]
        self.eog_ids = facts["eog_ids"]

        self.n_tokens = facts["n_tokens"]
        self._pieces: dict[bool, list[bytes]] = {}

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        outcome = self.oracle.tokenize(data, add_special, parse_special)
        if isinstance(outcome, Refusal):
            raise Refused(outcome.reason)
        return outcome

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        if special not in self._pieces:
            self._pieces[special] = self.oracle.pieces(special)
        return self._pieces[special][token]

    def decode(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        return self.oracle.detokenize(ids, remove_special, unparse_special)

    def close(self) -> None:
        self.oracle.close()


class OneIdChanged(LlamaCpp):
    """Answers "Hello world" with its second id plus one, in every mode."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = super().encode(data, add_special, parse_special)
        if data == HELLO:
            ids[-1] += 1
        return ids


class OwnPieces(OneIdChanged):
    """One id changed, and its own decoding, which brackets every piece: reports show these pieces."""

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        return b"[" + super().token_to_piece(token, special) + b"]"


class OneCaseDropped(LlamaCpp):
    """Returns nothing for "Hello world" (as a port that skips an input would)."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return [] if data == HELLO else super().encode(data, add_special, parse_special)


class NeverRefuses(LlamaCpp):
    """Returns ids where llama.cpp aborts (a port that does not reject code points above U+10FFFF)."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            return super().encode(data, add_special, parse_special)
        except Refused:
            return [0]


class WrongBos(LlamaCpp):
    """Claims a different BOS id."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.bos_id += 1


class IdeographicSpaceIsSpace(LlamaCpp):
    """One whitespace class wrong: treats U+3000 as an ASCII space (as a port with its own \\s table might)."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return super().encode(data.replace("\u3000".encode(), b" "), add_special, parse_special)


class OneIdTooMany(LlamaCpp):
    """Ends every answer with one id more, the empty input's too: a bug every example reaches. A
    campaign over an example database draws from hypothesis's own randomness (a seed turns its database
    off), so a test of what the database keeps plants this one: hypothesis's first example, the
    simplest, already finds it, and it shrinks to the empty input, which every later input holds (no
    second finding), whatever the draw."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return [*super().encode(data, add_special, parse_special), 0]


class TwoBugs(IdeographicSpaceIsSpace):
    """U+3000 as a space, and no BOS where llama.cpp adds one: two causes for `--explain` to find."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = super().encode(data, add_special, parse_special)
        return ids[1:] if add_special and self.add_bos and ids[:1] == [self.bos_id] else ids


class NormalizesNfc(LlamaCpp):
    """Applies Unicode NFC to its input first (as a port that normalizes strings might)."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return super().encode(data, add_special, parse_special)
        return super().encode(unicodedata.normalize("NFC", text).encode(), add_special, parse_special)


class ControlTextAlways(LlamaCpp):
    """Renders control tokens' text even with special=false (and so in every decode)."""

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        return super().token_to_piece(token, True)

    def decode(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        return b"".join(self.token_to_piece(i) for i in ids)


ASKED: list[tuple[bytes, bool, bool] | str] = []  # what `Counting` was asked, in this process


class Counting(LlamaCpp):
    """llama.cpp, noting each input and each decoding it is asked for in `ASKED`."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ASKED.append((data, add_special, parse_special))
        return super().encode(data, add_special, parse_special)

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        ASKED.append("token_to_piece")
        return super().token_to_piece(token, special)

    def decode(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        ASKED.append("decode")
        return super().decode(ids, remove_special, unparse_special)


class DeclinesByLength(LlamaCpp):
    """Declines every input over 20 bytes, saying how long each one is: one reason worded per input,
    which reports group as one."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if len(data) > 20:
            raise Unsupported(f"input of {len(data)} bytes is too long for this port")
        return super().encode(data, add_special, parse_special)


# `module:factory` names: a class is itself a callable taking the GGUF path.
llama_cpp, one_id_changed, one_case_dropped = LlamaCpp, OneIdChanged, OneCaseDropped
never_refuses, wrong_bos, ideographic_space_is_space = NeverRefuses, WrongBos, IdeographicSpaceIsSpace
control_text_always = ControlTextAlways
two_bugs, normalizes_nfc, own_pieces, counting = TwoBugs, NormalizesNfc, OwnPieces, Counting
declines_by_length, one_id_too_many = DeclinesByLength, OneIdTooMany


def bpe_only(path: Path) -> LlamaCpp:
    """Supports only byte-level BPE vocabularies: the others it declines (`Unsupported`)."""
    tokenizer = LlamaCpp(path)
    if tokenizer.oracle.facts()["vocab_type"] != "bpe":
        tokenizer.close()
        raise Unsupported("only BPE vocabularies")
    return tokenizer


def loads_anything(path: Path) -> object:
    """A port that loads any vocabulary: a pre name it does not know is split as gpt-2 splits."""
    from tokconf.implementations.reference import ReferencePort
    from tokconf_reference.gguf_reader import read_tokenizer_fields
    from tokconf_reference.tokenizer import PRE_NAMES, Tokenizer

    fields = read_tokenizer_fields(path)
    if fields.get("tokenizer.ggml.pre") not in PRE_NAMES:
        fields["tokenizer.ggml.pre"] = "gpt-2"
    return ReferencePort(Tokenizer(fields))


class AbortingReference:
    """The reference as a Python binding of llama.cpp without a `try` is: where llama.cpp aborts
    (`LlamaAborts`), its process dies with SIGABRT (its worker, never tokconf's process)."""

    def __init__(self, path: Path) -> None:
        from tokconf_reference import Tokenizer  # slow to import: only in the worker that asks for it

        self.tokenizer = Tokenizer.from_gguf(path)

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        from tokconf_reference.errors import LlamaAborts

        try:
            return self.tokenizer.encode(data, add_special, parse_special)
        except LlamaAborts:
            os.abort()


def aborting_reference(path: Path) -> AbortingReference:
    return AbortingReference(path)
