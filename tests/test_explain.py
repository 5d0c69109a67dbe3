"""`--explain`: failures grouped into named causes, each a mechanism replayed to confirm every case
under it, checked on realistic ports (`real_ports`) by switching each planted bug off."""

from __future__ import annotations

import base64
import json
import sys
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import real_ports
import tokconf
from builds import tokenizer_build
from tokconf.builds.build import Build
from tokconf.checking import explain
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import CheckedFile, Selection, check_file
from tokconf.checking.explain import Kind, explain_file
from tokconf.checking.explain.causes import reason_template
from tokconf.checking.xfail import ExpectedFailures
from tokconf.cli.main import main
from tokconf.core.outcome import is_utf8
from tokconf.core.shrink import ddmin, holds, units
from tokconf.implementations.base import Refused
from tokconf.implementations.python import PythonImplementation
from tokconf_reference import Tokenizer
from tokconf_reference.errors import LlamaAborts

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


def test_ddmin_finds_a_one_minimal_input() -> None:
    """The input fails when it holds both "x" and "y": ddmin keeps exactly those two."""
    asked: list[bytes] = []

    def fails(inputs: list[bytes]) -> list[bool]:
        asked.extend(inputs)
        return [b"x" in data and b"y" in data for data in inputs]

    minimal, complete = ddmin(units(b"a long input with x somewhere and y later on"), fails)
    assert (minimal, complete) == (b"xy", True)
    assert len(asked) < 200


def test_ddmin_keeps_invalid_bytes_and_characters_whole() -> None:
    assert units(b"a" + "\u00e9".encode() + b"\xff") == [b"a", "\u00e9".encode(), b"\xff"]
    minimal, _ = ddmin(units("ab\u3000cd".encode()), lambda inputs: ["\u3000".encode() in d for d in inputs])
    assert minimal == "\u3000".encode()


def test_containment_respects_character_boundaries() -> None:
    """`Ý` is `c3 9d`: it holds no invalid byte `c3` (the misfiling of a Qwen NFC port's Vietnamese)."""
    assert not holds("Ý".encode(), b"\xc3")
    assert holds(b"a\xc3 b", b"\xc3") and holds("xÝy".encode(), "Ý".encode()) and holds(b"abc", b"")


def test_reasons_group_by_what_does_not_vary() -> None:
    assert reason_template("input 12 has 'héllo' at 0x1F") == reason_template("input 7 has 'x' at 0xA0")
    assert reason_template("can't tokenize b'abc'") == reason_template("can't tokenize b'\\xff\\x00'")
    assert reason_template("can't tokenize b'abc'").startswith("can't tokenize")
    assert reason_template("cannot encode U+0085") != reason_template("cannot load the vocab")


def _explained(name: str, bugs: frozenset[str] | None = None) -> tuple[CheckedFile, explain.Explanation]:
    spec = real_ports.PORTS[name]
    on = spec.bugs if bugs is None else bugs
    impl = PythonImplementation(f"real_ports:{name}", real_ports.factory(name, on))
    try:
        checked = check_file(BUNDLED / f"{spec.vocab}.yaml", impl, Selection(), ExpectedFailures(), None)
        return checked, explain_file(checked, impl)
    finally:
        impl.close()


@pytest.mark.parametrize("name", sorted(real_ports.PORTS))
def test_each_planted_bug_is_its_own_cause_and_every_case_passes_with_its_fix(name: str) -> None:
    """Every planted bug is found as a cause of its kind; every failed case is under causes whose
    bugs, switched off in the port itself, make the case pass; no other cause, nothing unexplained."""
    spec = real_ports.PORTS[name]
    checked, explanation = _explained(name)
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert failed and not explanation.unexplained
    kinds = Counter(c.kind.value for c in explanation.causes)
    planted = Counter(spec.bugs.values())
    assert set(kinds) == set(planted), (kinds, planted)
    kinds_of: dict[int, set[str]] = {}
    for cause in explanation.causes:
        for result in cause.cases:
            kinds_of.setdefault(id(result), set()).add(cause.kind.value)
    assert set(kinds_of) == {id(r) for r in failed}
    assert real_ports.misfiled(spec, checked.vocab, failed, kinds_of) == []


def test_labels_are_the_same_in_every_mode() -> None:
    """A JavaScript `\\s` port: its whitespace table (U+0085 left out, U+FEFF taken in) is one cause
    across plain, special and bos (where its missing BOS used to swallow it), and the BOS cause holds
    only cases that adding the BOS repairs."""
    _checked, explanation = _explained("js_llama3")
    by_kind: dict[Kind, list[explain.Cause]] = {}
    for cause in explanation.causes:
        by_kind.setdefault(cause.kind, []).append(cause)
    (table,) = by_kind[Kind.WHITESPACE_CLASS]
    assert "does not treat U+0085 (NEXT LINE) as whitespace and treats U+FEFF" in table.label
    assert {r.section for r in table.cases} == {"plain", "special", "bos"}
    (bos,) = by_kind[Kind.BOS_MISSING]
    for result in bos.cases:
        assert result in table.cases or result.actual == result.expected[1:]  # type: ignore[index]


def test_valid_utf8_is_never_under_invalid_utf8_refused() -> None:
    _, explanation = _explained("nfc_qwen2")
    (refused,) = [c for c in explanation.causes if c.kind is Kind.INVALID_UTF8_REFUSED]
    (nfc,) = [c for c in explanation.causes if c.kind is Kind.NORMALIZED_NFC]
    assert refused.cases and not [r.case for r in refused.cases if is_utf8(r.data)]
    assert any(r.case == "multilingual/vietnamese" for r in nfc.cases)


def test_one_deep_fault_is_one_cause() -> None:
    """GPT-2's byte mapping on an SPM vocabulary fails nearly every case: one cause, not hundreds."""
    checked, explanation = _explained("gpt2map_spm")
    (cause,) = explanation.causes
    assert cause.kind is Kind.BYTE_MAPPING
    assert len(cause.cases) == sum(r.verdict is Verdict.FAILED for r in checked.results) > 5000


def test_a_wrong_special_table_is_special_wrong_id_in_both_parsing_modes() -> None:
    _checked, explanation = _explained("tiktoken_llama3", frozenset({"special-table"}))
    (cause,) = explanation.causes
    assert cause.kind is Kind.SPECIAL_WRONG_ID and "128005 (llama.cpp: 128004)" in cause.label
    assert {r.section for r in cause.cases} == {"special", "bos"}  # plain mode parses no special token
    assert cause.minimal == b"<|reserved_special_token_2|>" and cause.expected == [128004]


def test_explain_cli_writes_every_case_per_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal shows each cause's kind, label and counts; --causes, the Markdown report and
    JUnit hold every case id."""
    causes, report, junit = tmp_path / "c.json", tmp_path / "r.md", tmp_path / "r.xml"
    args = ["check", "--recordings", str(BUNDLED / "qwen2.yaml"), "--impl", "real_ports:nfc_qwen2", "--details", "0"]
    assert main([*args, "--causes", str(causes), "--report", str(report), "--junit", str(junit)]) == 1
    output = capsys.readouterr().out
    doc = json.loads(causes.read_text(encoding="utf-8"))
    assert doc["format"] == 1 and doc["unexplained"] == [] and doc["errors"] == []
    kinds = {c["kind"]: c for c in doc["causes"]}
    assert set(kinds) == {"normalized-nfc", "invalid-utf8-refused"}
    refused = kinds["invalid-utf8-refused"]
    assert base64.b64decode(refused["minimal_input_b64"]) == b"\xc3" and refused["codepoints"] == ["\\xC3"]
    assert sum(refused["cases_per_mode"].values()) == len(refused["cases"]) == 1179
    for record in doc["causes"]:
        assert f"{record['kind']} — {record['label']}" in output
    text = report.read_text(encoding="utf-8")
    assert all(case in text for record in doc["causes"] for case in record["cases"])
    bodies = [f.text or "" for f in ET.parse(junit).getroot().iter("failure")]
    assert len(bodies) == 3039 and all("explained by: cause" in body for body in bodies)


@pytest.mark.oracle
def test_a_change_nobody_planted_is_named_as_llama_cpp_made_it(tmp_path: Path) -> None:
    """b11434 against b11192's recording of variant-glm4-unmerged: the difference is llama.cpp's own
    (from b11292 `llama_vocab::impl::load` sets `ignore_merges` in the branch glm4 shares with glm5), and
    `--explain` names it so: one `ignore-merges` cause over all 588 failed cases, its minimal input a
    pre-token the vocabulary holds whole (three spaces: b11192 gives three single spaces)."""
    made = tokenizer_build(11434)
    causes = tmp_path / "causes.json"
    args = ["check", "--impl", f"llama.cpp:{made.libllama}", "--vocab", "variant-glm4-unmerged", "--explain"]
    assert main([*args, "--details", "0", "--causes", str(causes)]) == 1
    doc = json.loads(causes.read_text(encoding="utf-8"))
    assert doc["unexplained"] == [] and doc["errors"] == []
    (cause,) = doc["causes"]
    assert cause["kind"] == "ignore-merges" and len(cause["cases"]) == 588
    assert cause["cases_per_mode"] == {"plain": 212, "special": 188, "bos": 188}
    assert base64.b64decode(cause["minimal_input_b64"]) == b"   "


def test_the_plugin_writes_the_same_causes(sandbox: pytest.Pytester, tmp_path: Path) -> None:
    """`--tokconf-causes` from pytest (each item reports its own cause) equals the CLI's file."""
    recording = BUNDLED / "qwen2.yaml"
    from_cli, from_plugin = tmp_path / "cli.json", tmp_path / "plugin.json"
    common = ["--mode", "plain", "--case", "multilingual/vietnamese", "--case", "fuzz/0003"]
    assert main(["check", "--recordings", str(recording), "--impl", "real_ports:nfc_qwen2", *common,
                 "--causes", str(from_cli)]) == 1  # fmt: skip
    sandbox.makeini(f"[pytest]\ntokconf_recordings = {recording}\n")
    result = sandbox.runpytest_subprocess(
        "--tokconf-impl", "real_ports:nfc_qwen2", "--tokconf-mode", "plain",
        "--tokconf-case", "multilingual/vietnamese", "--tokconf-case", "fuzz/0003", f"--tokconf-causes={from_plugin}",
    )  # fmt: skip
    assert result.ret == 1

    def causes(path: Path) -> list[tuple[str, str, list[str]]]:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return sorted((c["kind"], c["label"], sorted(c["cases"])) for c in doc["causes"])

    assert causes(from_plugin) == causes(from_cli) and causes(from_cli)


def test_unsupported_reasons_worded_per_input_are_one_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    causes = tmp_path / "c.json"
    args = ["check", "--recordings", str(BUNDLED / "gpt-2.yaml"), "--impl", "fake_impls:declines_by_length"]
    main([*args, "--mode", "plain", "--causes", str(causes)])
    doc = json.loads(causes.read_text(encoding="utf-8"))
    said = "(the port said: input of N bytes is too long for this port)"
    groups = {group["reason"]: len(group["cases"]) for group in doc["unsupported"]}  # one per input class it fits
    assert set(groups) == {f"other {said}", f"invalid-utf8 {said}", f"nul {said}"} and groups[f"other {said}"] > 100
    assert capsys.readouterr().out.count("unsupported:") == 3


def test_the_judge_is_the_recordings_build(llama_build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference judges new inputs only for recordings of its own build; any other build's
    recording is judged by that build's live llama.cpp (here: b11192 stands in for it)."""
    asked: list[int] = []

    def require(build: int) -> Build:
        asked.append(build)
        return llama_build

    monkeypatch.setattr(explain, "require_build", require)
    monkeypatch.setattr(explain, "REFERENCE_BUILD", 1)  # the reference is of another build now
    _checked, explanation = _explained("cstring_gpt2")
    assert asked == [11192]
    (cause,) = explanation.causes
    assert cause.kind is Kind.NUL_TRUNCATED and not explanation.unexplained


def test_live_judge_explains_a_port_of_the_live_library(llama_build: Build) -> None:
    """Two bugs (no BOS, U+3000 read as a space) of a port wrapping the live llama.cpp: two causes."""
    run = tokconf.check("fake_impls:two_bugs", BUNDLED / "llama-spm.yaml", explain=True)
    assert not run.decision.passed
    bos, space = run.causes
    assert (bos.kind, space.kind) == (Kind.BOS_MISSING, Kind.WHITESPACE_CLASS)
    assert space.minimal == "\u3000".encode() and "U+3000 (IDEOGRAPHIC SPACE) as U+0020 (SPACE)" in space.label
    assert {r.section for r in bos.cases} == {"bos"} and {r.section for r in space.cases} == {"plain", "special", "bos"}
    assert not run.unexplained


class Deviant:
    """The reference tokenizer with one deviation (`deviate(reference, data, add_special,
    parse_special)`): for the kinds the realistic ports do not plant. Its pieces are the
    reference's, mapped through `pieces` when its numbering differs."""

    def __init__(self, path: Path, deviate: Any, pieces: dict[int, int] | None = None) -> None:
        self.reference = Tokenizer.from_gguf(path)
        self.deviate = deviate
        self.renumbered = pieces or {}
        self.n_tokens = self.reference.n_tokens

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            return list(self.deviate(self.reference, data, add_special, parse_special))
        except LlamaAborts as error:
            raise Refused(str(error)) from None

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        return bytes(self.reference.token_to_piece(self.renumbered.get(token, token), special))

    def decode(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        theirs = [self.renumbered.get(token, token) for token in ids]
        return bytes(self.reference.decode(theirs, remove_special, unparse_special))


def _normalized(form: str) -> Any:
    def deviate(ref: Any, data: bytes, *flags: bool) -> list[int]:
        text = data.decode("utf-8", errors="surrogateescape")
        return list(ref.encode(unicodedata.normalize(form, text).encode("utf-8", "surrogateescape"), *flags))  # type: ignore[arg-type]

    return deviate


def _refuses(char: str) -> Any:
    def deviate(ref: Any, data: bytes, *flags: bool) -> list[int]:
        if char.encode() in data:
            raise Refused(f"cannot encode {char!r}")
        return list(ref.encode(data, *flags))

    return deviate


def _never_refuses(ref: Any, data: bytes, *flags: bool) -> list[int]:
    try:
        return list(ref.encode(data, *flags))
    except LlamaAborts:
        return [0]


HELLO, WORLD = 15496, 995  # gpt-2's "Hello" and " world" (its vocabulary file's ids)
SWAP = {HELLO: WORLD, WORLD: HELLO}

KIND_PORTS = {  # kind: (vocab, modes, deviation, the port's numbering)
    Kind.BOS_ADDED: ("gpt-2", ("plain", "bos"), lambda ref, data, *f: [50256, *ref.encode(data, *f)], None),
    Kind.EOS_ADDED: ("gpt-2", ("plain",), lambda ref, data, *f: [*ref.encode(data, *f), 50256], None),
    Kind.EOS_MISSING: ("nomic-bert-moe", ("bos",), lambda ref, data, *f: ref.encode(data, *f)[:-1], None),
    Kind.NORMALIZED_NFD: ("qwen2", ("plain",), _normalized("NFD"), None),
    Kind.NORMALIZED_NFKC: ("gpt-2", ("plain",), _normalized("NFKC"), None),
    Kind.NORMALIZED_NFKD: ("gpt-2", ("plain",), _normalized("NFKD"), None),
    Kind.REFUSED: ("qwen2", ("plain",), _refuses("é"), None),
    Kind.INVALID_UTF8_REPLACED: ("qwen2", ("plain",), lambda ref, data, *f: ref.encode(
        data.decode("utf-8", errors="replace").encode(), *f), None),
    Kind.NOT_REFUSED: ("gpt-2", ("plain",), _never_refuses, None),
    Kind.VOCAB_MISMATCH: ("gpt-2", ("plain",), lambda ref, data, *f: [SWAP.get(i, i) for i in ref.encode(data, *f)],
                          SWAP),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(KIND_PORTS), ids=lambda k: k.value)
def test_every_kind_is_found(kind: Kind) -> None:
    """Each kind the realistic ports do not plant, planted alone: one cause of that kind holds every
    failed case, and the label says which way (added where llama.cpp adds none, …)."""
    vocab, modes, deviate, pieces = KIND_PORTS[kind]
    impl = PythonImplementation(f"deviant-{kind.value}", lambda path: Deviant(path, deviate, pieces))
    try:
        selection = Selection(sections=frozenset(modes))
        checked = check_file(BUNDLED / f"{vocab}.yaml", impl, selection, ExpectedFailures(), None)
        explanation = explain_file(checked, impl)
    finally:
        impl.close()
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    (cause,) = explanation.causes
    assert failed and cause.kind is kind and not explanation.unexplained
    assert sorted(map(id, cause.cases)) == sorted(map(id, failed))
    if kind is Kind.REFUSED:
        assert "U+00E9" in cause.label
    if kind is Kind.BOS_ADDED:
        assert {r.section for r in failed} == set(modes) and "(add_special" not in cause.label
    if kind is Kind.VOCAB_MISMATCH:
        assert "'Hello' as 995 (llama.cpp: 15496)" in cause.label and "'·world' as 15496" in cause.label


class OpensOnce(Deviant):
    """A library that can be set up only once per process: explaining, which opens it again, fails."""

    opened = 0

    def __init__(self, path: Path) -> None:
        OpensOnce.opened += 1
        if OpensOnce.opened > 1:
            raise RuntimeError("already initialised")
        super().__init__(path, lambda ref, data, *f: [*ref.encode(data, *f), 0])


def test_an_explanation_that_fails_loses_no_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """The table, the verdict and every failure stay; the failures are unexplained, and why is said."""
    OpensOnce.opened = 0
    impl = PythonImplementation("opens-once", OpensOnce)
    checked = check_file(
        BUNDLED / "gpt-2.yaml", impl, Selection(sections=frozenset({"plain"})), ExpectedFailures(), None
    )
    explanation = explain_file(checked, impl)
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    assert not explanation.causes and explanation.unexplained == failed and failed
    assert explanation.error.startswith("could not explain gpt-2: ") and "already initialised" in explanation.error


def test_two_refusals_are_two_causes_and_a_case_with_both_is_under_both() -> None:
    """Refusing the empty input and invalid UTF-8, and NUL: a case holding NUL and invalid bytes is
    under both refusals, the empty input under its own."""

    def refuses(ref: Any, data: bytes, *flags: bool) -> list[int]:
        if not data or b"\0" in data or not is_utf8(data):
            raise Refused("no")
        return list(ref.encode(data, *flags))

    impl = PythonImplementation("refuses", lambda path: Deviant(path, refuses))
    checked = check_file(
        BUNDLED / "gpt-2.yaml", impl, Selection(sections=frozenset({"plain"})), ExpectedFailures(), None
    )
    explanation = explain_file(checked, impl)
    labels = {c.label: c for c in explanation.causes}
    assert set(labels) == {
        "refuses the empty input; llama.cpp tokenizes it",
        "refuses input holding U+0000 (NUL); llama.cpp tokenizes it",
        "refuses input that is not valid UTF-8; llama.cpp tokenizes it",
    }
    nul = labels["refuses input holding U+0000 (NUL); llama.cpp tokenizes it"]
    invalid = labels["refuses input that is not valid UTF-8; llama.cpp tokenizes it"]
    both = {id(r) for r in nul.cases} & {id(r) for r in invalid.cases}
    assert both and all(b"\0" in r.data and not is_utf8(r.data) for r in nul.cases if id(r) in both)
    assert not explanation.unexplained


def test_causes_json_lists_failed_facts_and_decoding(tmp_path: Path, llama_build: Build) -> None:
    causes = tmp_path / "c.json"
    args = ["check", "--recordings", str(BUNDLED / "gpt-2.yaml"), "--impl", "fake_impls:wrong_bos", "--causes"]
    assert main([*args, str(causes), "--details", "0"]) == 1
    doc = json.loads(causes.read_text(encoding="utf-8"))
    (other,) = doc["other_failures"]
    assert other["case"] == "gpt-2/facts/bos" and other["verdict"] == "failed" and doc["causes"] == []


RECORDINGS = BUNDLED
TWO_CASES = ["--recordings", str(RECORDINGS / "qwen2.yaml"), "--case", "edge/hello-world", "--case", "edge/sentence"]


FAULTS = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    answer = {"id": request["id"]}
    if request["op"] == "hello":
        answer.update(protocol=2, name="faults", vocab_types=["bpe"])
    elif request["op"] == "load":
        answer.update(ok=True)
    else:
        answer["fault"] = "broken"
    print(json.dumps(answer), flush=True)
"""


def test_a_run_with_nothing_to_explain_says_nothing_about_explaining(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Errors only (a port that faults on every input): no failed case, so no "explained: 0 failed cases
    as 0 cause(s)"; neither on a clean run."""
    program = tmp_path / "faults.py"
    program.write_text(FAULTS)
    impl = f"cmd:{sys.executable} {program}"
    run = tokconf.check(impl, TWO_CASES[1], cases=TWO_CASES[3::2], explain=True)
    assert {r.verdict for r in run.results} == {Verdict.ERROR} and run.explained and not run.causes
    assert main(["check", "--impl", impl, *TWO_CASES, "--explain"]) == 1
    assert "explained:" not in capsys.readouterr().out
    assert main(["check", "--impl", "reference", *TWO_CASES, "--explain"]) == 0
    assert "explained:" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("reason", "template"),
    [
        ("invalid-utf8 (the port said: no utf16 at 12)", "invalid-utf8 (the port said: no utf16 at N)"),
        ("x86_64 build, gpt2 pre, 3 of 40", "x86_64 build, gpt2 pre, N of N"),
        ("code point U+110000 at -3", "code point U+N at -N"),
    ],
)
def test_grouped_reasons_keep_digits_inside_words(reason: str, template: str) -> None:
    """Numbers standing alone vary per case and are masked; digits inside a word name something."""
    assert reason_template(reason) == template
