"""Tokenizer-hostile inputs for a campaign, generated in batches by a seeded `random.Random`.

An input glues together 1-12 pieces, each from one family: a run from one of the named Unicode ranges
of the recording's generator (`tokconf.corpus.generator.RANGES`) or of one Unicode general category,
a whitespace run of every kind, a digit run in any script, a contraction, words of the vocabulary
itself, a special-token text with whitespace on either side or cut short, malformed UTF-8, and raw
bytes.

Why not hypothesis strategies: drawing through them cost 80-90% of a campaign's time (about 600
examples/s, benchmarks/fuzz.py), while llama.cpp and the reference each answer over 10,000 inputs/s.
Plain `random` draws the same families at a fraction of that cost; a divergence is then shrunk by
`tokconf.core.shrink.ddmin` and kept in a hypothesis example database (`tokconf.fuzz.database`).
Unlike the recording's generator, this one may ask the running Python about Unicode (categories):
a campaign is reproduced by its seed on the same Python, and what it finds is kept as a recording.
"""

from __future__ import annotations

import functools
import random
import sys
import unicodedata
from collections.abc import Callable

from ..core.render import WHITESPACE
from ..corpus.generator import CONTRACTIONS, DIGITS, MALFORMED_UTF8, RANGES

CATEGORIES: tuple[str, ...] = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd")
CATEGORIES += ("Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co")
PADDING_BEFORE = ("", " ", "  ", "\n", "\t", "\u3000")
PADDING_AFTER = ("", " ", "\n", " x")
# Short inputs more often than long ones: a bug shows in a short input first, and shrinks faster.
PIECE_COUNTS = (1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 10, 12)


@functools.cache
def category_chars() -> dict[str, str]:
    """Every code point by general category, as the running Python classifies them (Cs, the
    surrogates, cannot be encoded and is left out; Cn, unassigned, is not a category to fuzz)."""
    found: dict[str, list[str]] = {cat: [] for cat in CATEGORIES}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        group = found.get(unicodedata.category(char))
        if group is not None:
            group.append(char)
    return {cat: "".join(chars) for cat, chars in found.items()}


class InputGenerator:
    """Inputs for one vocabulary and seed: its own words and special texts mixed with the hostile
    pieces. `batch(n)` is the same list for the same seed, words and specials."""

    def __init__(self, seed: int | str, words: list[bytes], specials: list[bytes]) -> None:
        self.rng = random.Random(seed)
        self.words = words
        self.specials = specials
        self.categories = category_chars()
        self.spans = list(RANGES.values())
        families: list[Callable[[], bytes]] = [
            self._range_run,
            self._category_run,
            self._whitespace_run,
            self._digit_run,
            self._contraction,
            self._malformed,
            self._raw_bytes,
        ]
        if specials:
            families.append(self._special)
        if words:
            families.append(self._words)
        self.families = families

    def batch(self, count: int) -> list[bytes]:
        return [self.draw() for _ in range(count)]

    def draw(self) -> bytes:
        choice = self.rng.choice
        return b"".join(choice(self.families)() for _ in range(choice(PIECE_COUNTS)))

    def _range_run(self) -> bytes:
        """1-8 characters from one named range."""
        spans = self.rng.choice(self.spans)
        picks = []
        for _ in range(self.rng.randint(1, 8)):
            low, high = self.rng.choice(spans)
            picks.append(chr(self.rng.randint(low, high)))
        return "".join(picks).encode("utf-8")

    def _category_run(self) -> bytes:
        """1-6 characters of one general category."""
        chars = self.categories[self.rng.choice(CATEGORIES)]
        return "".join(self.rng.choices(chars, k=self.rng.randint(1, 6))).encode("utf-8")

    def _whitespace_run(self) -> bytes:
        """1-6 whitespace characters or CRLF pairs, mixed."""
        return "".join(self.rng.choices(WHITESPACE, k=self.rng.randint(1, 6))).encode("utf-8")

    def _digit_run(self) -> bytes:
        """1-12 digits of one script."""
        return "".join(self.rng.choices(self.rng.choice(DIGITS), k=self.rng.randint(1, 12))).encode("utf-8")

    def _contraction(self) -> bytes:
        return self.rng.choice(CONTRACTIONS).encode("utf-8")

    def _malformed(self) -> bytes:
        return self.rng.choice(MALFORMED_UTF8)

    def _raw_bytes(self) -> bytes:
        return self.rng.randbytes(self.rng.randint(1, 4))

    def _special(self) -> bytes:
        """A special-token text, with whitespace around it or cut short."""
        text = self.rng.choice(self.specials)
        if self.rng.random() < 0.3 and len(text) > 1:
            return text[: self.rng.randint(1, len(text) - 1)]
        before, after = self.rng.choice(PADDING_BEFORE), self.rng.choice(PADDING_AFTER)
        return before.encode("utf-8") + text + after.encode("utf-8")

    def _words(self) -> bytes:
        """1-4 words of the vocabulary, glued."""
        return b"".join(self.rng.choices(self.words, k=self.rng.randint(1, 4)))
