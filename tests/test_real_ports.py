"""The realistic buggy ports (tests/real_ports.py): with every bug off each answers as llama.cpp
recorded, on a sample that holds the cases each bug breaks; each bug alone breaks those cases.

The sample is a slice of the bundled recording (its cases and llama.cpp's answers as recorded),
checked through the engine as `tokconf check` checks it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import real_ports
from real_ports import PORTS, factory
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import check_recording
from tokconf.checking.run import CheckRun
from tokconf.cli.main import main
from tokconf.implementations.python import PythonImplementation
from tokconf.llama.vocabs import vocab_file
from tokconf.recordings.format import Recording, load

B11192 = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
KINDS = {
    "bos-missing", "whitespace-class", "normalized-nfc", "invalid-utf8-refused", "special-wrong-id", "special-parsed",
    "special-not-parsed", "byte-mapping", "pretokenizer-split", "ignore-merges", "nul-truncated",
}  # fmt: skip

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
}
# ... and cases it leaves alone: the bug is one step, not a general breakage.
SPARES: dict[str, list[tuple[str, str]]] = {
    "no-bos": [("plain", "edge/hello-world"), ("special", "edge/hello-world")],
    "strict-utf8": [("plain", "invalid-utf8/above-max-f4-90")],  # llama.cpp refuses it too
    "special-table": [("plain", "vocab/128004-alone"), ("special", "vocab/128255-alone")],  # 3.1 has no _250
    "allowed-special-all": [("special", "vocab/128000-alone"), ("bos", "vocab/128002-alone")],
    "user-defined-as-control": [("special", "vocab/151646-alone"), ("bos", "vocab/151646-alone")],
}
# Cases every port's sample holds besides its bugs' cases.
COMMON = ("edge/", "contractions/", "invalid-utf8/")


@cache
def _recording(vocab: str) -> Recording:
    return load(B11192 / f"{vocab}.yaml")


@cache
def _vocab_path(vocab: str) -> Path:
    recording = _recording(vocab)
    return vocab_file(
        recording.provenance["vocab"]["file"], recording.vocab_sha256, recording.build, None
    )  # the pinned sdist's file, checked by sha256


def _sample(name: str) -> list[str]:
    named = {case for pairs in BREAKS[name].values() for _, case in pairs}
    named |= {case for bug in BREAKS[name] for _, case in SPARES.get(bug, [])}
    cases = _recording(PORTS[name].vocab).cases
    return sorted(named | {c.id for c in cases if c.id.startswith(COMMON)})


def _judge(name: str, bugs: list[str], case_ids: list[str]) -> dict[tuple[str, str], Verdict]:
    """Every mode of the cases, and the facts, judged as `tokconf check` judges them."""
    spec = PORTS[name]
    recording = _recording(spec.vocab)
    wanted = set(case_ids)
    cases = [case for case in recording.cases if case.id in wanted]
    assert {case.id for case in cases} == wanted, "a case id that is not in the recording"
    part = Recording(recording.provenance, recording.facts, cases)
    implementation = PythonImplementation(f"real_ports:{name}", factory(name, bugs))
    results = check_recording(part, implementation, _vocab_path(spec.vocab))
    return {(result.section, result.case): result.verdict for result in results}


def test_the_catalogue() -> None:
    assert list(PORTS) == list(BREAKS)
    for name, spec in PORTS.items():
        assert getattr(real_ports, name).__name__ == f"{name}[{','.join(sorted(spec.bugs))}]"  # the CLI factory
        assert spec.bugs.keys() == BREAKS[name].keys() == spec.descriptions.keys() == spec.port.BUGS
        assert set(spec.bugs.values()) <= KINDS
        assert (B11192 / f"{spec.vocab}.yaml").is_file()
    with pytest.raises(ValueError, match="has no bug"):
        factory("js_llama3", ["nfc"])


@pytest.mark.parametrize("name", list(PORTS))
def test_with_every_bug_off_the_port_answers_as_llama_cpp(name: str) -> None:
    sample = _sample(name)
    verdicts = _judge(name, [], sample)
    assert len(verdicts) == 3 * len(sample) + 5  # every case in three modes, and five facts
    assert {key: v for key, v in verdicts.items() if v is not Verdict.PASSED} == {}


@pytest.mark.parametrize(("name", "bug"), [(name, bug) for name, bugs in BREAKS.items() for bug in bugs])
def test_each_bug_alone_breaks_its_cases(name: str, bug: str) -> None:
    breaks, spares = BREAKS[name][bug], SPARES.get(bug, [])
    verdicts = _judge(name, [bug], sorted({case for _, case in breaks + spares}))
    assert [verdicts[pair] for pair in breaks] == [Verdict.FAILED] * len(breaks)
    assert [verdicts[pair] for pair in spares] == [Verdict.PASSED] * len(spares)
    facts = [verdict for (section, _), verdict in verdicts.items() if section == "facts"]
    assert facts == [Verdict.PASSED] * 5  # a bug never changes the facts


def test_javascript_whitespace_differs_on_both_characters() -> None:
    """Of js-whitespace's cases, one holds U+0085 and not U+FEFF, one the other way round."""
    data = {case.id: case.data for case in _recording("llama-bpe").cases}
    held = [
        ("\x85".encode() in data[case], "\ufeff".encode() in data[case])
        for _, case in BREAKS["js_llama3"]["js-whitespace"]
    ]
    assert (True, False) in held and (False, True) in held


@pytest.mark.parametrize("name", list(PORTS))
def test_the_cli_factory_has_every_bug_on(
    name: str, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """`--impl real_ports:<name>` fails every case of every bug of the port, and passes edge/sentence
    in plain mode (but gpt2map_spm, whose one bug breaks almost everything)."""
    spec = PORTS[name]
    pairs = [pair for pairs in BREAKS[name].values() for pair in pairs]
    cases = sorted({case for _, case in pairs} | {"edge/sentence"})
    args = ["check", "--recordings", str(B11192 / f"{spec.vocab}.yaml"), "--impl", f"real_ports:{name}"]
    assert main([*args, "--details", "0", *(arg for case in cases for arg in ("--case", case))]) == 1
    capsys.readouterr()
    verdicts: dict[tuple[str, str], Verdict] = {(r.section, r.case): r.verdict for r in check_runs[-1].results}
    assert {verdicts[pair] for pair in pairs} == {Verdict.FAILED}
    assert verdicts[("plain", "edge/sentence")] is (Verdict.FAILED if name == "gpt2map_spm" else Verdict.PASSED)
