"""Character classes a `character` cause is generalized over (docs/checking.md, "Generalizing").

A port that mishandles one whitespace character usually mishandles a whole set of them (every
whitespace but U+0020, every letter number, every continuation byte alone). The explainer puts each
member of the culprit's class in the culprit's place in the minimal input and asks both the port
and llama.cpp; the members that fail too join the cause, which then names the class. The classes
are what tokenizer libraries draw lines by: a whitespace table (`\\s` differs between regex
engines, llama.cpp's is unicode_set_whitespace), a Unicode general category (`\\p{N}` with or
without Nl), a UTF-8 byte range (what a decoder does with a stray continuation or lead byte).
"""

from __future__ import annotations

import sys
import unicodedata
from dataclasses import dataclass
from functools import cache

WHOLE = 400  # a category of at most this many members is tried whole (letter numbers, Nl: 236)
# ... or, for a table of letters or numbers (`class_of(..., whole=True)`), of at most this many: lowercase
# letters (Ll: 2,227), uppercase (Lu: 1,831), decimal digits (Nd: 660); a port's table leaves a script out
# (every Greek letter), which a sample of 48 meets in one or two members
WHOLE_TABLE = 2300
SAMPLE = 48  # members of a larger one tried, spread over it (other letters, Lo, hold 100,000s)

_BYTE_RANGES = (
    (0x80, 0xBF, "continuation byte 0x80-0xBF alone"),
    (0xC0, 0xDF, "two-byte lead byte 0xC0-0xDF without its continuation"),
    (0xE0, 0xEF, "three-byte lead byte 0xE0-0xEF without its continuations"),
    (0xF0, 0xF7, "four-byte lead byte 0xF0-0xF7 without its continuations"),
    (0xF8, 0xFF, "byte 0xF8-0xFF"),
)
_CATEGORY_NAMES = {
    "Lu": "uppercase letter", "Ll": "lowercase letter", "Lt": "titlecase letter", "Lm": "modifier letter",
    "Lo": "other letter", "Mn": "nonspacing mark", "Mc": "spacing mark", "Me": "enclosing mark",
    "Nd": "decimal digit", "Nl": "letter number", "No": "other number", "Pc": "connector punctuation",
    "Pd": "dash", "Ps": "opening punctuation", "Pe": "closing punctuation", "Pi": "initial quote",
    "Pf": "final quote", "Po": "other punctuation", "Sm": "math symbol", "Sc": "currency symbol",
    "Sk": "modifier symbol", "So": "other symbol", "Cc": "control character", "Cf": "format character",
    "Co": "private-use character", "Cn": "unassigned code point",
}  # fmt: skip


@dataclass(frozen=True)
class CharClass:
    """A class of characters: its name for a label, and the members tried in the culprit's place."""

    name: str
    members: tuple[bytes, ...]


@cache
def whitespace_set() -> tuple[bytes, ...]:
    """Every character some tokenizer takes for whitespace: llama.cpp's (unicode_set_whitespace),
    Python's `str.isspace`, the separators (Zs, Zl, Zp), and the zero-width ones JavaScript's `\\s`
    or older tables add (U+FEFF, U+180E, U+200B)."""
    from tokconf_reference.unicode import WHITESPACE

    points = set(WHITESPACE) | {0x180E, 0x200B, 0xFEFF}
    points |= {c for c in range(0x3001) if chr(c).isspace() or unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp")}
    return tuple(chr(c).encode() for c in sorted(points))


@cache
def _category_members(category: str) -> tuple[int, ...]:
    return tuple(c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == category)


def class_of(unit: bytes, whole: bool = False) -> CharClass | None:
    """The class of one character or invalid byte (a `units` element); None for an ASCII letter or
    digit, whose class is too wide to say anything (a fault on `a` is not a fault on letters). With
    `whole`, a category of up to `WHOLE_TABLE` members is all of it, not a sample."""
    text = unit.decode("utf-8", errors="surrogateescape")
    if len(text) != 1:
        return None
    point = ord(text)
    if 0xDC80 <= point <= 0xDCFF:  # an invalid byte
        byte = point - 0xDC00
        for low, high, name in _BYTE_RANGES:
            if low <= byte <= high:
                return CharClass(name, tuple(bytes([b]) for b in range(low, high + 1)))
    if unit in whitespace_set():
        return CharClass("whitespace", whitespace_set())
    if text.isascii() and text.isalnum():
        return None
    category = unicodedata.category(text)
    if category in ("Cs", "Cn", "Co"):
        return None
    members = _category_members(category)
    step = 1 if len(members) <= (WHOLE_TABLE if whole else WHOLE) else len(members) // SAMPLE
    sample = {members[i] for i in range(0, len(members), step)} | {point}
    name = f"{_CATEGORY_NAMES.get(category, category)} ({category})"
    return CharClass(name, tuple(chr(c).encode() for c in sorted(sample)))
