"""The fuzz engine tokconf 0.2.0 shipped, kept as the baseline benchmarks/fuzz.py measures against:
hypothesis strategies for tokenizer-hostile input, as bytes, and one `@given` test per vocab and mode
asking both tokenizers one input at a time.

An input glues together 1-12 pieces: a run from one of the named Unicode ranges of the seeded
generator (`tokconf.corpus.generator.RANGES`) or from a Unicode category, a whitespace run of every kind, a digit
run in any script, a contraction, words of the vocabulary itself, a special-token text with
whitespace on either side or cut short, and raw bytes (malformed UTF-8 included). hypothesis shrinks
a failing input piece by piece, so a report ends at the smallest input that still diverges.
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase
from tokconf.check.contract import Verdict, judge
from tokconf.core.outcome import MODES, Mode
from tokconf.core.render import WHITESPACE
from tokconf.corpus.generator import CONTRACTIONS, DIGITS, MALFORMED_UTF8, RANGES
from tokconf.implementations.base import Session
from tokconf.oracle.client import LibllamaOracle

CATEGORIES: tuple[str, ...] = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd")
CATEGORIES += ("Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co")


def _utf8(text: str) -> bytes:
    return text.encode("utf-8")


def range_runs() -> st.SearchStrategy[bytes]:
    """1-8 characters from one named range of the seeded generator."""
    alphabets = [
        st.one_of(*(st.characters(min_codepoint=low, max_codepoint=high) for low, high in spans))
        for spans in RANGES.values()
    ]
    return st.one_of(*(st.text(alphabet, min_size=1, max_size=8) for alphabet in alphabets)).map(_utf8)


def category_runs() -> st.SearchStrategy[bytes]:
    """1-6 characters of one Unicode general category (as the running Python classifies them)."""
    return (
        st.sampled_from(CATEGORIES)
        .flatmap(
            lambda cat: st.text(st.characters(categories=[cat]), min_size=1, max_size=6)  # type: ignore[list-item]
        )
        .map(_utf8)
    )


def whitespace_runs() -> st.SearchStrategy[bytes]:
    """1-6 whitespace characters or CRLF pairs, mixed."""
    return st.lists(st.sampled_from(WHITESPACE), min_size=1, max_size=6).map("".join).map(_utf8)


def digit_runs() -> st.SearchStrategy[bytes]:
    return st.sampled_from(DIGITS).flatmap(lambda d: st.text(st.sampled_from(d), min_size=1, max_size=12)).map(_utf8)


def marker_pieces(specials: list[bytes]) -> st.SearchStrategy[bytes]:
    """A special-token text, maybe with whitespace around it, maybe cut short."""
    if not specials:
        return st.nothing()
    whole = st.tuples(
        st.sampled_from(["", " ", "  ", "\n", "\t", "\u3000"]),
        st.sampled_from(specials),
        st.sampled_from(["", " ", "\n", " x"]),
    ).map(lambda t: _utf8(t[0]) + t[1] + _utf8(t[2]))
    cut = st.sampled_from(specials).flatmap(lambda s: st.integers(1, max(1, len(s) - 1)).map(lambda k: s[:k]))
    return st.one_of(whole, cut)


def tokenizer_inputs(vocab_words: list[bytes], specials: list[bytes]) -> st.SearchStrategy[bytes]:
    """Inputs for one vocabulary: its own words and special texts mixed with the hostile pieces."""
    pieces = [
        range_runs(),
        category_runs(),
        whitespace_runs(),
        digit_runs(),
        st.sampled_from(CONTRACTIONS).map(_utf8),
        marker_pieces(specials),
        st.sampled_from(MALFORMED_UTF8),
        st.binary(min_size=1, max_size=4),
    ]
    if vocab_words:
        pieces.append(st.lists(st.sampled_from(vocab_words), min_size=1, max_size=4).map(b"".join))
    return st.lists(st.one_of(*pieces), min_size=1, max_size=12).map(b"".join)


def fuzz_mode(
    oracle: LibllamaOracle, session: Session, mode: Mode, words: list[bytes], specials: list[bytes], examples: int
) -> tuple[int, float, int]:
    """One seeded hypothesis campaign: (examples, seconds, failures)."""
    add_special, parse_special = MODES[mode]
    count = [0, 0]

    @seed(1)
    @settings(
        max_examples=examples,
        deadline=None,
        database=InMemoryExampleDatabase(),
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(tokenizer_inputs(words, specials))
    def differential(data: bytes) -> None:
        count[0] += 1
        expected = oracle.tokenize(data, add_special, parse_special)
        actual = session.encode_many([(data, add_special, parse_special)])[0]
        assert judge(expected, actual)[0] is Verdict.PASSED

    started = time.monotonic()
    try:
        differential()
    except AssertionError:
        count[1] += 1
    return count[0], time.monotonic() - started, count[1]
