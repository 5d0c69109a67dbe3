"""The Java adapter under examples/java is gated by tokconf as a port's CI would gate it: built with
`javac` alone, it passes every case, fact and decoding check of the bundled gpt-2 recording, each
planted bug is caught (and the whitespace one named), and it declines the vocabularies it does not
serve as unsupported."""

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
JAVA_ADAPTER = ROOT / "examples" / "java"
GPT2 = ROOT / "recordings" / "b11192" / "gpt-2.yaml"
# C1 only: a check is too short for the JVM's optimizing compiler to earn back its compile time.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["check", "--recordings", str(GPT2), *args])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _verdicts(run: CheckRun, section: str) -> dict[Verdict, int]:
    return {v: n for v, n in run.summary.counts[("gpt-2", section)].items() if n}  # type: ignore[index]


@pytest.fixture(scope="module")
def java_adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    """examples/java built as its author would build it (`javac`, the JDK only, no network), as the
    `cmd:` implementation that runs it."""
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, (
        "javac is needed for the Java example: bash setup.sh installs it (apt-get install default-jdk-headless)"
    )
    classes = tmp_path_factory.mktemp("java")
    sources = sorted(str(source) for source in JAVA_ADAPTER.glob("*.java"))
    subprocess.run([javac, "-d", str(classes), *sources], check=True, capture_output=True)
    return f"cmd:{java} {JAVA_OPTIONS} -cp {classes} Gpt2Adapter"


def test_the_java_adapter_passes_every_gpt2_case_fact_and_decoding(
    llama_build: Build, java_adapter: str, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    status, output = _check(capsys, "--impl", java_adapter)
    assert status == 0, output
    run = check_runs[-1]
    assert run.impl_name == "gpt2-java-example (cmd)"
    for mode in ("plain", "special", "bos"):
        assert _verdicts(run, mode) == {Verdict.PASSED: len(load(GPT2).cases)}
    assert _verdicts(run, "facts") == {Verdict.PASSED: 5}  # over protocol 2's facts op
    assert _verdicts(run, "decode") == {Verdict.PASSED: 4}  # token_to_piece and detokenize


def test_a_planted_whitespace_bug_in_the_java_adapter_is_one_cause(
    llama_build: Build, java_adapter: str, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """U+0085 not whitespace (Java's `Character.isWhitespace`): the cases with a NEL fail, nothing
    else, and `--explain` makes them one cause, U+0085."""
    impl = f"{java_adapter} --plant-bug nel-not-space"
    status, _ = _check(capsys, "--impl", impl, "--mode", "plain", "--explain")
    assert status == 1
    run = check_runs[-1]
    failed = [r for r in run.results if r.verdict is Verdict.FAILED]
    assert len(failed) == 8 and all("\x85".encode() in r.data for r in failed)
    assert _verdicts(run, "plain") == {Verdict.PASSED: len(load(GPT2).cases) - 8, Verdict.FAILED: 8}
    (cause,) = run.causes
    assert cause.kind is Kind.WHITESPACE_CLASS and "does not treat U+0085 (NEXT LINE)" in cause.label
    assert len(cause.cases) == 8


def test_a_planted_decoding_bug_in_the_java_adapter_fails_the_gate(
    llama_build: Build, java_adapter: str, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """detokenize without llama.cpp's clean_spaces passes (" ," stays " ,"): the pieces are right,
    both detokenize settings are wrong, and the ids and facts are untouched."""
    impl = f"{java_adapter} --plant-bug no-clean-spaces"
    status, _ = _check(capsys, "--impl", impl, "--mode", "plain", "--mode", "decode")
    assert status == 1
    run = check_runs[-1]
    decoding = {r.case: r.verdict for r in run.results if r.section == "decode"}
    assert decoding == {
        "pieces-special": Verdict.PASSED,
        "pieces-plain": Verdict.PASSED,
        "remove-special": Verdict.FAILED,
        "unparse-special": Verdict.FAILED,
    }
    assert all(" differ" in r.reason for r in run.results if r.section == "decode" and r.verdict is Verdict.FAILED)
    assert _verdicts(run, "plain") == {Verdict.PASSED: len(load(GPT2).cases)}
    assert _verdicts(run, "facts") == {Verdict.PASSED: 5}


def test_the_java_adapter_declines_other_vocabularies_as_unsupported(
    llama_build: Build, java_adapter: str, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    qwen2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
    status = main(["check", "--recordings", str(qwen2), "--impl", java_adapter, "--mode", "plain"])
    assert status == 1  # nothing passed: unsupported is never a pass
    counts = check_runs[-1].summary.counts[("qwen2", "plain")]  # type: ignore[index]
    assert counts[Verdict.UNSUPPORTED] > 0 and counts[Verdict.PASSED] == 0
    reasons = [reason for counter in check_runs[-1].summary.unsupported_reasons.values() for reason in counter]
    assert any("only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: gpt2, qwen2)" in r for r in reasons)
