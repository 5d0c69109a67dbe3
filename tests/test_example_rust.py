"""The Rust adapter under examples/rust is gated by tokconf as a port's CI would gate it: built with
Debian's cargo (no crates, no network), it passes every case, fact and decoding check of the bundled
gpt-2 recording, each planted bug is caught and named, and another vocabulary is declined."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tokconf.checking.contract import Verdict
from tokconf.checking.explain import Kind
from tokconf.checking.run import CheckRun
from tokconf.cli.main import main
from tokconf.llama.build import Build
from tokconf.recordings.format import load

ROOT = Path(__file__).resolve().parent.parent
RUST_ADAPTER = ROOT / "examples" / "rust"
GPT2 = ROOT / "recordings" / "b11192" / "gpt-2.yaml"
DEBIAN_CARGO = Path("/usr/bin/cargo")  # CI's toolchain (rustc 1.63): the port must build with it


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["check", "--recordings", str(GPT2), *args])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _verdicts(run: CheckRun, section: str) -> dict[Verdict, int]:
    return {v: n for v, n in run.summary.counts[("gpt-2", section)].items() if n}  # type: ignore[index]


@pytest.fixture(scope="module")
def rust_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/rust built as its author would build it: `cargo build --release`, offline (it has no
    dependencies), into a target folder of its own so the source tree stays clean."""
    cargo = str(DEBIAN_CARGO) if DEBIAN_CARGO.exists() else shutil.which("cargo")
    assert cargo, "cargo is needed for the Rust example: bash setup.sh installs it (apt-get install cargo)"
    env = dict(os.environ, CARGO_TARGET_DIR=str(tmp_path_factory.mktemp("rust-target")))
    rustc = Path(cargo).with_name("rustc")
    if rustc.exists():  # the rustc beside this cargo, not whichever comes first on PATH (rustup's)
        env["RUSTC"] = str(rustc)
    built = subprocess.run(
        [cargo, "build", "--release", "--offline"], cwd=RUST_ADAPTER, env=env, capture_output=True, text=True
    )
    assert built.returncode == 0, f"cargo build failed:\n{built.stderr}"
    binary = Path(env["CARGO_TARGET_DIR"]) / "release" / "tokconf-rust-adapter"
    assert binary.is_file(), built.stderr
    return binary


def test_the_rust_adapter_passes_every_gpt2_case_fact_and_decoding(
    llama_build: Build, rust_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    status, output = _check(capsys, "--impl", f"cmd:{rust_adapter}")
    assert status == 0, output
    run = check_runs[-1]
    assert run.impl_name == "gpt2-rust-example (cmd)"
    cases = len(load(GPT2).cases)
    for mode in ("plain", "special", "bos"):
        assert _verdicts(run, mode) == {Verdict.PASSED: cases}
    assert _verdicts(run, "facts") == {Verdict.PASSED: 5}  # over protocol 2's facts op
    assert _verdicts(run, "decode") == {Verdict.PASSED: 4}  # token_to_piece and detokenize, both ways


def test_a_planted_whitespace_bug_in_the_rust_adapter_is_one_cause(
    llama_build: Build, rust_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """U+0085 not whitespace: the cases with a NEL fail, nothing else, and `--explain` (asking the
    program again over the protocol) makes them one cause, U+0085."""
    impl = f"cmd:{rust_adapter} --plant-bug nel-not-space"
    status, _ = _check(capsys, "--impl", impl, "--mode", "plain", "--explain")
    assert status == 1
    run = check_runs[-1]
    failed = [r for r in run.results if r.verdict is Verdict.FAILED]
    assert len(failed) == 8 and all("\x85".encode() in r.data for r in failed)
    assert _verdicts(run, "plain") == {Verdict.PASSED: len(load(GPT2).cases) - 8, Verdict.FAILED: 8}
    (cause,) = run.causes
    assert cause.kind is Kind.WHITESPACE_CLASS and "does not treat U+0085 (NEXT LINE)" in cause.label
    assert len(cause.cases) == 8


def test_a_planted_decoding_bug_in_the_rust_adapter_fails_only_detokenize(
    llama_build: Build, rust_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """detokenize without llama.cpp's clean-up passes (" ," stays " ,"): both detokenize settings
    fail, the pieces and the facts still pass."""
    status, _ = _check(capsys, "--impl", f"cmd:{rust_adapter} --plant-bug no-clean-spaces", "--mode", "decode")
    assert status == 1
    run = check_runs[-1]
    verdicts = {r.case: r.verdict for r in run.results if r.section == "decode"}
    assert verdicts == {
        "pieces-special": Verdict.PASSED,
        "pieces-plain": Verdict.PASSED,
        "remove-special": Verdict.FAILED,
        "unparse-special": Verdict.FAILED,
    }
    assert _verdicts(run, "facts") == {Verdict.PASSED: 5}


def test_a_planted_fact_bug_in_the_rust_adapter_fails_the_gate(
    llama_build: Build, rust_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    status, _ = _check(capsys, "--impl", f"cmd:{rust_adapter} --plant-bug eos-plus-one", "--mode", "decode")
    assert status == 1
    run = check_runs[-1]
    (wrong,) = [r for r in run.results if r.verdict is not Verdict.PASSED]
    assert (wrong.section, wrong.case, wrong.verdict) == ("facts", "eos", Verdict.FAILED)
    assert "the implementation says 50257, llama.cpp says 50256" in wrong.reason
    assert _verdicts(run, "decode") == {Verdict.PASSED: 4}


def test_the_rust_adapter_declines_other_vocabularies_as_unsupported(
    llama_build: Build, rust_adapter: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    qwen2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
    status = main(["check", "--recordings", str(qwen2), "--impl", f"cmd:{rust_adapter}", "--mode", "plain"])
    capsys.readouterr()
    assert status == 1  # nothing passed: unsupported is never a pass
    counts = check_runs[-1].summary.counts[("qwen2", "plain")]  # type: ignore[index]
    assert counts[Verdict.UNSUPPORTED] == len(load(qwen2).cases) and counts[Verdict.PASSED] == 0
    reasons = [reason for counter in check_runs[-1].summary.unsupported_reasons.values() for reason in counter]
    assert any("only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: gpt2, qwen2)" in r for r in reasons)


def test_the_rust_unicode_tables_are_generated_from_llama_cpps_data() -> None:
    """src/unicode_tables.rs is what gen_tables.py makes of the reference's copy of unicode-data.cpp."""
    script = RUST_ADAPTER / "gen_tables.py"
    checked = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert checked.returncode == 0, f"{checked.stdout}{checked.stderr}: run `python {script.relative_to(ROOT)}`"
