"""The adapters under examples/ (JavaScript, Go, Java, Rust) are gated by tokconf as a port's CI would
gate them: each is built as its author would build it, passes every case, fact and decoding check of
the bundled gpt-2 recording, declines the vocabularies it does not serve as unsupported, and each
planted bug is caught (the whitespace one named as one cause)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import checked
import pytest
from builds import EXAMPLES, ROOT, build_go, build_java, build_rust, cargo, once, tool
from checked import Checked
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.checking.explain import Kind
from tokconf.recording.format import load

GPT2 = ROOT / "recordings" / "b11192" / "gpt-2.yaml"
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
# C1 only: a check is too short for the JVM's optimizing compiler to earn back its compile time.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="module")
def node_adapter() -> str:
    return f"cmd:{tool('node', 'nodejs')} {EXAMPLES / 'node' / 'adapter.mjs'}"


@pytest.fixture(scope="module")
def go_adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"cmd:{once(tmp_path_factory, 'go', build_go) / 'tokconf-go-adapter'}"


@pytest.fixture(scope="module")
def java_adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    classes = once(tmp_path_factory, "java", build_java) / "out"
    return f"cmd:{tool('java', 'default-jdk-headless')} {JAVA_OPTIONS} -cp {classes} Gpt2Adapter"


@pytest.fixture(scope="module")
def rust_adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    binary = once(tmp_path_factory, "rust", build_rust) / "target" / "release" / "tokconf-rust-adapter"
    assert binary.is_file()
    return f"cmd:{binary}"


LANGUAGES = ("node", "go", "java", "rust")


@pytest.fixture(params=LANGUAGES)
def adapter(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(language, the `cmd:` implementation that runs its adapter)."""
    return request.param, request.getfixturevalue(f"{request.param}_adapter")


def _check(capsys: pytest.CaptureFixture[str], *args: str, recording: Path = GPT2) -> Checked:
    return checked.check(capsys, "--recordings", str(recording), *args)


def test_each_adapter_passes_every_gpt2_case_fact_and_decoding(
    llama_build: Build, adapter: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    language, impl = adapter
    done = _check(capsys, "--impl", impl)
    assert done.status == 0, done.output
    assert done.verdict is not None and done.verdict["implementation"] == f"gpt2-{language}-example (cmd)"
    for mode in ("plain", "special", "bos"):
        assert done.unit("gpt-2", mode) == {Verdict.PASSED: len(load(GPT2).cases)}
    assert done.unit("gpt-2", "facts") == {Verdict.PASSED: 6}  # over protocol 2's facts op
    assert done.unit("gpt-2", "decode") == {Verdict.PASSED: 4}  # token_to_piece and detokenize, both ways


def test_a_planted_whitespace_bug_in_each_adapter_is_one_cause(
    llama_build: Build, adapter: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """U+0085 not whitespace (JavaScript's `\\s`, Java's `Character.isWhitespace`): the cases with a
    NEL fail, nothing else, and `--explain` (asking the program again over the protocol) makes them
    one cause, U+0085."""
    _, impl = adapter
    done = _check(capsys, "--impl", f"{impl} --plant-bug nel-not-space", "--mode", "plain", "--explain")
    assert done.status == 1
    data = {case.id: case.data for case in load(GPT2).cases}
    failed = [c for c in done.cases if c.verdict is Verdict.FAILED]
    assert len(failed) == 8 and all("\x85".encode() in data[c.case] for c in failed)
    assert done.unit("gpt-2", "plain") == {Verdict.PASSED: len(load(GPT2).cases) - 8, Verdict.FAILED: 8}
    assert "gpt-2 [plain] whitespace/u0085-nel-space-mix: failed — different ids" in done.output
    (cause,) = done.causes
    assert cause["kind"] == Kind.WHITESPACE_CLASS.value and "does not treat U+0085 (NEXT LINE)" in cause["label"]
    assert len(cause["cases"]) == 8


def test_each_adapter_declines_other_vocabularies_as_unsupported(
    llama_build: Build, adapter: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    done = _check(capsys, "--impl", adapter[1], "--mode", "plain", recording=QWEN2)
    assert done.status == 1  # nothing passed: unsupported is never a pass
    assert done.unit("qwen2", "plain") == {Verdict.UNSUPPORTED: len(load(QWEN2).cases)}
    reasons = {c.reason for c in done.cases if c.verdict is Verdict.UNSUPPORTED}
    assert any("only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: gpt2, qwen2)" in r for r in reasons)


@pytest.mark.parametrize("language", ["node", "rust"])
def test_a_planted_fact_bug_fails_the_gate(
    llama_build: Build, language: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    impl = request.getfixturevalue(f"{language}_adapter")
    done = _check(capsys, "--impl", f"{impl} --plant-bug eos-plus-one", "--mode", "decode")
    assert done.status == 1
    (wrong,) = [c for c in done.cases if c.verdict is not Verdict.PASSED]
    assert (wrong.section, wrong.case, wrong.verdict) == ("facts", "eos", Verdict.FAILED)
    assert "eos: the implementation says 50257, llama.cpp says 50256" in done.output
    assert done.unit("gpt-2", "facts") == {Verdict.PASSED: 5, Verdict.FAILED: 1}
    assert done.unit("gpt-2", "decode") == {Verdict.PASSED: 4}


@pytest.mark.parametrize("language", ["java", "rust"])
def test_a_planted_decoding_bug_fails_only_detokenize(
    llama_build: Build, language: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """detokenize without llama.cpp's clean-up of spaces (" ," stays " ,"): both detokenize settings
    fail, the pieces, the ids and the facts still pass."""
    impl = request.getfixturevalue(f"{language}_adapter")
    done = _check(capsys, "--impl", f"{impl} --plant-bug no-clean-spaces", "--mode", "plain", "--mode", "decode")
    assert done.status == 1
    assert {c.case: c.verdict for c in done.cases if c.section == "decode"} == {
        "pieces-special": Verdict.PASSED,
        "pieces-plain": Verdict.PASSED,
        "remove-special": Verdict.FAILED,
        "unparse-special": Verdict.FAILED,
    }
    assert all(" differ" in c.reason for c in done.cases if c.section == "decode" and c.verdict is Verdict.FAILED)
    assert done.unit("gpt-2", "plain") == {Verdict.PASSED: len(load(GPT2).cases)}
    assert done.unit("gpt-2", "facts") == {Verdict.PASSED: 6}


def test_the_rust_unicode_tables_are_generated_from_llama_cpps_data() -> None:
    """unicode_ranges.txt (the data build.rs makes the crate's unicode tables of) is what gen_tables.py
    makes of the reference's copy of unicode-data.cpp."""
    script = EXAMPLES / "rust" / "gen_tables.py"
    checked = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert checked.returncode == 0, f"{checked.stdout}{checked.stderr}: run `python {script.relative_to(ROOT)}`"


def test_the_rust_adapters_own_tests_pass(tmp_path_factory: pytest.TempPathFactory) -> None:
    """examples/rust's unit tests (its JSON reader, base64, the vocabulary), in the adapter's build folder."""
    tested = cargo(once(tmp_path_factory, "rust", build_rust), "test")
    assert tested.returncode == 0, f"cargo test failed:\n{tested.stdout}{tested.stderr}"
    assert "test result: ok" in tested.stdout
