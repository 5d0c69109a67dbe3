"""`tokconf.strategies`: hypothesis strategies of tokenizer-hostile input. Every family draws what it
says, a vocabulary's words and special texts are drawn (the ones a campaign gets from llama.cpp),
hypothesis shrinks to the smallest input, and without hypothesis the import says what to install."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, find, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from tokconf.builds.build import Build
from tokconf.core.errors import TokconfError
from tokconf.core.outcome import is_utf8
from tokconf.core.render import WHITESPACE
from tokconf.corpus.generator import CONTRACTIONS, DIGITS, MALFORMED_UTF8, RANGES, SPECIAL_TEXTS
from tokconf.fuzz.generator import CATEGORIES, PADDING_AFTER, PADDING_BEFORE, sample_words
from tokconf.fuzz.strategies import vocab_texts
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.strategies import Family, inputs

U3000 = "\u3000".encode()
QUICK = settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))


def draws(strategy: st.SearchStrategy[bytes], count: int = 300) -> list[bytes]:
    """`count` inputs, the same on every run."""
    drawn: list[bytes] = []

    @seed(0)
    @settings(QUICK, max_examples=count, phases=[Phase.generate])
    @given(strategy)
    def collect(data: bytes) -> None:
        drawn.append(data)

    collect()
    return drawn


def minimal(strategy: st.SearchStrategy[bytes], condition: Callable[[bytes], bool]) -> bytes:
    return find(strategy, condition, settings=settings(QUICK, max_examples=2000))


def pieces_of(data: bytes, pieces: set[bytes]) -> bool:
    """Whether `data` is a concatenation of `pieces`."""
    ends = [0]
    for end in range(1, len(data) + 1):
        if any(data[start:end] in pieces for start in ends):
            ends.append(end)
    return ends[-1] == len(data)


def text(data: bytes) -> str:
    return data.decode("utf-8")


IN_RANGES = {chr(c) for spans in RANGES.values() for low, high in spans for c in range(low, high + 1)}
# a text with whitespace around it (or the whitespace alone: the text can be dropped), or cut short
PADDED = {(b + t + a).encode() for t in ("", *SPECIAL_TEXTS) for b in PADDING_BEFORE for a in PADDING_AFTER}
SPECIAL_PIECES = PADDED | {t.encode()[:end] for t in SPECIAL_TEXTS for end in range(1, len(t.encode()))}
# what each family alone draws: every input made of its pieces, and a mark of the family in some input
FAMILIES: dict[Family, tuple[Callable[[bytes], bool], Callable[[list[bytes]], bool]]] = {
    Family.SCRIPTS: (
        lambda d: set(text(d)) <= IN_RANGES,
        lambda all_: (
            {"cjk", "hangul", "emoji", "combining-marks"}
            <= {
                name
                for d in all_
                for ch in text(d)
                for name, spans in RANGES.items()
                if any(low <= ord(ch) <= high for low, high in spans)
            }
        ),
    ),
    Family.CATEGORIES: (
        lambda d: {unicodedata.category(ch) for ch in text(d)} <= set(CATEGORIES),
        lambda all_: {"Lo", "Mn", "Zs", "Cf"} <= {unicodedata.category(ch) for d in all_ for ch in text(d)},
    ),
    Family.WHITESPACE: (
        lambda d: set(text(d)) <= set("".join(WHITESPACE)),
        lambda all_: any(U3000 in d for d in all_) and any(b"\r\n" in d for d in all_),
    ),
    Family.DIGITS: (
        lambda d: set(text(d)) <= set("".join(DIGITS)),
        lambda all_: any(set(text(d)) & set(DIGITS[1]) for d in all_),  # Arabic-Indic
    ),
    Family.CONTRACTIONS: (
        lambda d: pieces_of(d, {c.encode() for c in CONTRACTIONS}),
        lambda all_: any("’s".encode() in d for d in all_),
    ),
    Family.INVALID_UTF8: (
        lambda d: pieces_of(d, set(MALFORMED_UTF8)),
        lambda all_: any(d.decode("utf-8", errors="replace") != d.decode("utf-8", errors="ignore") for d in all_),
    ),
    Family.BYTES: (lambda d: True, lambda all_: any(len(d) >= 8 for d in all_)),
    Family.SPECIALS: (
        lambda d: pieces_of(d, SPECIAL_PIECES),
        lambda all_: any(b"<|im_start|>" in d for d in all_) and any(b"\n" in d for d in all_),
    ),
}


@pytest.mark.parametrize("family", FAMILIES, ids=[f.value for f in FAMILIES])
def test_each_family_alone_draws_its_pieces(family: Family) -> None:
    made_of, marked = FAMILIES[family]
    drawn = draws(inputs(families={family}))
    assert all(made_of(d) for d in drawn), [d for d in drawn if not made_of(d)][:3]
    assert marked(drawn)
    assert sum(len(d) > 0 for d in drawn) > len(drawn) // 2  # not mostly empty inputs


def test_every_family_appears_among_all_families() -> None:
    drawn = draws(inputs(), 500)
    blob = b"\0".join(drawn)
    assert U3000 in blob and "’s".encode() in blob and any(t.encode() in blob for t in SPECIAL_TEXTS)
    assert any(not is_utf8(d) for d in drawn)
    assert any(set(text(d)) & set(DIGITS[2]) for d in drawn if is_utf8(d))  # Devanagari digits
    assert any({unicodedata.category(c) for c in text(d)} & {"Mn", "Me"} for d in drawn if is_utf8(d))
    assert max(len(d) for d in drawn) > 40 and min(len(d) for d in drawn) == 0


def test_a_vocabulary_adds_its_words_and_special_texts(llama_build: Build) -> None:
    """The words and special texts are those a campaign gets from llama.cpp (`tokconf fuzz`)."""
    vocab = llama_build.models_dir / "ggml-vocab-gpt-2.gguf"
    words, specials = vocab_texts(vocab)
    with LibllamaOracle(llama_build, vocab) as oracle:
        assert list(words) == sample_words(oracle.pieces(special=False))
        assert list(specials) == sorted(set(oracle.facts()["special_texts"].values()))
    assert specials == (b"<|endoftext|>",)
    drawn = draws(inputs("gpt-2", families={Family.WORDS}))
    assert all(pieces_of(d, set(words)) for d in drawn) and len({w for d in drawn for w in words if w in d}) > 100
    drawn = draws(inputs(str(vocab)))  # a GGUF path, all its families
    assert any(b"<|endoftext|>" in d for d in drawn)
    assert any(len(w) > 4 and w in d for d in drawn for w in words)


def test_hypothesis_shrinks_to_the_smallest_input() -> None:
    assert minimal(inputs(), lambda d: True) == b""  # a missing BOS shrinks to the empty input
    assert minimal(inputs(), lambda d: U3000 in d) == U3000
    assert minimal(inputs(), lambda d: not is_utf8(d)) in {b"\x80", b"\x81"} | set(MALFORMED_UTF8)
    assert minimal(inputs(families={Family.SPECIALS}), lambda d: b"<|im_end|>" in d) == b"<|im_end|>"
    drawn = minimal(inputs(), lambda d: is_utf8(d) and any(unicodedata.category(c) == "Mn" for c in text(d)))
    assert len(text(drawn)) == 1


def test_wrong_arguments_fail_where_the_strategy_is_made_and_a_vocabulary_loads_at_the_first_draw() -> None:
    with pytest.raises(InvalidArgument, match="give inputs\\(vocab"):
        inputs(families={Family.WORDS})
    with pytest.raises(InvalidArgument, match="not none"):
        inputs(families=set())
    with pytest.raises(InvalidArgument, match="not \\['whitespace'\\]"):
        inputs(families={"whitespace"})  # type: ignore[arg-type]
    before = vocab_texts.cache_info().misses
    strategy = inputs("no-such-vocab")  # made at import: nothing read yet
    assert vocab_texts.cache_info().misses == before
    with pytest.raises(TokconfError, match="ships no vocabulary 'no-such-vocab'"):
        draws(strategy, 1)


def test_without_hypothesis_the_import_says_what_to_install() -> None:
    probe = "import sys; sys.modules['hypothesis'] = None; import tokconf.strategies"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 1
    assert "ImportError: tokconf.strategies needs hypothesis: pip install 'tokconf[fuzz]'" in result.stderr
