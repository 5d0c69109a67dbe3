"""The adapters under examples/ (JavaScript, Go) are gated by tokconf as a port's CI would gate them:
each passes the bundled recordings of what it supports, and each planted bug is caught and named."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tokconf.checking.contract import Verdict
from tokconf.checking.explain import Kind
from tokconf.checking.run import CheckRun
from tokconf.cli.main import main
from tokconf.llama.build import Build
from tokconf.recordings.format import load

ROOT = Path(__file__).resolve().parent.parent
NODE_ADAPTER = ROOT / "examples" / "node" / "adapter.mjs"
GO_ADAPTER = ROOT / "examples" / "go"
GPT2 = ROOT / "recordings" / "b11192" / "gpt-2.yaml"


def _node() -> str:
    node = shutil.which("node")
    assert node, "node is needed for the JavaScript example: bash setup.sh installs it (apt-get install nodejs)"
    return node


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["check", "--recordings", str(GPT2), *args])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _verdicts(run: CheckRun, section: str) -> dict[Verdict, int]:
    return {v: n for v, n in run.summary.counts[("gpt-2", section)].items() if n}  # type: ignore[index]


def test_the_node_adapter_passes_every_gpt2_case_fact_and_decoding(
    llama_build: Build, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    status, output = _check(capsys, "--impl", f"cmd:{_node()} {NODE_ADAPTER}")
    assert status == 0, output
    run = check_runs[-1]
    assert run.impl_name == "gpt2-node-example (cmd)"
    cases = len(load(GPT2).cases)
    for mode in ("plain", "special", "bos"):
        assert _verdicts(run, mode) == {Verdict.PASSED: cases}
    assert _verdicts(run, "facts") == {Verdict.PASSED: 5}  # over protocol 2's facts op
    assert _verdicts(run, "decode") == {Verdict.PASSED: 4}  # token_to_piece and detokenize


def test_a_planted_whitespace_bug_in_the_node_adapter_fails_the_gate(
    llama_build: Build, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """U+0085 not whitespace (JavaScript's `\\s`): the cases with a NEL fail, nothing else, and
    `--explain` (asking the program again over the protocol) makes them one cause, U+0085."""
    impl = f"cmd:{_node()} {NODE_ADAPTER} --plant-bug nel-not-space"
    status, output = _check(capsys, "--impl", impl, "--mode", "plain", "--explain")
    assert status == 1
    failed = [r for r in check_runs[-1].results if r.verdict is Verdict.FAILED]
    assert len(failed) == 8 and all("\x85".encode() in r.data for r in failed)
    assert "gpt-2 [plain] whitespace/u0085-nel-space-mix: failed — different ids" in output
    (cause,) = check_runs[-1].causes
    assert cause.kind is Kind.WHITESPACE_CLASS and "does not treat U+0085 (NEXT LINE)" in cause.label
    assert len(cause.cases) == 8


def test_a_planted_fact_bug_in_the_node_adapter_fails_the_gate(
    llama_build: Build, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    impl = f"cmd:{_node()} {NODE_ADAPTER} --plant-bug eos-plus-one"
    status, output = _check(capsys, "--impl", impl, "--mode", "decode")
    assert status == 1
    assert _verdicts(check_runs[-1], "facts") == {Verdict.PASSED: 4, Verdict.FAILED: 1}
    assert "eos: the implementation says 50257, llama.cpp says 50256" in output


def test_the_node_adapter_declines_other_vocabularies_as_unsupported(
    llama_build: Build, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    qwen2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
    status = main(["check", "--recordings", str(qwen2), "--impl", f"cmd:{_node()} {NODE_ADAPTER}", "--mode", "plain"])
    assert status == 1  # nothing passed: unsupported is never a pass
    counts = check_runs[-1].summary.counts[("qwen2", "plain")]  # type: ignore[index]
    assert counts[Verdict.UNSUPPORTED] > 0 and counts[Verdict.PASSED] == 0
    reasons = [reason for counter in check_runs[-1].summary.unsupported_reasons.values() for reason in counter]
    assert any("only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: gpt2, qwen2)" in r for r in reasons)


@pytest.fixture(scope="module")
def go_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/go built as its author would build it (standard library only, no network)."""
    go = shutil.which("go")
    assert go, "go is needed for the Go example: bash setup.sh installs it (apt-get install golang-go)"
    binary = tmp_path_factory.mktemp("go") / "tokconf-go-adapter"
    subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO_ADAPTER, check=True, capture_output=True)
    return binary


def test_the_go_adapter_passes_every_gpt2_case_fact_and_decoding(
    llama_build: Build, go_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    status, output = _check(capsys, "--impl", f"cmd:{go_adapter}")
    assert status == 0, output
    run = check_runs[-1]
    assert run.impl_name == "gpt2-go-example (cmd)"
    for mode in ("plain", "special", "bos"):
        assert _verdicts(run, mode) == {Verdict.PASSED: len(load(GPT2).cases)}
    assert _verdicts(run, "facts") == {Verdict.PASSED: 5}
    assert _verdicts(run, "decode") == {Verdict.PASSED: 4}


def test_a_planted_whitespace_bug_in_the_go_adapter_is_one_cause(
    llama_build: Build, go_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    status, _ = _check(capsys, "--impl", f"cmd:{go_adapter} --plant-bug nel-not-space", "--mode", "plain", "--explain")
    assert status == 1
    failed = [r for r in check_runs[-1].results if r.verdict is Verdict.FAILED]
    assert len(failed) == 8 and all("\x85".encode() in r.data for r in failed)
    (cause,) = check_runs[-1].causes
    assert cause.kind is Kind.WHITESPACE_CLASS and "does not treat U+0085 (NEXT LINE)" in cause.label
    assert len(cause.cases) == 8
