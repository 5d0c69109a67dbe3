"""Hypothesis strategies for tokenizer-hostile inputs, as `bytes` (public as `tokconf.strategies`).

They draw the families of `tokconf.fuzz.generator`, from the same tables and with the same sizes,
but through hypothesis's own strategies (`st.lists`, `st.sampled_from`, `st.text` of `st.characters`,
`st.binary`), so that its shrinker works on an input piece by piece: it drops pieces, shortens runs,
and moves each choice toward the first of its table, ending at an input like `b"\\xe3\\x80\\x80"`
rather than the 40-piece string that first failed. An input is a list of up to `MAX_PIECES` pieces, glued; the empty
list is allowed, so a bug that shows on the empty input (a missing BOS) shrinks to it.

The `hypothesis` engine of `tokconf fuzz` draws the same strategies (`glued`), with the words and
special texts llama.cpp reports; `inputs(vocab)` reads them with the reference tokenizer instead, so a
port's property tests need no llama.cpp to generate.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..core.errors import TokconfError
from ..core.render import WHITESPACE
from ..corpus.generator import CONTRACTIONS, DIGITS, MALFORMED_UTF8, RANGES, SPECIAL_TEXTS
from ..implementations.reference import DECLINED
from ..synth.files import gguf_of
from .generator import (
    CATEGORIES,
    LONGEST,
    MAX_PIECES,
    PADDING_AFTER,
    PADDING_BEFORE,
    Family,
    available,
    sample_words,
)

Vocab = str | os.PathLike[str]


def inputs(vocab: Vocab | None = None, *, families: Iterable[Family] | None = None) -> st.SearchStrategy[bytes]:
    """Inputs as `bytes`: up to 12 pieces, glued, each from one of `families` (default: every family
    the vocabulary offers).

    `vocab` is a vocabulary name `tokconf.vocab_path` knows (`"qwen2"`, `"gpt-2"`) or a GGUF file:
    its own token pieces (`Family.WORDS`) and its special-token texts (`Family.SPECIALS`) join the
    families. Without one there are no words, and the special texts are ones that are special in some
    shipped vocabulary (`<|im_start|>`, `[CLS]`, …). The vocabulary is read on the first draw (with
    the reference tokenizer, once per file and process), so building the strategy at import costs
    nothing."""
    chosen = _chosen(families, vocab is not None)
    if vocab is None:
        return st.deferred(lambda: glued(chosen, (), tuple(text.encode("utf-8") for text in SPECIAL_TEXTS)))
    return st.deferred(lambda: glued(chosen, *vocab_texts(gguf_of(vocab))))


def _chosen(families: Iterable[Family] | None, with_vocab: bool) -> frozenset[Family]:
    """The families asked for, checked now (a wrong argument fails where the strategy is made)."""
    if families is None:
        return frozenset(family for family in Family if with_vocab or family is not Family.WORDS)
    chosen = frozenset(families)
    wrong = [f for f in chosen if not isinstance(f, Family)]
    if wrong or not chosen:
        raise InvalidArgument(f"families must be some of tokconf.strategies.Family, not {wrong or 'none'}")
    if Family.WORDS in chosen and not with_vocab:
        raise InvalidArgument("Family.WORDS draws a vocabulary's words: give inputs(vocab, ...)")
    return chosen


@functools.cache
def vocab_texts(path: Path) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """A vocabulary's words (`sample_words` of its pieces) and its special-token texts (control and
    user-defined tokens, as llama.cpp's facts list them), read by the reference tokenizer."""
    from tokconf_reference import Tokenizer
    from tokconf_reference.tokenizer import ATTR_CONTROL, ATTR_USER_DEFINED

    try:
        tokenizer = Tokenizer.from_gguf(path)
    except (*DECLINED, OSError) as why:
        raise TokconfError(
            f"inputs({str(path)!r}): the reference tokenizer cannot read it: {why}",
            "give another vocabulary, or inputs() without one (no words, well-known special texts)",
        ) from None
    words = sample_words([tokenizer.token_to_piece(token, special=False) for token in range(tokenizer.n_tokens)])
    special = ATTR_CONTROL | ATTR_USER_DEFINED
    texts = {tokenizer.special_bytes[t] for t in tokenizer.specials if tokenizer.attrs[t] & special}
    return tuple(words), tuple(sorted(texts - {b""}))


def glued(families: Iterable[Family], words: Sequence[bytes], specials: Sequence[bytes]) -> st.SearchStrategy[bytes]:
    """Up to MAX_PIECES pieces of the families (those of them the vocabulary offers), glued."""
    offered = [family for family in available(words, specials) if family in set(families)]
    if not offered:
        raise InvalidArgument(f"this vocabulary has no {' or '.join(sorted(f.value for f in families))} to draw")
    pieces = [_piece(family, tuple(words), tuple(specials)) for family in offered]
    return st.lists(st.one_of(pieces), max_size=MAX_PIECES).map(b"".join)


def _piece(family: Family, words: tuple[bytes, ...], specials: tuple[bytes, ...]) -> st.SearchStrategy[bytes]:
    if family is Family.WORDS:
        return st.lists(st.sampled_from(words), min_size=1, max_size=LONGEST[family]).map(b"".join)
    if family is Family.SPECIALS:
        return _specials(specials)
    return _fixed(family)


@functools.cache
def _fixed(family: Family) -> st.SearchStrategy[bytes]:
    """The piece of a family whose tables are fixed (all but words and special texts), made once."""
    match family:
        case Family.SCRIPTS:
            return _run([_spans(spans) for spans in RANGES.values()], LONGEST[family])
        case Family.CATEGORIES:
            return _run([st.characters(categories=[category]) for category in CATEGORIES], LONGEST[family])
        case Family.WHITESPACE:  # CRLF is one item of the table: lists, not text
            return st.lists(st.sampled_from(WHITESPACE), min_size=1, max_size=LONGEST[family]).map("".join).map(_utf8)
        case Family.DIGITS:
            return _run([st.characters(categories=(), include_characters=digits) for digits in DIGITS], LONGEST[family])
        case Family.CONTRACTIONS:
            return st.sampled_from(CONTRACTIONS).map(_utf8)
        case Family.INVALID_UTF8:
            return st.sampled_from(MALFORMED_UTF8)
        case Family.BYTES:
            return st.binary(min_size=1, max_size=LONGEST[family])
    raise AssertionError(f"{family} draws from a vocabulary")


def _spans(spans: tuple[tuple[int, int], ...]) -> st.SearchStrategy[str]:
    """A character of a named range (which may have several spans)."""
    return st.one_of([st.characters(min_codepoint=low, max_codepoint=high) for low, high in spans])


def _run(alphabets: list[st.SearchStrategy[str]], longest: int) -> st.SearchStrategy[bytes]:
    """1 to `longest` characters from one of the alphabets. An alphabet given as one `characters`
    (the ranges of one span, the categories) is drawn as hypothesis's own string choice: fast to draw,
    and shrunk toward shorter strings of simpler characters."""
    return st.one_of([st.text(chars, min_size=1, max_size=longest) for chars in alphabets]).map(_utf8)


def _specials(specials: tuple[bytes, ...]) -> st.SearchStrategy[bytes]:
    """A special-token text with whitespace around it, or cut short. The padded text may be dropped
    (one time in 8), so that a failure caused by the padding alone (U+3000 before `</s>`) shrinks to
    the padding: the shrinker moves the choice to its first value, and cannot swap families."""
    padded = st.builds(
        lambda before, kept, text, after: _utf8(before) + (text if kept else b"") + _utf8(after),
        st.sampled_from(PADDING_BEFORE),
        st.sampled_from((False, *[True] * 7)),
        st.sampled_from(specials),
        st.sampled_from(PADDING_AFTER),
    )
    long = tuple(text for text in specials if len(text) > 1)
    if not long:
        return padded
    cut = st.sampled_from(long).flatmap(lambda text: st.integers(1, len(text) - 1).map(lambda end: text[:end]))
    return st.one_of(padded, cut)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8")
