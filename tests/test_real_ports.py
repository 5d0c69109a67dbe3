"""The realistic buggy ports (tests/support/real_ports.py): with every bug off each answers as llama.cpp
recorded, on a sample that holds the cases each bug breaks; each bug alone breaks those cases. For
issue 33's ports (`NEW_PORTS`), what `--explain` makes of their faults: each fault one cause of its
kind, no case misfiled (its kind's bug switched off in the port makes it pass), no cause the port
contradicts, nothing unexplained.

The sample is a slice of the bundled recording (its cases and llama.cpp's answers as recorded),
checked through the engine as `tokconf check` checks it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import checked
import pytest
import real_ports
from real_ports import ALL_PORTS, KIND, NEW_PORTS, factory
from tokconf.builds.vocabs import vocab_file
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import CheckedFile, check_recording
from tokconf.checking.explain import Explanation, explain_file
from tokconf.checking.explain.kinds import Kind
from tokconf.implementations.python import PythonImplementation
from tokconf.recording.format import Recording, load
from tokconf.synth.files import gguf_of

B11192 = Path(__file__).resolve().parent.parent / "recordings" / "b11192"

# Per port and bug: recorded cases (mode, case id) that bug alone breaks, ...
BREAKS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "js_llama3": {
        "js-whitespace": [
            ("plain", "whitespace/pair-u0020-space-u0085-nel"),  # U+0085: whitespace to llama.cpp only
            ("plain", "whitespace/u0085-nel-space-mix"),
            ("special", "fuzz/1862"),  # U+FEFF (and no U+0085): whitespace to JavaScript only
        ],
        "no-bos": [("bos", "edge/hello-world"), ("bos", "edge/empty")],
    },
    "nfc_qwen2": {
        "nfc": [("plain", "scripts/latin-diacritics-nfd"), ("plain", "whitespace/u2000-en-quad-alone")],
        "strict-utf8": [("plain", "invalid-utf8/lone-continuation"), ("bos", "invalid-utf8/overlong-slash")],
    },
    "tiktoken_llama3": {
        "special-table": [("special", "vocab/128004-alone"), ("bos", "vocab/128010-alone")],
        "allowed-special-all": [("plain", "vocab/128000-alone"), ("plain", "vocab/128002-alone")],
    },
    "gpt2map_spm": {"byte-mapping": [("plain", "edge/hello-world"), ("special", "edge/sentence")]},
    "digits_llama3": {
        "digits-one-by-one": [("plain", "digits/ascii-run"), ("special", "digits/ascii-with-ascii")],
        "no-ignore-merges": [("plain", "llama.cpp/0043"), ("plain", "scripts/vietnamese")],
    },
    "cstring_gpt2": {"nul": [("plain", "controls/nul"), ("bos", "controls/nul-alone")]},
    "userdefined_qwen2": {"user-defined-as-control": [("plain", "vocab/151646-alone")]},
    "isolating_llama3": {
        "isolate-specials": [("plain", "vocab/128000-2spaces-before"), ("plain", "vocab/128000-doubled")]
    },
    "rawbytes_gpt2": {
        "raw-bytes": [("plain", "invalid-utf8/lone-continuation"), ("bos", "invalid-utf8/continuation-run")]
    },
    "startonly_gpt2": {"special-at-start": [("plain", "vocab/50256-alone"), ("special", "vocab/50256-2spaces-before")]},
    "bounded_llama3": {
        "ignore-merges-16": [("plain", "multilingual/russian")],
        "max-bytes": [("plain", "code/c-header"), ("bos", "code/cmake")],
    },
    "nl_llama3": {"nl-not-number": [("plain", "digits/roman-spaced"), ("special", "digits/roman-small-spaced")]},
    "binding_bert": {
        "sep-from-add-eos": [("bos", "edge/hello-world"), ("bos", "code/cpp")],
        "cls-from-add-bos": [],  # bert-bge's add_bos is true: it bites on a WPM vocab whose is not (below)
    },
    "runtime_gemma4": {
        "byte-mapping": [("plain", "edge/hello-world"), ("bos", "edge/sentence")],
        "nul": [("plain", "controls/nul"), ("bos", "controls/nul-alone")],
    },
    "contraction_gpt2": {"contraction-after-blank": [("plain", "fuzz/0028"), ("bos", "fuzz/0044")]},
    "tabprefix_gpt2": {"tab-drops-prefix": [("plain", "fuzz/0028"), ("special", "fuzz/0109")]},
    "lookahead_gpt2": {"no-lookahead": [("plain", "code/c-header"), ("special", "code/cmake")]},
}
# ... and cases it leaves alone: the bug is one step, not a general breakage.
SPARES: dict[str, list[tuple[str, str]]] = {
    "no-bos": [("plain", "edge/hello-world"), ("special", "edge/hello-world")],
    "strict-utf8": [("plain", "invalid-utf8/above-max-f4-90")],  # llama.cpp refuses it too
    "special-table": [("plain", "vocab/128004-alone"), ("special", "vocab/128255-alone")],  # 3.1 has no _250
    "allowed-special-all": [("special", "vocab/128000-alone"), ("bos", "vocab/128002-alone")],
    "user-defined-as-control": [("special", "vocab/151646-alone"), ("bos", "vocab/151646-alone")],
    "isolate-specials": [("special", "vocab/128000-2spaces-before"), ("bos", "vocab/128000-doubled")],
    "raw-bytes": [("plain", "invalid-utf8/above-max-f4-90")],  # llama.cpp aborts on it, and so does the port
    "special-at-start": [("plain", "vocab/50256-2spaces-before"), ("special", "vocab/50256-alone")],
    "ignore-merges-16": [("plain", "multilingual/vietnamese")],
    "max-bytes": [("plain", "multilingual/russian")],  # 1,580 bytes
    "sep-from-add-eos": [("plain", "edge/hello-world"), ("special", "edge/hello-world")],
    "cls-from-add-bos": [("bos", "edge/hello-world")],
    "nul": [("plain", "edge/hello-world")],
}
# Cases every port's sample holds besides its bugs' cases.
COMMON = ("edge/", "contractions/", "invalid-utf8/")


@cache
def _recording(vocab: str) -> Recording:
    return load(B11192 / f"{vocab}.yaml")


@cache
def _vocab_path(vocab: str) -> Path:
    recording = _recording(vocab)
    if "synthetic" in recording.provenance["vocab"]:
        return gguf_of(recording.vocab_name)  # made from the shipped files, in the cache
    return vocab_file(
        recording.provenance["vocab"]["file"], recording.vocab_sha256, recording.build, None
    )  # the pinned sdist's file, checked by sha256


def _sample(name: str) -> list[str]:
    named = {case for pairs in BREAKS[name].values() for _, case in pairs}
    named |= {case for bug in BREAKS[name] for _, case in SPARES.get(bug, [])}
    cases = _recording(ALL_PORTS[name].vocab).cases
    return sorted(named | {c.id for c in cases if c.id.startswith(COMMON)})


def _part(vocab: str, case_ids: list[str] | None) -> Recording:
    """The recording of `vocab` with only `case_ids` (None: all of it)."""
    recording = _recording(vocab)
    if case_ids is None:
        return recording
    wanted = set(case_ids)
    cases = [case for case in recording.cases if case.id in wanted]
    assert {case.id for case in cases} == wanted, "a case id that is not in the recording"
    return Recording(recording.provenance, recording.facts, cases)


def _judge(name: str, bugs: list[str], case_ids: list[str], vocab: str | None = None) -> dict[tuple[str, str], Verdict]:
    """Every mode of the cases, and the facts, judged as `tokconf check` judges them."""
    vocab = vocab or ALL_PORTS[name].vocab
    implementation = PythonImplementation(f"real_ports:{name}", factory(name, bugs))
    results = check_recording(_part(vocab, case_ids), implementation, _vocab_path(vocab))
    return {(result.section, result.case): result.verdict for result in results}


def test_the_catalogue() -> None:
    assert list(ALL_PORTS) == list(BREAKS)
    assert not real_ports.PORTS.keys() & NEW_PORTS.keys()
    for name, spec in ALL_PORTS.items():
        assert getattr(real_ports, name).__name__ == f"{name}[{','.join(sorted(spec.bugs))}]"  # the CLI factory
        assert spec.bugs.keys() == BREAKS[name].keys() == spec.descriptions.keys() == spec.port.BUGS
        assert set(spec.bugs.values()) <= {kind.value for kind in Kind} - {Kind.CHARACTER.value}  # a mechanism each
        assert (B11192 / f"{spec.vocab}.yaml").is_file()
    with pytest.raises(ValueError, match="has no bug"):
        factory("js_llama3", ["nfc"])


@pytest.mark.parametrize("name", list(ALL_PORTS))
def test_with_every_bug_off_the_port_answers_as_llama_cpp(name: str) -> None:
    sample = _sample(name)
    verdicts = _judge(name, [], sample)
    cases = [key for key in verdicts if key[0] != "facts"]
    assert len(cases) == 3 * len(sample) and len(verdicts) > len(cases)  # every case in three modes, and the facts
    assert {key: v for key, v in verdicts.items() if v is not Verdict.PASSED} == {}


@pytest.mark.parametrize(("name", "bug"), [(name, bug) for name, bugs in BREAKS.items() for bug in bugs])
def test_each_bug_alone_breaks_its_cases(name: str, bug: str) -> None:
    breaks, spares = BREAKS[name][bug], SPARES.get(bug, [])
    verdicts = _judge(name, [bug], sorted({case for _, case in breaks + spares}))
    assert [verdicts[pair] for pair in breaks] == [Verdict.FAILED] * len(breaks)
    assert [verdicts[pair] for pair in spares] == [Verdict.PASSED] * len(spares)
    facts = [verdict for (section, _), verdict in verdicts.items() if section == "facts"]
    assert facts and set(facts) == {Verdict.PASSED}  # a bug never changes the facts


def test_javascript_whitespace_differs_on_both_characters() -> None:
    """Of js-whitespace's cases, one holds U+0085 and not U+FEFF, one the other way round."""
    data = {case.id: case.data for case in _recording("llama-bpe").cases}
    held = [
        ("\x85".encode() in data[case], "\ufeff".encode() in data[case])
        for _, case in BREAKS["js_llama3"]["js-whitespace"]
    ]
    assert (True, False) in held and (False, True) in held


@pytest.mark.conformance
@pytest.mark.parametrize("name", list(ALL_PORTS))
def test_the_cli_factory_has_every_bug_on(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--impl real_ports:<name>` fails every case of every bug of the port, and passes edge/sentence
    in plain mode (but the two ports applying GPT-2's byte mapping, which breaks almost everything)."""
    spec = ALL_PORTS[name]
    pairs = [pair for pairs in BREAKS[name].values() for pair in pairs]
    cases = sorted({case for _, case in pairs} | {"edge/sentence"})
    args = ["--recordings", str(B11192 / f"{spec.vocab}.yaml"), "--impl", f"real_ports:{name}"]
    done = checked.check(capsys, *args, "--details", "0", *(arg for case in cases for arg in ("--case", case)))
    assert done.status == 1
    verdicts: dict[tuple[str, str], Verdict] = {(c.section, c.case): c.verdict for c in done.cases}
    assert {verdicts[pair] for pair in pairs} == {Verdict.FAILED}
    mapped = name in ("gpt2map_spm", "runtime_gemma4")
    assert verdicts[("plain", "edge/sentence")] is (Verdict.FAILED if mapped else Verdict.PASSED)


# --- issue 33: the new ports' faults, as --explain finds them ------------------------------------------

SYNTHETIC_WPM = "synthetic/variant-wpm-no-cls-sep"  # WordPiece with add_bos and add_sep false


def test_a_binding_adding_bos_by_hand_misses_cls_where_add_bos_is_false() -> None:
    """On a WPM vocabulary whose add_bos is false llama.cpp still starts with [CLS]: the binding
    (only `cls-from-add-bos` on) gives llama.cpp's ids without the first, in bos mode only."""
    cases = ["edge/sentence", "contractions/lower-all", "controls/nul"]
    spec = ALL_PORTS["binding_bert"]
    implementation = PythonImplementation("real_ports:binding_bert", factory("binding_bert", ["cls-from-add-bos"]))
    results = list(check_recording(_part(SYNTHETIC_WPM, cases), implementation, _vocab_path(SYNTHETIC_WPM)))
    failed = [r for r in results if r.verdict is Verdict.FAILED]
    assert {(r.section, r.case) for r in failed} == {("bos", case) for case in cases}
    assert all(r.actual == r.expected[1:] and r.expected[0] == _recording(SYNTHETIC_WPM).facts["special_ids"]["bos"]
               for r in failed)  # type: ignore[index]  # fmt: skip
    assert spec.vocab == "bert-bge"


def _explained(
    name: str, vocab: str | None = None, case_ids: list[str] | None = None
) -> tuple[CheckedFile, Explanation]:
    """Port `name` with every bug on, checked on (part of) a recording and explained, as `tokconf
    check --explain` does."""
    vocab = vocab or ALL_PORTS[name].vocab
    implementation = PythonImplementation(f"real_ports:{name}", factory(name, ALL_PORTS[name].bugs))
    try:
        results = list(check_recording(_part(vocab, case_ids), implementation, _vocab_path(vocab)))
        checked = CheckedFile(_part(vocab, case_ids), _vocab_path(vocab), results)
        return checked, explain_file(checked, implementation)
    finally:
        implementation.close()


def _kinds_of(explanation: Explanation) -> dict[int, set[str]]:
    kinds_of: dict[int, set[str]] = {}
    for cause in explanation.causes:
        for result in cause.cases:
            kinds_of.setdefault(id(result), set()).add(cause.kind.value)
    return kinds_of


@pytest.mark.parametrize("name", list(NEW_PORTS))
def test_each_new_fault_is_one_cause_of_its_kind(name: str) -> None:
    """Issue 33's done-when, on each new port's sample: every fault that breaks a case of the sample is
    exactly one cause of its kind, and there is no other cause; no case is misfiled (switching its
    kinds' bugs off in the port makes it pass); the port contradicts no cause; nothing is unexplained."""
    spec = ALL_PORTS[name]
    checked, explanation = _explained(name, case_ids=_sample(name))
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    breaking = {bug for bug, pairs in BREAKS[name].items() if pairs}
    assert failed and {(r.section, r.case) for r in failed} >= {p for bug in breaking for p in BREAKS[name][bug]}
    kinds = sorted(cause.kind.value for cause in explanation.causes)
    assert kinds == sorted(spec.bugs[bug] for bug in breaking), [c.label for c in explanation.causes]
    assert [r.case for r in explanation.unexplained] == []
    kinds_of = _kinds_of(explanation)
    assert real_ports.misfiled(spec, checked.vocab, failed, kinds_of) == []
    assert real_ports.contradicted(spec, checked.vocab, explanation.causes) == []


def test_the_special_isolation_port_leaves_nothing_unexplained() -> None:
    """Issue 33: special texts cut out with parse_special off, on the whole llama-bpe recording: one
    special-isolated cause holding every failed case (all in plain mode), none unexplained."""
    checked, explanation = _explained("isolating_llama3")
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert failed and {r.section for r in failed} == {"plain"}
    (cause,) = explanation.causes
    assert cause.kind.value == KIND["special-isolated"] and explanation.unexplained == []
    assert {id(r) for r in cause.cases} == {id(r) for r in failed}


def test_the_contraction_after_whitespace_port_is_one_cause() -> None:
    """Issue 33: a contraction not matched after whitespace other than U+0020, on the whole gpt-2
    recording: one cause of its kind for every failed case (it was 16 causes, most `character`)."""
    checked, explanation = _explained("contraction_gpt2")
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert failed
    (cause,) = explanation.causes
    assert cause.kind.value == KIND["whitespace-context"], cause.label
    assert {id(r) for r in cause.cases} == {id(r) for r in failed}


def test_a_wpm_binding_missing_both_cls_and_sep_is_explained() -> None:
    """Issue 33: WordPiece [CLS] and [SEP] both missing (a binding adding BOS/EOS by hand from facts
    that say neither) is cls-missing and sep-missing, one cause each, every failed case under both."""
    cases = [case.id for case in _recording(SYNTHETIC_WPM).cases if case.id.startswith(COMMON)]
    checked, explanation = _explained("binding_bert", SYNTHETIC_WPM, cases)
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert failed and {r.section for r in failed} == {"bos"}
    assert sorted(c.kind.value for c in explanation.causes) == sorted([KIND["cls-missing"], KIND["sep-missing"]])
    assert explanation.unexplained == []
    assert real_ports.misfiled(ALL_PORTS["binding_bert"], checked.vocab, failed, _kinds_of(explanation)) == []


def test_the_byte_mapping_runtime_on_gemma4_is_at_most_three_causes() -> None:
    """Issue 33: GPT-2's byte mapping and a NUL cut on gemma-4, on the port's sample: at most 3 causes
    (it was 60), of the two planted kinds, nothing unexplained."""
    _checked, explanation = _explained("runtime_gemma4", case_ids=_sample("runtime_gemma4"))
    assert len(explanation.causes) <= 3, [c.label for c in explanation.causes]
    assert {c.kind.value for c in explanation.causes} == {KIND["byte-mapping"], KIND["nul-truncated"]}
    assert explanation.unexplained == []


def test_the_same_failures_get_the_same_causes_in_every_run() -> None:
    """Issue 33 (stable): the special token parsed only at the start (`<|endoftext|>` → 50256 in plain
    mode) was `special-parsed` in one run and `character` in another; explained twice, the same
    failures get the same kinds, labels, minimal inputs and cases."""

    def causes() -> list[tuple[str, str, bytes, list[tuple[str, str]]]]:
        _checked, explanation = _explained("startonly_gpt2", case_ids=_sample("startonly_gpt2"))
        return [(c.kind.value, c.label, c.minimal, sorted((r.section, r.case) for r in c.cases))
                for c in explanation.causes]  # fmt: skip

    first = causes()
    assert first and first == causes()
