"""`--explain`: failures shrunk to minimal inputs and grouped into causes, each named where the ids
show the mechanism exactly."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.check import explain
from harness.check.explain import Pattern, ddmin, units
from harness.check.run import CheckRun
from harness.cli.main import main
from harness.llama.build import Build

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


def test_two_planted_bugs_are_two_causes_with_their_minimal_inputs(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """No BOS, and U+3000 taken for a space: thousands of failures, two causes."""
    junit = tmp_path / "r.xml"
    args = ["check", "--recordings", str(BUNDLED / "llama-spm.yaml"), "--impl", "fake_impls:two_bugs", "--explain"]
    assert main([*args, "--details", "0", "--junit", str(junit), "--report", str(tmp_path / "r.md")]) == 1
    output = capsys.readouterr().out
    run = check_runs[-1]
    failed = sum(1 for r in run.results if r.verdict.value == "failed")
    assert failed > 2000 and sum(len(c.cases) for c in run.causes) == failed
    bos, space = run.causes
    assert (bos.pattern, bos.minimal, {r.section for r in bos.cases}) == (Pattern.BOS_MISSING, b"", {"bos"})
    assert space.minimal == "\u3000".encode() and {r.section for r in space.cases} == {"plain", "special", "bos"}
    assert (space.expected, space.actual) == ([29871, 30358], [259])
    assert "cause 2: llama-spm" in output and "minimal input: <U+3000>" in output
    assert f"explained: {failed} failed cases as 2 cause(s)" in output
    assert "## Causes" in (tmp_path / "r.md").read_text(encoding="utf-8")
    bodies = [f.text or "" for f in ET.parse(junit).getroot().iter("failure")]
    assert all("explained by: cause" in body for body in bodies) and len(bodies) == failed


def test_a_normalizing_port_is_named_as_such(
    llama_build: Build, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    args = ["check", "--recordings", str(BUNDLED / "qwen2.yaml"), "--impl", "fake_impls:normalizes_nfc"]
    assert main([*args, "--mode", "plain", "--explain", "--details", "0"]) == 1
    (cause,) = check_runs[-1].causes
    assert cause.pattern is Pattern.NFC and len(cause.cases) == 618  # every failing case of qwen2's plain mode
    assert "NFC normalization applied" in capsys.readouterr().out


def test_without_the_reference_the_live_llama_cpp_judges_new_inputs(
    llama_build: Build, monkeypatch: pytest.MonkeyPatch, check_runs: list[CheckRun]
) -> None:
    """A vocabulary the reference cannot read (`reference_expectation` gives None) is explained with
    the recording's own llama.cpp build answering the shrunk inputs."""
    monkeypatch.setattr(explain, "reference_expectation", lambda vocab: None)
    args = ["check", "--recordings", str(BUNDLED / "qwen2.yaml"), "--impl", "fake_impls:normalizes_nfc"]
    assert main([*args, "--mode", "plain", "--case", "whitespace/u2000-en-quad-alone", "--explain"]) == 1
    (cause,) = check_runs[-1].causes
    assert cause.pattern is Pattern.NFC and cause.minimal == "\u2000".encode()
