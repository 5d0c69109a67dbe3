"""Tokenizer-hostile inputs, as families of pieces, and the campaign's generator of them.

An input glues together up to `MAX_PIECES` pieces, each from one `Family`: a run from one of the
named Unicode ranges of the recording's generator (`tokconf.corpus.generator.RANGES`: scripts,
combining marks, emoji, controls, …) or of one Unicode general category, a whitespace run of every
kind, a digit run in any script, a contraction, malformed UTF-8, raw bytes, a special-token text with
whitespace on either side or cut short, and words of the vocabulary itself. The families, their
tables and their sizes are defined here once, for both ways of drawing them: `InputGenerator` (the
`tokconf` engine: a seeded `random.Random`) and the hypothesis strategies of
`tokconf.fuzz.strategies` (the `hypothesis` engine, and port authors' own property tests).

Why the default engine does not draw through hypothesis: that cost 80-90% of a campaign's time
(benchmarks/fuzz.py measures both engines), while llama.cpp and the reference each answer over 10,000
inputs/s. Plain `random` draws the same families at a fraction of that cost; a divergence is then
shrunk by `tokconf.core.shrink.ddmin` and kept in a hypothesis example database
(`tokconf.fuzz.database`). Unlike the recording's generator, this one may ask the running Python about
Unicode (categories): a campaign is reproduced by its seed on the same Python, and what it finds is
kept as a recording.
"""

from __future__ import annotations

import enum
import functools
import random
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import Literal, get_args

from ..core.render import WHITESPACE
from ..corpus.generator import CONTRACTIONS, DIGITS, MALFORMED_UTF8, RANGES


class Family(enum.Enum):
    """A kind of piece an input is glued from."""

    SCRIPTS = "scripts"  # 1-8 characters from one named Unicode range (RANGES)
    CATEGORIES = "categories"  # 1-6 characters of one Unicode general category (CATEGORIES)
    WHITESPACE = "whitespace"  # 1-6 whitespace characters or CRLF pairs, mixed
    DIGITS = "digits"  # 1-12 digits of one script
    CONTRACTIONS = "contractions"  # 's, 'LL, ’s, …
    INVALID_UTF8 = "invalid-utf8"  # one malformed UTF-8 sequence (MALFORMED_UTF8)
    BYTES = "bytes"  # 1-4 raw bytes
    SPECIALS = "specials"  # a special-token text, with whitespace around it or cut short
    WORDS = "words"  # 1-4 of the vocabulary's own token pieces, glued


# The most characters (bytes, words) a run of each family holds; every run holds at least one.
LONGEST = {
    Family.SCRIPTS: 8, Family.CATEGORIES: 6, Family.WHITESPACE: 6, Family.DIGITS: 12, Family.BYTES: 4,
    Family.WORDS: 4,
}  # fmt: skip
# The general categories drawn from (Cs, the surrogates, cannot be encoded; Cn is unassigned).
Category = Literal[
    "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
    "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co",
]  # fmt: skip
CATEGORIES: tuple[Category, ...] = get_args(Category)
PADDING_BEFORE = ("", " ", "  ", "\n", "\t", "\u3000")  # around a special-token text
PADDING_AFTER = ("", " ", "\n", " x")
CUT_SHARE = 0.3  # of the special-token pieces the generator draws, those cut short
# Short inputs more often than long ones: a bug shows in a short input first, and shrinks faster.
PIECE_COUNTS = (1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 10, 12)
MAX_PIECES = max(PIECE_COUNTS)
WORD_SAMPLE = 2000  # vocabulary words offered to a campaign


def sample_words(pieces: Sequence[bytes]) -> list[bytes]:
    """Up to WORD_SAMPLE of a vocabulary's token pieces (`token_to_piece`, special=False), spread
    evenly over its ids (merges of every length, not only the first ids' bytes); empty pieces, which
    control tokens have, left out."""
    step = max(1, len(pieces) // WORD_SAMPLE)
    return [p for p in pieces[::step] if p][:WORD_SAMPLE]


@functools.cache
def category_chars() -> dict[str, str]:
    """Every code point of the CATEGORIES, as the running Python classifies them."""
    found: dict[str, list[str]] = {cat: [] for cat in CATEGORIES}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        group = found.get(unicodedata.category(char))
        if group is not None:
            group.append(char)
    return {cat: "".join(chars) for cat, chars in found.items()}


def available(words: Sequence[bytes], specials: Sequence[bytes]) -> list[Family]:
    """The families a vocabulary offers: all but words and special texts when it has none."""
    absent = {Family.WORDS} if not words else set()
    absent |= {Family.SPECIALS} if not specials else set()
    return [family for family in Family if family not in absent]


class InputGenerator:
    """Inputs for one vocabulary and seed: its own words and special texts mixed with the hostile
    pieces. `batch(n)` is the same list for the same seed, words and specials."""

    def __init__(self, seed: int | str, words: list[bytes], specials: list[bytes]) -> None:
        self.rng = random.Random(seed)
        self.words = words
        self.specials = specials
        self.categories = category_chars()
        self.spans = list(RANGES.values())
        draw: dict[Family, Callable[[], bytes]] = {
            Family.SCRIPTS: self._range_run,
            Family.CATEGORIES: self._category_run,
            Family.WHITESPACE: self._whitespace_run,
            Family.DIGITS: self._digit_run,
            Family.CONTRACTIONS: self._contraction,
            Family.INVALID_UTF8: self._malformed,
            Family.BYTES: self._raw_bytes,
            Family.SPECIALS: self._special,
            Family.WORDS: self._words,
        }
        self.families = [draw[family] for family in available(words, specials)]

    def batch(self, count: int) -> list[bytes]:
        return [self.draw() for _ in range(count)]

    def draw(self) -> bytes:
        choice = self.rng.choice
        return b"".join(choice(self.families)() for _ in range(choice(PIECE_COUNTS)))

    def _length(self, family: Family) -> int:
        return self.rng.randint(1, LONGEST[family])

    def _range_run(self) -> bytes:
        spans = self.rng.choice(self.spans)
        picks = []
        for _ in range(self._length(Family.SCRIPTS)):
            low, high = self.rng.choice(spans)
            picks.append(chr(self.rng.randint(low, high)))
        return "".join(picks).encode("utf-8")

    def _category_run(self) -> bytes:
        chars = self.categories[self.rng.choice(CATEGORIES)]
        return "".join(self.rng.choices(chars, k=self._length(Family.CATEGORIES))).encode("utf-8")

    def _whitespace_run(self) -> bytes:
        return "".join(self.rng.choices(WHITESPACE, k=self._length(Family.WHITESPACE))).encode("utf-8")

    def _digit_run(self) -> bytes:
        digits = self.rng.choice(DIGITS)
        return "".join(self.rng.choices(digits, k=self._length(Family.DIGITS))).encode("utf-8")

    def _contraction(self) -> bytes:
        return self.rng.choice(CONTRACTIONS).encode("utf-8")

    def _malformed(self) -> bytes:
        return self.rng.choice(MALFORMED_UTF8)

    def _raw_bytes(self) -> bytes:
        return self.rng.randbytes(self._length(Family.BYTES))

    def _special(self) -> bytes:
        text = self.rng.choice(self.specials)
        if self.rng.random() < CUT_SHARE and len(text) > 1:
            return text[: self.rng.randint(1, len(text) - 1)]
        before, after = self.rng.choice(PADDING_BEFORE), self.rng.choice(PADDING_AFTER)
        return before.encode("utf-8") + text + after.encode("utf-8")

    def _words(self) -> bytes:
        return b"".join(self.rng.choices(self.words, k=self._length(Family.WORDS)))
