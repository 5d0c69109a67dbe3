"""`--explain` on issue 33's fault shapes (`real_ports.NEW_PORTS`): each fault one cause of its kind,
every case passing with its cause's bugs off; mechanisms falsified by probes before they are named;
`character` causes generalized over the culprit's class; the same kind in every run."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import real_ports
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import CheckedFile, Selection, check_file
from tokconf.checking.explain import Explanation, Kind, explain_file, reference_tokenizer, special_texts
from tokconf.checking.explain.explainer import Explainer
from tokconf.checking.explain.kinds import (
    Boundary,
    ContextRule,
    RawBytes,
    RawTail,
    Reclassed,
    Replaced,
    SpecialsCut,
    SpecialStartOnly,
    Stage,
)
from tokconf.checking.explain.model import Judge, Model, Mutants, edges_of, reference_backend
from tokconf.checking.xfail import ExpectedFailures
from tokconf.core.outcome import MODES
from tokconf.implementations.base import VocabInfo
from tokconf.implementations.python import PythonImplementation
from tokconf_reference import Tokenizer

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
# The ports (PORT or PORT@VOCAB, a recording stem) and the modes they are checked in here.
SHAPES = {
    "isolating_llama3": ("plain",),
    "rawbytes_gpt2": ("plain",),
    "startonly_gpt2": ("plain", "special"),
    "nl_llama3": ("plain",),
    "binding_bert": ("bos",),
    "binding_bert@synthetic/variant-wpm-no-cls-sep": ("bos",),  # [CLS] and [SEP] both missing
    "contraction_gpt2": ("plain",),
    "tabprefix_gpt2": ("plain",),
    "lookahead_gpt2": ("plain",),
}


def _explained(port: str, modes: tuple[str, ...]) -> tuple[CheckedFile, Explanation]:
    name, _, vocab = port.partition("@")
    spec = real_ports.ALL_PORTS[name]
    impl = PythonImplementation(f"real_ports:{name}", real_ports.factory(name, spec.bugs))
    try:
        selection = Selection(sections=frozenset(modes))
        checked = check_file(BUNDLED / f"{vocab or spec.vocab}.yaml", impl, selection, ExpectedFailures(), None)
        return checked, explain_file(checked, impl)
    finally:
        impl.close()


@pytest.mark.parametrize("port", sorted(SHAPES))
def test_each_fault_is_one_cause_of_its_kind(port: str) -> None:
    """One cause per planted kind, nothing unexplained, every case passing once the bugs of its
    causes' kinds are off in the port, and no cause's minimal input failing with its kind's bugs off."""
    spec = real_ports.ALL_PORTS[port.partition("@")[0]]
    checked, explanation = _explained(port, SHAPES[port])
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert failed and not explanation.unexplained and not explanation.error
    kinds = Counter(c.kind.value for c in explanation.causes)
    assert set(kinds) <= set(spec.bugs.values()) and set(kinds.values()) == {1}, kinds
    kinds_of: dict[int, set[str]] = {}
    for cause in explanation.causes:
        for result in cause.cases:
            kinds_of.setdefault(id(result), set()).add(cause.kind.value)
    assert real_ports.misfiled(spec, checked.vocab, failed, kinds_of) == []
    assert real_ports.contradicted(spec, checked.vocab, explanation.causes) == []


def test_a_contraction_fault_after_whitespace_is_one_cause_naming_the_class() -> None:
    """`\\n't`, `\\r'd`, `\\u2028's`, … are one fault: a contraction not matched after any whitespace but
    U+0020; the whitespace class of the port is right (no `whitespace-class`)."""
    _checked, explanation = _explained("contraction_gpt2", ("plain",))
    (cause,) = explanation.causes
    assert cause.kind is Kind.WHITESPACE_CONTEXT
    rule = cause.mechanism
    assert isinstance(rule, ContextRule) and rule.contraction and not rule.prefix
    assert {0x09, 0x0A, 0x0D, 0x2028, 0x3000} <= rule.points and 0x20 not in rule.points
    assert "matches no contraction right after any whitespace but U+0020 (SPACE)" in cause.label


class _Probing:
    """An explainer over a realistic port's session, to ask it probes directly."""

    def __init__(self, name: str) -> None:
        spec = real_ports.ALL_PORTS[name]
        self.impl = PythonImplementation(f"real_ports:{name}", real_ports.factory(name, spec.bugs))
        plain = Selection(sections=frozenset({"plain"}))
        checked = check_file(BUNDLED / f"{spec.vocab}.yaml", self.impl, plain, ExpectedFailures(), None)
        recording = checked.recording
        reference = reference_tokenizer(checked.vocab)
        info = VocabInfo.of(checked.vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
        self.session = self.impl.open(info)
        model = Model(Judge(reference_backend(reference)), Mutants(reference), edges_of(recording.facts))
        specials = special_texts(checked.vocab, recording.facts, reference)
        passing = [r for r in checked.results if r.verdict is Verdict.PASSED and r.section in MODES]
        self.explainer = Explainer(recording.vocab_name, recording.facts, self.session, model, specials, passing)

    def close(self) -> None:
        self.session.close()
        self.impl.close()


@pytest.fixture(scope="module")
def probing() -> Any:
    made: dict[str, _Probing] = {}

    def get(name: str) -> Explainer:
        if name not in made:
            made[name] = _Probing(name)
        return made[name].explainer

    yield get
    for one in made.values():
        one.close()


def test_a_probe_contradicts_a_whitespace_flip_that_fits_by_accident(probing: Any) -> None:
    """`\\n't` answered `\\n`, `'`, `t` fits "U+000A is not whitespace" as well as "no contraction after
    U+000A"; `x \\n\\n y` and `\\n\\nx` tell them apart, and the port answers as the second predicts."""
    explainer = probing("contraction_gpt2")
    minimal = b"\n't"
    flip = Reclassed(Kind.WHITESPACE_CLASS, Stage.TOKENIZER, flips={0x0A: False})
    rule = ContextRule(Kind.WHITESPACE_CONTEXT, Stage.TOKENIZER, {0x0A})
    got = explainer._port([minimal], "plain")[0]
    assert explainer.model.predict([flip], minimal, "plain") == got  # both fit the minimal input
    assert explainer.model.predict([rule], minimal, "plain") == got
    assert explainer._contradicted([], [flip], minimal, "plain")
    assert not explainer._contradicted([], [rule], minimal, "plain")


def test_a_prefix_rule_is_contradicted_where_the_port_keeps_the_prefix(probing: Any) -> None:
    """The contraction port keeps a word's leading space after a tab: "drops the prefix" is refuted."""
    explainer = probing("contraction_gpt2")
    both = ContextRule(Kind.WHITESPACE_CONTEXT, Stage.TOKENIZER, {0x09})
    both.prefix = True
    assert explainer._contradicted([], [both], b"\t't", "plain")
    tab = probing("tabprefix_gpt2")
    only = ContextRule(Kind.WHITESPACE_CONTEXT, Stage.TOKENIZER, {0x09})
    assert tab._contradicted([], [only], b"\t're", "plain")  # `\t x` keeps no prefix either
    assert not tab._contradicted([], [both], b"\t're", "plain")


def test_special_parsed_everywhere_is_contradicted_for_a_port_parsing_at_the_start(probing: Any) -> None:
    """`<|endoftext|>` → [50256] in plain mode fits "parses it everywhere"; `a<|endoftext|>` refutes it."""
    explainer = probing("startonly_gpt2")
    text = b"<|endoftext|>"
    everywhere = SpecialsCut(Kind.SPECIAL_PARSED, Stage.TOKENIZER, parse_special=False, tokens={50256: text})
    at_start = SpecialStartOnly(Kind.SPECIAL_START_ONLY, Stage.INPUT, tokens={50256: text})
    assert explainer._port([text], "plain")[0] == [50256] == explainer.model.predict([everywhere], text, "plain")
    assert explainer._contradicted([], [everywhere], text, "plain")
    assert not explainer._contradicted([], [at_start], text, "plain")


def test_replacement_is_contradicted_for_a_port_keeping_raw_bytes(probing: Any) -> None:
    explainer = probing("rawbytes_gpt2")
    raw = RawBytes(Kind.INVALID_UTF8_BYTES, Stage.INPUT)
    replaced = Replaced(Kind.INVALID_UTF8_REPLACED, Stage.INPUT)
    minimal = b"\x80"
    assert explainer.model.predict([raw], minimal, "plain") == explainer._port([minimal], "plain")[0] == [222]
    assert not explainer._contradicted([], [raw], minimal, "plain")
    assert explainer.model.predict([replaced], minimal, "plain") != [222]  # llama.cpp's U+FFFD, not the byte
    assert explainer._contradicted([], [replaced], b"\xe4\xb8", "plain")
    tail = RawTail(Kind.INVALID_UTF8_BYTES, Stage.INPUT)  # tiktoken's way: the rest merged with the bytes
    assert explainer.model.predict([tail], minimal, "plain") == [222]
    assert explainer._contradicted([], [tail], minimal, "plain")  # `x \x80 y` keeps ` y` apart


def test_an_added_eos_is_contradicted_where_the_port_adds_none(probing: Any) -> None:
    """A boundary mechanism changes every probe's context too: the fillers refute it."""
    explainer = probing("contraction_gpt2")  # adds nothing wrong at the edges
    bos = Boundary(Kind.EOS_ADDED, Stage.OUTPUT, token=50256, add_special={False})
    assert explainer._contradicted([], [bos], b"\n't", "plain")


def test_startonly_gets_the_same_kind_in_every_run_and_selection() -> None:
    """The same minimal input with the same answers (`<|endoftext|>` → [50256] in plain mode) is one
    kind whether one case is checked, plain mode alone, or every mode: the passed cases a selection
    happens to hold (`\\n<|endoftext|>x` passes in plain mode) no longer decide it, the probes do."""
    found = set()
    for modes, cases in ((("plain",), ("vocab/50256-alone",)), (("plain",), ()), (("plain", "special", "bos"), ())):
        spec = real_ports.ALL_PORTS["startonly_gpt2"]
        impl = PythonImplementation("real_ports:startonly_gpt2", real_ports.factory("startonly_gpt2", spec.bugs))
        try:
            selection = Selection(sections=frozenset(modes), cases=frozenset(cases))
            checked = check_file(BUNDLED / "gpt-2.yaml", impl, selection, ExpectedFailures(), None)
            explanation = explain_file(checked, impl)
        finally:
            impl.close()
        (cause,) = explanation.causes
        found.add((cause.kind, cause.minimal if cause.mode == "plain" else b""))
    assert {kind for kind, _ in found} == {Kind.SPECIAL_START_ONLY}


def test_the_same_causes_whatever_the_hash_seed(tmp_path: Path) -> None:
    """No set or dict order decides a kind: two processes with other hash seeds name the same causes."""
    script = (
        "import sys; sys.path[:0] = ['tests', 'tests/support']; from test_explain_shapes import _explained\n"
        "_, e = _explained('contraction_gpt2', ('plain',))\n"
        "print(sorted((c.kind.value, c.label, c.minimal.hex(), len(c.cases)) for c in e.causes))\n"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1 and "whitespace-context" in outputs.pop()


class _NlAddsZero:
    """No mechanism tokconf knows: a port that puts token 0 first whenever the input holds a letter
    number (Nl). Its cause can only be `character`, and it must name the class, once."""

    def __init__(self, path: Path) -> None:
        self.reference = Tokenizer.from_gguf(path)
        self.n_tokens = self.reference.n_tokens

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = list(self.reference.encode(data, add_special, parse_special))
        text = data.decode("utf-8", "replace")
        return [0, *ids] if any(unicodedata.category(c) == "Nl" for c in text) else ids

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        return bytes(self.reference.token_to_piece(token, special))

    def decode(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        return bytes(self.reference.decode(ids, remove_special, unparse_special))


def test_a_character_cause_is_generalized_over_its_class() -> None:
    impl = PythonImplementation("nl-adds-zero", _NlAddsZero)
    try:
        selection = Selection(sections=frozenset({"plain"}))
        checked = check_file(BUNDLED / "gpt-2.yaml", impl, selection, ExpectedFailures(), None)
        explanation = explain_file(checked, impl)
    finally:
        impl.close()
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    (cause,) = explanation.causes
    assert cause.kind is Kind.CHARACTER and not explanation.unexplained
    assert sorted(map(id, cause.cases)) == sorted(map(id, failed)) and len(failed) > 3
    assert "letter number (Nl)" in cause.label


def test_a_bos_that_is_a_normal_token_is_labelled_with_its_text() -> None:
    """A synthetic BPE vocabulary without a BOS of its own gets llama.cpp's default, 11, a normal token
    (`,`): a port adding it is labelled with its piece, not ''."""

    class AddsBos(_NlAddsZero):
        def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
            return [11, *self.reference.encode(data, add_special, parse_special)]

    impl = PythonImplementation("adds-bos", AddsBos)
    try:
        selection = Selection(sections=frozenset({"plain"}), cases=frozenset({"edge/hello-world", "edge/empty"}))
        checked = check_file(BUNDLED / "synthetic" / "pre-bloom.yaml", impl, selection, ExpectedFailures(), None)
        explanation = explain_file(checked, impl)
    finally:
        impl.close()
    (cause,) = explanation.causes
    assert cause.kind is Kind.BOS_ADDED and "',' (11)" in cause.label


class _StickyGpt2(_NlAddsZero):
    """GPT-2 with gpt-tokenizer 4's special-token scan (`BytePairEncodingCore.findNextSpecialToken`):
    with special parsing on, a sticky regex is tried at the scan position only (the start, or the
    end of the token before), and the token found at offset s is taken to start at 2s (the text
    between kept as text); with it off nothing is parsed, as in llama.cpp."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        reference = self.reference
        if not parse_special:
            return list(reference.encode(data, add_special, False))
        specials = [(reference.special_bytes[t], t) for t in reference.specials if reference.special_bytes[t]]
        ids: list[int] = []
        at = 0
        while True:
            found = next(((text, t) for text, t in specials if data.startswith(text, at)), None)
            if found is None:
                return ids + list(reference.encode(data[at:], False, False))
            ids += [*reference.encode(data[at : 2 * at], False, False), found[1]]
            at = 2 * at + len(found[0])


class _ShiftedLlama3(_NlAddsZero):
    """Llama 3 as llama3-tokenizer-js 1.2 tokenizes it: EOS `<|end_of_text|>` appended with
    add_special (its `encode` adds both BOS and EOS by default), and the reserved special tokens from
    128002 up numbered one higher than the GGUF vocabulary (its own special-token table)."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = [t + 1 if t >= 128002 else t for t in self.reference.encode(data, add_special, parse_special)]
        return [*ids, 128001] if add_special else ids


def _explained_port(port: Any, vocab: str, selection: Selection) -> tuple[CheckedFile, Explanation]:
    impl = PythonImplementation(port.__name__, port)
    try:
        checked = check_file(BUNDLED / f"{vocab}.yaml", impl, selection, ExpectedFailures(), None)
        return checked, explain_file(checked, impl)
    finally:
        impl.close()


def test_a_sticky_special_scan_is_one_start_only_cause_that_parses_nothing_in_plain_mode() -> None:
    """gpt-tokenizer's shape: `\\n<|endoftext|>` is all text with special parsing on, `<|endoftext|>`
    alone is text in plain mode (right) and the token with parsing on; one `special-start-only` cause,
    not a `character` one, and it says plain mode parses nothing (contrast `startonly_gpt2`)."""
    checked, explanation = _explained_port(_StickyGpt2, "gpt-2", Selection(sections=frozenset({"plain", "special"})))
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert failed and not explanation.unexplained
    (cause,) = explanation.causes
    mechanism = cause.mechanism
    assert isinstance(mechanism, SpecialStartOnly) and not mechanism.plain and mechanism.doubled
    assert sorted(map(id, cause.cases)) == sorted(map(id, failed))
    assert {r.section for r in failed} == {"special"}
    assert "with parse_special=true" in cause.label and "even with parse_special=false" not in cause.label


def test_a_renumbered_special_token_behind_an_added_eos_needs_no_shrink() -> None:
    """llama3-tokenizer-js's shape: in bos mode each reserved token's answer differs by its id and by
    the EOS appended; the renumbering is read off llama.cpp's answer with the EOS replayed, so each
    of the 250 tokens joins `special-wrong-id` (with `eos-added`) without a shrink of its own (the
    shrinking budget would leave most unexplained)."""
    cases = frozenset(f"vocab/{t}-alone" for t in range(128000, 128256))
    checked, explanation = _explained_port(
        _ShiftedLlama3, "llama-bpe", Selection(sections=frozenset({"bos"}), cases=cases)
    )
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert len(failed) > 200 and not explanation.unexplained
    kinds = {c.kind: c for c in explanation.causes}
    assert set(kinds) == {Kind.EOS_ADDED, Kind.SPECIAL_WRONG_ID}
    assert len(kinds[Kind.EOS_ADDED].cases) == len(failed)
    assert len(kinds[Kind.SPECIAL_WRONG_ID].cases) == len(failed) - 2  # BOS and EOS keep their ids
    assert explanation.shrinks < 10


def test_a_raw_tail_keeps_the_words_before_it_as_the_prefix_splits_them(probing: Any) -> None:
    """tiktoken's `_encode_bytes` on ` <U+205F>쯸\\xbf`: the valid prefix tokenized whole splits ` `
    from `<U+205F>` (a letter follows), and only `쯸` is merged with the raw byte; ` <U+205F>`
    tokenized alone would be one word."""
    explainer = probing("rawbytes_gpt2")
    tail = RawTail(Kind.INVALID_UTF8_BYTES, Stage.INPUT)
    data = " \u205f쯸".encode() + b"\xbf"
    assert explainer.model.predict([tail], data, "plain") == [220, 46256, 253, 168, 107, 116, 123]
