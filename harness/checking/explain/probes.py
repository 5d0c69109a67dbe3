"""Discriminating inputs: how a mechanism fitted on one minimal input is put to the test before it is
named (docs/checking.md, "Falsify before naming").

One minimal input rarely tells mechanisms apart: `\\r'd` answered `[198, 6, 83]` fits "U+000D is
not whitespace to the port" as well as "the port matches no contraction after whitespace other than
a space". Put in other contexts the two predict different ids: `x \\r\\r y` and `\\r\\r x` split alike
under the second and differently under the first. The explainer asks the port each probe and keeps
a mechanism only if it predicts the port on every one.

A probe is evidence only where its context alone is answered right: each probe has a *filler*, the
same probe with the minimal input's characters replaced by plain letters of the same byte length;
a probe whose filler fails (the port has another fault there: digits, a missing BOS) is not used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.shrink import units

_PLAIN = {1: (b"a", b"b"), 2: ("ä".encode(), "ö".encode()), 3: ("一".encode(), "二".encode())}
_PLAIN[4] = ("𝐀".encode(), "𝐁".encode())


def plain(unit: bytes) -> bytes:
    """A plain letter of the same UTF-8 length, other than `unit`: replacing a character by it leaves
    the input's length as it was (a port whose fault depends on length is not blamed on a character)."""
    first, second = _PLAIN.get(len(unit), _PLAIN[1])
    return second if unit == first else first


def unusual(unit: bytes) -> tuple[int, bytes]:
    """How unusual a character is, to pick a culprit: invalid bytes and non-ASCII first, ASCII
    letters and digits last."""
    if len(unit) > 1 or unit[0] > 0x7F:
        return (4, unit)
    char = chr(unit[0])
    return (0 if char.isalnum() else 1 if char in " \n" else 2 if char.isprintable() else 3, unit)


@dataclass(frozen=True)
class Probe:
    """An input to ask, and its filler (the context alone)."""

    data: bytes
    filler: bytes


# The minimal input `m` in other contexts: around words, doubled, at the start and at the end,
# after a newline, before a contraction (an upper-case one too: Llama 3's regex takes `'S`, GPT-2's
# does not), between digits, before four digits (Qwen2's `\p{N}` against Llama 3's `\p{N}{1,3}`),
# repeated (a rule bounded by length).
_AROUND = (
    (b"x ", b" y"), (b"a", b""), (b"", b"a"), (b" ", b""), (b"", b" "), (b"\n", b""), (b"", b"\n"),
    (b"", b"'d"), (b"", b"'S"), (b"1", b"2"), (b"", b" 1234"), (b"x", b"x"),
)  # fmt: skip
# One character `c` of it in other contexts: doubled between words, doubled at the start, before a
# contraction after a letter and at the start, before a word, and beside punctuation (a character a
# port reads as whitespace and one it reads as punctuation split apart from `!` or join it).
_CHAR: tuple[Callable[[bytes], bytes], ...] = (
    lambda c: b"x " + c + c + b" y", lambda c: c + c + b"x", lambda c: b"a" + c + b"'d",
    lambda c: c + b"'re", lambda c: c + b" x", lambda c: b"x" + c + b"y", lambda c: c + b"\n\nb",
    lambda c: b"!" + c, lambda c: c + b"!",
)  # fmt: skip


# An invalid byte of it replaced by invalid sequences on which the policies for invalid UTF-8 part: a
# truncated three- and four-byte sequence (one U+FFFD per maximal subpart, as Python and Rust decode,
# or one per byte, as Go does) and an overlong `/` (llama.cpp decodes it: unicode_cpts_from_utf8).
_INVALID = (b"\xe4\xb8", b"\xf0\x9f\x98", b"\xc0\xaf")


def probes(minimal: bytes) -> list[Probe]:
    """The probes of a minimal input: it in other contexts, twice, four times, its two most
    unusual characters each in contexts of their own, and its first invalid byte replaced by other
    invalid sequences. No probe is the minimal input itself."""
    parts = units(minimal)
    filled = b"".join(plain(p) for p in parts)
    found = [Probe(before + minimal + after, before + filled + after) for before, after in _AROUND]
    found += [Probe(minimal * 2, filled * 2), Probe(minimal * 4, filled * 4)]
    odd = sorted({p for p in parts if unusual(p)[0] > 0}, key=unusual, reverse=True)[:2]
    for char in odd:
        found += [Probe(place(char), place(plain(char))) for place in _CHAR]
    invalid = next((p for p in parts if len(p) == 1 and p[0] > 0x7F), None)
    for other in _INVALID if invalid is not None else ():
        swapped = [other if p == invalid else p for p in parts]
        found.append(Probe(b"".join(swapped), b"".join(plain(p) for p in swapped)))
    unique = {p.data: p for p in found if p.data != minimal}
    return list(unique.values())
