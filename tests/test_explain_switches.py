"""`--explain` names the reference tokenizer's own switches (issue 48): each switch planted alone in a
port (the reference with that one switch flipped, `test_explain.Deviant`) is named as one cause of its
kind holding every failed case, and refuted on a port of the same vocabulary whose fault is another
switch of the same kind or axis (the label says which one, or the kind is not named at all)."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_explain import Deviant
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import Selection, check_file
from tokconf.checking.explain import Explanation, Kind, explain_file
from tokconf.checking.explain.causes import faults, reason_template
from tokconf.checking.explain.kinds import MergeOrder, Replaced, WordPieceCleaning
from tokconf.checking.xfail import ExpectedFailures
from tokconf.implementations.python import PythonImplementation
from tokconf_reference import Tokenizer
from tokconf_reference.tokenizer import ATTR_LSTRIP, ATTR_RSTRIP
from tokconf_reference.wpm import Cleaning, WordPieceEncoder

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


def _switched(change: Any) -> Any:
    """A deviation: the reference of the vocabulary with `change(tokenizer)` applied once."""
    made: dict[int, Tokenizer] = {}

    def deviate(ref: Tokenizer, data: bytes, *flags: bool) -> list[int]:
        if id(ref) not in made:
            mutant = copy.copy(ref)
            mutant._recent = {}
            change(mutant)
            made[id(ref)] = mutant
        return list(made[id(ref)].encode(data, *flags))

    return deviate


def _no_prefix(t: Tokenizer) -> None:
    t.add_space_prefix = False


def _tie_break(how: str) -> Any:
    def change(t: Tokenizer) -> None:
        t.encoder = copy.copy(t.encoder)
        t.encoder.cache = {}
        t.encoder.tie_break = how  # type: ignore[union-attr]

    return change


def _cleaning(**off: bool) -> Any:
    def change(t: Tokenizer) -> None:
        e = t.encoder
        assert isinstance(e, WordPieceEncoder)
        raw = [x.encode("utf-8", "surrogateescape") for x in t.tokens]
        t.encoder = WordPieceEncoder(raw, e.unk_id, e.lowercase, Cleaning(**off))

    return change


def _wordpiece_on_unigram(t: Tokenizer) -> None:
    raw = [x.encode("utf-8", "surrogateescape") for x in t.tokens]
    t.encoder = WordPieceEncoder(raw, 3, True)  # nomic-bert-moe's <unk>


def _no_strip(t: Tokenizer) -> None:
    t.attrs = [a & ~(ATTR_LSTRIP | ATTR_RSTRIP) for a in t.attrs]


def _per_byte(ref: Tokenizer, data: bytes, *flags: bool) -> list[int]:
    """Go's decoding: each byte that does not start a valid sequence read as U+FFFD."""
    text = data.decode("utf-8", errors="surrogateescape")
    return list(ref.encode("".join("\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text).encode(), *flags))


def _cut_valid(t: Tokenizer) -> None:
    t.encoder = copy.copy(t.encoder)
    t.encoder.cache = {}
    t.encoder.cut_valid = True  # type: ignore[union-attr]


def _contraction_ends_run(t: Tokenizer) -> None:
    """memvanta's scanner: a run of symbols ends before a contraction (`>'d` is `>`, `'d`)."""
    from tokconf.checking.explain.kinds import SPLIT_RULES

    (rule,) = [r for r in SPLIT_RULES if r.name == "contraction-ends-run"]
    t.encoder = copy.copy(t.encoder)
    t.encoder.cache = {}
    t.encoder.regexes = rule.regexes(t.encoder.regexes)  # type: ignore[union-attr]


def _regex_of(pre_type: str) -> Any:
    def change(t: Tokenizer) -> None:
        from tokconf_reference.bpe import PRE_REGEXES

        t.encoder = copy.copy(t.encoder)
        t.encoder.cache = {}
        t.encoder.regexes = PRE_REGEXES[pre_type]  # type: ignore[union-attr]

    return change


def _letters_beyond_ascii(t: Tokenizer) -> None:
    """memvanta's scanner (`u_letter`): every non-ASCII code point but whitespace a letter."""
    from tokconf_reference.pretokenize import LETTER_BYTE, LLAMA_CLASSES, Classes
    from tokconf_reference.unicode import WHITESPACE

    collapse = [
        c if point < 0x80 or point in WHITESPACE else LETTER_BYTE for point, c in enumerate(LLAMA_CLASSES.collapse)
    ]
    t.encoder = copy.copy(t.encoder)
    t.encoder.cache = {}
    t.encoder.classes = Classes(collapse, LLAMA_CLASSES.plain)  # type: ignore[union-attr]


def _mapped_first(t: Tokenizer) -> None:
    t.encoder = copy.copy(t.encoder)
    t.encoder.cache = {}
    t.encoder.map_before_split = True  # type: ignore[union-attr]


def _maximal_subpart(ref: Tokenizer, data: bytes, *flags: bool) -> list[int]:
    return list(ref.encode(data.decode("utf-8", errors="replace").encode(), *flags))


def _latin1_bytes(ref: Tokenizer, data: bytes, *flags: bool) -> list[int]:
    """memvanta's decoding (plain mode): a byte that is not valid UTF-8 is the code point of its value to
    the pre-tokenizer (a letter; 0x85 and 0xA0 whitespace) and merged as the raw byte."""
    from tokconf_reference.bpe import byte_level
    from tokconf_reference.pretokenize import split

    text = data.decode("utf-8", errors="surrogateescape")
    seen = "".join(chr(ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)
    if seen == text:
        return list(ref.encode(data, *flags))
    encoder, ids, at = ref.encoder, [], 0
    for word in split(seen, encoder.regexes, encoder.classes):  # type: ignore[union-attr]
        ids += encoder.merge_word(byte_level(text[at : at + len(word)].encode("utf-8", "surrogateescape")))  # type: ignore[union-attr]
        at += len(word)
    return ids


# name: (vocab, modes, deviation, the kind named)
PLANTED: dict[str, tuple[str, tuple[str, ...], Any, Kind]] = {
    "space-prefix": ("llama-spm", ("plain",), _switched(_no_prefix), Kind.SPACE_PREFIX),
    "tie-break-heap": ("gpt-2", ("plain",), _switched(_tie_break("heap")), Kind.MERGE_ORDER),
    "tie-break-right": ("gpt-2", ("plain",), _switched(_tie_break("right")), Kind.MERGE_ORDER),
    "accents-kept": ("bert-bge", ("plain",), _switched(_cleaning(strip_accents=False)), Kind.WORDPIECE_CLEANING),
    "controls-kept": ("bert-bge", ("plain",), _switched(_cleaning(drop_controls=False)), Kind.WORDPIECE_CLEANING),
    "symbols-in-words": ("bert-bge", ("plain",), _switched(_cleaning(ascii_symbols=False)), Kind.WORDPIECE_CLEANING),
    "punctuation-bytes": (
        "bert-bge", ("plain",), _switched(_cleaning(whole_punctuation=False)), Kind.WORDPIECE_CLEANING
    ),
    "cjk-block-bound": ("bert-bge", ("plain",), _switched(_cleaning(hf_cjk_bound=False)), Kind.WORDPIECE_CLEANING),
    "wordpiece-on-unigram": ("nomic-bert-moe", ("plain",), _switched(_wordpiece_on_unigram), Kind.TOKENIZER_MODEL),
    "no-strip": ("phi-3", ("special",), _switched(_no_strip), Kind.SPECIAL_STRIP),
    "invalid-per-byte": ("gpt-2", ("plain",), _per_byte, Kind.INVALID_UTF8_REPLACED),
    "spm-cut-valid": ("llama-spm", ("plain",), _switched(_cut_valid), Kind.INVALID_UTF8_CUT),
    "contraction-ends-run": ("gpt-2", ("plain",), _switched(_contraction_ends_run), Kind.PRETOKENIZER_SPLIT),
    "llama3-regex": ("deepseek-coder", ("plain",), _switched(_regex_of("llama3")), Kind.PRETOKENIZER_SPLIT),
    "qwen2-regex": ("qwen35", ("plain",), _switched(_regex_of("qwen2")), Kind.PRETOKENIZER_SPLIT),
    "letters-beyond-ascii": ("gpt-2", ("plain",), _switched(_letters_beyond_ascii), Kind.LETTER_CLASS),
    "mapped-before-split": ("llama-bpe", ("plain",), _switched(_mapped_first), Kind.BYTE_MAPPED_SPLIT),
    "invalid-maximal-subpart": ("gpt-2", ("plain",), _maximal_subpart, Kind.INVALID_UTF8_REPLACED),
    "invalid-latin-1": ("gpt-2", ("plain",), _latin1_bytes, Kind.INVALID_UTF8_BYTES),
}  # fmt: skip


_EXPLAINED: dict[str, tuple[list[Any], Explanation]] = {}


def _explained(name: str) -> tuple[list[Any], Explanation]:
    if name not in _EXPLAINED:
        vocab, modes, deviate, _ = PLANTED[name]
        impl = PythonImplementation(f"switch-{name}", lambda path: Deviant(path, deviate))
        try:
            selection = Selection(sections=frozenset(modes))
            checked = check_file(BUNDLED / f"{vocab}.yaml", impl, selection, ExpectedFailures(), None)
            explanation = explain_file(checked, impl)
        finally:
            impl.close()
        failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
        _EXPLAINED[name] = (failed, explanation)
    return _EXPLAINED[name]


@pytest.mark.parametrize("name", list(PLANTED))
def test_each_switch_planted_alone_is_one_cause_of_its_kind(name: str) -> None:
    failed, explanation = _explained(name)
    kind = PLANTED[name][3]
    assert failed and not explanation.error and not explanation.unexplained
    assert Counter(c.kind for c in explanation.causes) == {kind: 1}, [(c.kind, c.label) for c in explanation.causes]
    (cause,) = explanation.causes
    assert sorted(map(id, cause.cases)) == sorted(map(id, failed))


# Each switch refuted where the port's fault is another: (port, kind, what the label must not say, or
# the kind must be absent)
def test_the_merge_order_named_is_the_ports() -> None:
    for name, other in (("tie-break-heap", "right"), ("tie-break-right", "heap")):
        (cause,) = _explained(name)[1].causes
        assert isinstance(cause.mechanism, MergeOrder) and cause.mechanism.tie_break != other


@pytest.mark.parametrize(
    ("name", "step"),
    [("accents-kept", "strip_accents"), ("controls-kept", "drop_controls"), ("symbols-in-words", "ascii_symbols"),
     ("punctuation-bytes", "whole_punctuation"), ("cjk-block-bound", "hf_cjk_bound")],
)  # fmt: skip
def test_each_cleaning_step_is_named_alone(name: str, step: str) -> None:
    """A port leaving out one step of BERT's cleaning is not blamed for the others."""
    (cause,) = _explained(name)[1].causes
    assert isinstance(cause.mechanism, WordPieceCleaning) and cause.mechanism.off == {step}


@pytest.mark.parametrize(
    ("name", "said"),
    [("contraction-ends-run", "ends a run of symbols before a contraction"),
     ("llama3-regex", "Llama 3's regex"), ("qwen2-regex", "Qwen2's regex")],
)  # fmt: skip
def test_the_split_rule_named_is_the_ports(name: str, said: str) -> None:
    """The regex named is the port's, not another that fits its minimal input (GPT-2's and Llama 3's
    part on `'S`); where no id tells two regexes apart (Llama 3's and Qwen2's on a vocabulary without
    multi-digit tokens), the label names both."""
    (cause,) = _explained(name)[1].causes
    assert said in cause.label


def test_the_invalid_utf8_policy_named_is_the_ports() -> None:
    (per_byte,) = _explained("invalid-per-byte")[1].causes
    (subpart,) = _explained("invalid-maximal-subpart")[1].causes
    assert isinstance(per_byte.mechanism, Replaced) and per_byte.mechanism.per_byte is True
    assert isinstance(subpart.mechanism, Replaced) and subpart.mechanism.per_byte is False
    assert "per byte (Go's decoding)" in per_byte.label and "maximal subpart" in subpart.label
    (latin1,) = _explained("invalid-latin-1")[1].causes  # memvanta's: was two causes naming other libraries'
    assert "the code point of its value (Latin-1" in latin1.label, latin1.label


@pytest.mark.parametrize(
    ("name", "absent"),
    [("space-prefix", Kind.INVALID_UTF8_REPLACED), ("accents-kept", Kind.BYTE_MAPPING),
     ("controls-kept", Kind.BYTE_MAPPING), ("wordpiece-on-unigram", Kind.SPACE_PREFIX),
     ("no-strip", Kind.SPECIAL_NOT_PARSED), ("spm-cut-valid", Kind.INVALID_UTF8_REPLACED),
     ("invalid-per-byte", Kind.INVALID_UTF8_BYTES), ("contraction-ends-run", Kind.WHITESPACE_CONTEXT),
     ("mapped-before-split", Kind.BYTE_MAPPING), ("letters-beyond-ascii", Kind.NUMBER_CLASS),
     ("tie-break-heap", Kind.LETTER_CLASS), ("llama3-regex", Kind.BYTE_MAPPED_SPLIT)],
)  # fmt: skip
def test_a_switch_is_refuted_on_a_port_without_its_fault(name: str, absent: Kind) -> None:
    """A switch that fits some minimal inputs of another fault is not named: GPT-2's byte mapping
    makes a non-ASCII word `[UNK]` as keeping its accents does (agreement on the unknown token is
    no evidence), a missing space prefix is no invalid-UTF-8 policy, a Unigram vocabulary run
    through WordPiece no space prefix, a byte mapping before the split no byte mapping of a
    vocabulary that has none, a heap's merge order no letter table, another model's regex no
    mapping before the split."""
    assert absent not in {c.kind for c in _explained(name)[1].causes}


def test_causes_of_one_switch_on_two_vocabularies_are_one_fault() -> None:
    """The same switch on two vocabularies of a run (a missing space prefix on llama-spm and on
    phi-3, both SentencePiece) folds into one fault that says where it holds."""
    causes = []
    for vocab in ("llama-spm", "phi-3"):
        impl = PythonImplementation("no-prefix", lambda path: Deviant(path, _switched(_no_prefix)))
        try:
            plain = Selection(sections=frozenset({"plain"}))
            checked = check_file(BUNDLED / f"{vocab}.yaml", impl, plain, ExpectedFailures(), None)
            causes += explain_file(checked, impl).causes
        finally:
            impl.close()
    assert {(c.vocab, c.kind) for c in causes} == {("llama-spm", Kind.SPACE_PREFIX), ("phi-3", Kind.SPACE_PREFIX)}
    (fault,) = faults(causes)
    assert fault.kind == "space-prefix" and set(fault.cases) == {"llama-spm", "phi-3"} and fault.causes == [0, 1]


def test_error_groups_fold_lists_of_every_shape() -> None:
    """A port answering id -1 inside lists of every length is one error group, not one per shape; an
    answer too long to quote whole (cut short) is one more, whatever its length."""
    shapes = ["[-1]", "[5, -1, 7]", "[-1, -1, -1, -1]", "[]"]
    assert len({reason_template(f"`ids` is not a list of token ids: {{'id': 4, 'ids': {s}}}") for s in shapes}) == 1
    cut = ["[8, 9, -1, 4, 12", "[3, -1, 5, 77, 1034, 5"]
    assert len({reason_template(f"`ids` is not a list of token ids: {{'id': 4, 'ids': {s}") for s in cut}) == 1
