"""`tokconf check`: it passes llama.cpp against its own recordings, and reports every kind of breakage."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import checked
import pytest
from checked import Checked
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import CaseResult
from tokconf.cli.main import main
from tokconf.core.facts import Fact
from tokconf.implementations import python
from tokconf.implementations.python import ENTRY_POINT_GROUP, PythonImplementation
from tokconf.implementations.reference import from_gguf
from tokconf.implementations.resolve import resolve
from tokconf.recording.format import load
from tokconf.reporting.report import Invocation, describe_group, group_problems

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
ADAPTER = ROOT / "tests" / "support" / "protocol1_adapter.py"
FEW = ["--case", "edge/hello-world", "--case", "edge/empty", "--case", "invalid-utf8/above-max-f4-90"]
FEW += ["--case", "edge/sentence", "--case", "vocab/chat-chatml"]


def _hello_cases() -> int:
    return sum(1 for c in load(QWEN2).cases if c.data == b"Hello world")


LAST: list[Checked] = []  # the test's last run, as its --json and --junit files say it


def _command(capsys: pytest.CaptureFixture[str], *args: str) -> Checked:
    """`tokconf check ARGS`, read back through its public outputs (`checked`)."""
    LAST[:] = [checked.check(capsys, *args)]
    return LAST[0]


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    done = _command(capsys, "--recordings", str(QWEN2), *args)
    return done.status, done.output


def _counts(section: str, vocab: str = "qwen2") -> list[int]:
    """The last run's counts for one vocab and section (its --json verdict), in `Verdict` order: passed,
    failed, error, unsupported, xfailed, xpassed."""
    return LAST[0].counts(vocab, section)


def test_llama_cpp_passes_its_own_recording(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    status, output = check(capsys, "--impl", "llama.cpp@11192")
    assert status == 0, output
    assert "\nPASS: " in output
    assert {unit["coverage"] for unit in LAST[0].verdict["units"]} == {1.0, None}  # every mode 100%; facts, decode
    cases = len(load(QWEN2).cases)
    assert _counts("plain")[0:2] == [cases, 0]


def test_one_changed_id_is_reported_with_divergence_pieces_and_repro(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = check(capsys, "--impl", "fake_impls:one_id_changed")
    assert status == 1
    hello = _hello_cases()
    for mode in ("plain", "special", "bos"):
        assert _counts(mode)[1] == hello  # failed
    assert "qwen2 [plain] edge/hello-world: failed — different ids" in output
    assert "input:       Hello·world" in output
    assert "first divergence at index 1 (expected 2 ids, got 2)" in output
    assert ">1879 '·world'" in output and ">1880 '" in output  # pieces as text, whitespace visible
    assert "reproduce:   tokconf check --impl fake_impls:one_id_changed --recordings" in output
    assert "--vocab qwen2 --mode plain --case edge/hello-world" in output


def test_a_port_that_decodes_is_shown_its_own_pieces(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    status, output = check(capsys, "--impl", "fake_impls:own_pieces", "--mode", "plain", "--case", "edge/hello-world")
    assert status == 1
    assert ">1879 '·world'" in output  # expected: llama.cpp's piece
    assert ">1880 '[iness]'" in output and "(actual pieces: the implementation's own token_to_piece)" in output


def test_a_dropped_case_and_a_missing_refusal_are_failures(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = check(capsys, "--impl", "fake_impls:one_case_dropped", *FEW)
    assert status == 1 and "first divergence at index 0 (expected 2 ids, got 0)" in output
    status, output = check(capsys, "--impl", "fake_impls:never_refuses", *FEW)
    assert status == 1
    assert "invalid-utf8/above-max-f4-90: failed — llama.cpp refused (abort: uncaught std::invalid_argument" in output
    assert "code points: \\xF4 \\x90 \\x80 \\x80" in output


def test_wrong_facts_fail(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    status, output = check(capsys, "--impl", "fake_impls:wrong_bos", "--mode", "plain")
    assert status == 1
    assert "bos: the implementation says 151644, llama.cpp says 151643" in output
    assert _counts("facts")[0:2] == [5, 1]


@pytest.mark.parametrize(
    "command",
    [
        ["check", "--impl", "reference"],
        ["identify", "--impl", "reference"],
        ["bisect", "--good", "9093", "--bad", "11192"],
        ["upgrade", "--to", "11434"],
    ],
    ids=lambda command: command[0],
)
def test_a_mistyped_vocab_beside_a_right_one_is_an_error_before_any_work(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--vocab gtp-2` beside `--vocab gpt-2` checked gpt-2 alone and passed: the mistyped vocabulary
    went unchecked in a green gate. Now every command that takes --vocab names it, before any work."""
    assert main([*command, "--vocab", "gpt-2", "--vocab", "gtp-2", "--vocab", "no-such"]) == 2
    err = capsys.readouterr().err
    assert "--vocab gtp-2 no-such: no recording of these vocabularies in" in err
    assert "'gtp-2': did you mean 'gpt-2'?" in err and "135 vocabularies have recordings there" in err


def test_unsupported_vocabs_are_counted_never_passed(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    spm = ROOT / "recordings" / "b11192" / "llama-spm.yaml"
    done = _command(capsys, "--recordings", str(spm), "--impl", "fake_impls:bpe_only", "--mode", "plain")
    cases = len(load(spm).cases)
    assert done.status == 1  # nothing passed
    assert _counts("plain", "llama-spm")[0:4] == [0, 0, 0, cases]
    [plain] = [unit for unit in done.verdict["units"] if unit["mode"] == "plain"]
    assert plain["coverage"] == 0.0  # every case in scope, none judged: the table's conformance n/a
    unsupported = {(c.vocab, c.reason) for c in done.cases if c.verdict is Verdict.UNSUPPORTED}
    assert unsupported == {("llama-spm", "only BPE vocabularies")}  # its facts too
    assert sum(c.verdict is Verdict.UNSUPPORTED for c in done.cases) == cases + len(Fact)
    output = done.output
    assert f"unsupported: {cases + len(Fact)} of llama-spm: only BPE vocabularies" in output
    assert output.rstrip().endswith(
        f"FAIL: {cases + len(Fact)} unsupported; coverage 0/0 cases in scope, 0 vocab x mode — nothing in scope: "
        "the implementation declined every vocabulary (llama-spm)"
    )


ALLOWED = ("--min-coverage", "50")  # FEW's units have 2 or 3 cases: one expected failure each, allowed explicitly


def test_expected_failures_and_an_xpass(llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xfail = tmp_path / "xfail.yaml"
    hello = [c.id for c in load(QWEN2).cases if c.data == b"Hello world"]
    entries = "".join(f"  - {{case: 'qwen2/*/{case}', reason: known, link: 'https://x/1'}}\n" for case in hello)
    xfail.write_text("expected_failures:\n" + entries)
    status, output = check(capsys, "--impl", "fake_impls:one_id_changed", "--xfail", str(xfail), *FEW)
    assert status == 1 and "below the 100% a claim needs" in output  # an expected failure is a case not passed
    assert _counts("plain")[4] == 1  # xfailed (edge/hello-world is in FEW)
    status, output = check(capsys, "--impl", "fake_impls:one_id_changed", "--xfail", str(xfail), *FEW, *ALLOWED)
    assert status == 0, output
    status, output = check(capsys, "--impl", "llama.cpp@11192", "--xfail", str(xfail), *FEW)
    assert status == 1
    assert "listed as an expected failure (known) but it passes now" in output
    assert "now:         the implementation answers as llama.cpp does" in output
    assert "first divergence" not in output  # an xpass has no divergence to show


def test_expected_failure_globs_and_entries_that_match_nothing(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xfail = tmp_path / "xfail.yaml"
    xfail.write_text(
        "expected_failures:\n"
        "  - {case: 'qwen2/*/edge/hello-*', reason: one glob for every mode}\n"
        "  - {case: 'qwen2/plain/edge/no-such-case', reason: a typo}\n"
        "  - {case: 'gpt-2/*/edge/*', reason: another vocab, not checked here}\n"
    )
    status, output = check(capsys, "--impl", "fake_impls:one_id_changed", "--xfail", str(xfail), *FEW, *ALLOWED)
    assert status == 0, output
    assert [_counts(mode)[4] for mode in ("plain", "special", "bos")] == [1, 1, 1]  # xfailed
    assert "warning: expected-failure entry 'qwen2/plain/edge/no-such-case' matched no checked case" in output
    assert "gpt-2/*/edge/*" not in output
    status, output = check(
        capsys, "--impl", "fake_impls:one_id_changed", "--xfail", str(xfail), "--strict-xfail", *FEW, *ALLOWED
    )
    assert status == 1 and "fail: expected-failure entry 'qwen2/plain/edge/no-such-case' matched no" in output


def test_a_vocab_file_with_another_hash_is_refused(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gguf = tmp_path / "ggml-vocab-qwen2.gguf"
    shutil.copy(llama_build.models_dir / gguf.name, gguf)
    with gguf.open("ab") as handle:
        handle.write(b"\0")
    status, output = check(capsys, "--impl", "llama.cpp@11192", "--vocab-dir", str(tmp_path))
    assert status == 2 and "but the recording was made from" in output


def test_junit_markdown_and_html_reports(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, md, page = tmp_path / "r.xml", tmp_path / "r.md", tmp_path / "r.html"
    junit_args = ["--junit", str(junit), "--report", str(md), "--details", "0"]
    _, output = check(capsys, "--impl", "fake_impls:one_id_changed", *FEW, *junit_args)
    assert "\nFAIL: 12 passed, 3 failed; coverage 12/15 cases in scope" in output and "1 more failing cases" in output
    check(capsys, "--impl", "fake_impls:one_id_changed", *FEW, "--report", str(page))
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "qwen2" and suite.get("failures") == "3"
    bodies = [f.text or "" for f in suite.iter("failure")]  # each failure's whole story, though none was shown
    assert len(bodies) == 3 and all("first divergence at index 1" in b and "reproduce:" in b for b in bodies)
    assert "| qwen2 | plain | 4 | 1 |" in md.read_text() and "first divergence" in md.read_text()
    assert "<table" in page.read_text() and "first divergence" in page.read_text()


@pytest.fixture
def adapter_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapter runs in its own process; it finds `fake_impls` through PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "tests" / "support"))


def _cmd(*extra: str) -> str:
    return f"cmd:{sys.executable} {ADAPTER} fake_impls:llama_cpp " + " ".join(extra)


@pytest.mark.usefixtures("adapter_path")
def test_a_protocol_1_program_passes_and_its_facts_are_unsupported(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = check(capsys, "--impl", _cmd(), "--mode", "special")
    assert status == 0, output
    assert _counts("special")[1] == 0
    assert _counts("facts")[0:4] == [0, 0, 0, len(Fact)]  # protocol 1 has no facts op: unsupported, never passed
    assert "bos is not exposed" in output


@pytest.mark.usefixtures("adapter_path")
def test_a_python_implementation_runs_in_a_worker_over_protocol_2(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker (`python -m tokconf.implementations.command_worker`) answers facts and decoding over protocol
    2: a wrong BOS id fails there as it does in process."""
    status, output = check(capsys, "--impl", "fake_impls:wrong_bos", "--timeout", "10", "--mode", "decode")
    assert status == 1
    assert "tokconf check: fake_impls:wrong_bos against" in output
    assert "bos: the implementation says 151644, llama.cpp says 151643" in output
    assert _counts("facts")[0:2] == [5, 1]
    assert _counts("decode")[0:2] == [4, 0]


@pytest.mark.usefixtures("adapter_path")
@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("crash", "the program exited with status 3; stderr: adapter: simulated crash"),
        ("hang", "no answer within 8 s"),
        ("garbage", "answered a line that is not JSON: b'this is not json'"),
        ("wrong-id", "answered for another request (wanted id"),
    ],
)
def test_a_misbehaving_program_is_an_error_and_the_run_goes_on(
    llama_build: Build, capsys: pytest.CaptureFixture[str], breakage: str, message: str
) -> None:
    # plain only: the program misbehaves in every mode alike, and each hang costs the whole timeout, which
    # leaves a restarted adapter time to load qwen2 again on a busy machine
    status, output = check(capsys, "--impl", _cmd("--break", breakage), "--timeout", "8", "--mode", "plain", *FEW)
    assert status == 1
    assert f"qwen2 [plain] edge/hello-world: error — {message}" in output
    assert _counts("plain")[0:3] == [4, 0, 1]  # the other cases passed after the restart


@pytest.mark.usefixtures("adapter_path")
def test_cmd_program_declaring_other_types_makes_the_vocab_unsupported(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = check(capsys, "--impl", _cmd("--vocab-types", "spm"), *FEW)
    assert status == 1 and "unsupported" in output
    assert _counts("plain")[0:4] == [0, 0, 0, 5]


def test_unknown_implementations_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    status, output = check(capsys, "--impl", "no_such_module:factory")
    assert status == 2 and "cannot import no_such_module" in output
    status, output = check(capsys, "--impl", "nonsense")
    assert status == 2 and "unknown implementation 'nonsense'" in output
    status, output = check(capsys, "--impl", "cmd:/no/such/program")
    assert status == 2 and "cannot start /no/such/program" in output


def _result(case: str, section: str, verdict: Verdict, data: bytes) -> CaseResult:
    return CaseResult("v", section, case, verdict, data, [1], [2], "r")  # type: ignore[arg-type]


def test_problems_are_grouped_by_case_errors_first_and_shortest_first() -> None:
    problems = [
        _result("long", "plain", Verdict.FAILED, b"a long input"),
        _result("long", "bos", Verdict.FAILED, b"a long input"),
        _result("short", "plain", Verdict.FAILED, b"ab"),
        _result("crash", "special", Verdict.ERROR, b"the longest input of all"),
        _result("short", "special", Verdict.XPASSED, b"ab"),
    ]
    groups = group_problems(problems)
    assert [[(r.case, r.section) for r in g] for g in groups] == [
        [("crash", "special")],
        [("short", "plain"), ("short", "special")],
        [("long", "plain"), ("long", "bos")],
    ]
    story = describe_group(groups[2], None, Invocation("x:y", ("r.yaml",)))
    assert story.splitlines()[0] == "v [plain] long: failed — r"
    assert story.splitlines()[-1] == "  in modes:    plain (failed), bos (failed)"


def test_exitfirst_stops_asking_after_the_first_failing_case(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = check(capsys, "--impl", "fake_impls:one_id_changed", "-x")
    assert status == 1
    failed = {c.case for c in LAST[0].cases if c.verdict is Verdict.FAILED}
    assert len(failed) == 1  # one case (in the modes asked with it)
    assert len(LAST[0].cases) < 3 * len(load(QWEN2).cases)  # the rest was never asked
    assert "stopped after 1 failing case(s) (--maxfail)" in output


@pytest.mark.parametrize(("option", "value"), [("--jobs", "-1"), ("--details", "-1"), ("--jobs", "two")])
def test_a_count_below_zero_is_a_usage_error(option: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--jobs -1` ran one process per core, as 0 does; `--details -1` showed all failing cases but one."""
    with pytest.raises(SystemExit) as exited:
        main(["check", option, value])
    assert exited.value.code == 2
    assert f"argument {option}: " in capsys.readouterr().err


RECORDINGS = ROOT / "recordings" / "b11192"
TWO_CASES = ["--recordings", str(RECORDINGS / "qwen2.yaml"), "--case", "edge/hello-world", "--case", "edge/sentence"]


def test_add_sep_is_a_compared_fact(
    port_module: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """WordPiece adds [SEP]: a port that says it does not fails the fact; the reference, right, passes it."""
    port_module("sep_ports", """
        from tokconf.implementations.reference import from_gguf

        def no_sep(path):
            port = from_gguf(path)
            port.tokenizer.add_sep = False
            return port
    """)  # fmt: skip
    bert = ["--recordings", str(RECORDINGS / "bert-bge.yaml"), "--mode", "plain"]
    done = _command(capsys, "--impl", "sep_ports:no_sep", *bert)
    assert done.status == 1
    facts = done.section("facts")
    assert facts["add_sep"].verdict is Verdict.FAILED
    assert facts["add_sep"].reason == "add_sep: the implementation says False, llama.cpp says True"
    done = _command(capsys, "--impl", "reference", *bert)
    assert done.status == 0 and done.section("facts")["add_sep"].verdict is Verdict.PASSED


def test_a_python_factory_takes_an_argument_as_a_registered_name_does(
    port_module: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """`module:factory:ARG` is `factory(ARG)`, in the worker too; ARG is the rest, colons and all."""
    port_module("arg_ports", """
        from tokconf.implementations.reference import from_gguf

        def for_file(argument):
            if argument != "C:/models/tokenizer.json":
                raise ValueError(f"no such file: {argument}")
            return from_gguf
    """)  # fmt: skip
    done = _command(capsys, "--impl", "arg_ports:for_file:C:/models/tokenizer.json", *TWO_CASES)
    assert done.status == 0 and {c.verdict for c in done.cases} == {Verdict.PASSED}
    assert main(["check", "--impl", "arg_ports:for_file:other.json", *TWO_CASES]) == 2
    err = capsys.readouterr().err
    assert "arg_ports:for_file cannot use 'other.json': ValueError: no such file: other.json" in err
    assert main(["check", "--impl", "arg_ports:for_file:", *TWO_CASES]) == 2
    assert "arg_ports:for_file needs an argument" in capsys.readouterr().err


def test_a_port_that_cannot_do_a_mode_is_pointed_to_claim(
    port_module: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """It cannot turn special parsing off: plain mode judged nothing, and the reason says which claim
    leaves plain out; with that claim the run passes."""
    port_module("always_special", """
        from tokconf import Unsupported
        from tokconf.implementations.reference import ReferencePort, from_gguf

        class AlwaysSpecial(ReferencePort):
            def encode(self, data, add_special, parse_special):
                if not parse_special:
                    raise Unsupported("special parsing cannot be turned off", input_class="other")
                return super().encode(data, add_special, parse_special)

        def load(path):
            return AlwaysSpecial(from_gguf(path).tokenizer)
    """)  # fmt: skip
    assert main(["check", "--impl", "always_special:load", *TWO_CASES]) == 1
    hint = (
        "fail: nothing judged in qwen2 plain: 2 unsupported, other (the port said: special parsing cannot be turned "
        "off); an implementation that cannot do plain at all claims the modes it does instead "
        "(--claim, pytest --tokconf-claim): qwen2/special qwen2/bos"
    )
    assert hint in capsys.readouterr().out
    assert (
        main(["check", "--impl", "always_special:load", *TWO_CASES, "--claim", "qwen2/special", "--claim", "qwen2/bos"])
        == 0
    )


def test_an_entry_point_named_reference_cannot_stand_in_for_tokconfs(monkeypatch: pytest.MonkeyPatch) -> None:
    hijack = importlib.metadata.EntryPoint("reference", "os:getcwd", ENTRY_POINT_GROUP)
    monkeypatch.setattr(python, "_entry_points", lambda: {"reference": hijack})
    assert python.resolve_python("reference").factory is os.getcwd  # what a lookup by name would take
    impl = resolve("reference")
    assert isinstance(impl, PythonImplementation) and impl.factory is from_gguf


def test_an_expected_failure_of_a_vocabulary_nothing_was_judged_in_is_not_stale(
    tmp_path: Path, sandbox: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--case` asks for a case model-rwkv does not hold: nothing of it is judged, so its expected
    failure matched nothing for want of a chance, not by a typo; `--strict-xfail` does not fail the run.
    The CLI once called it stale (every recording read counted as checked) while pytest did not; the
    session decides for both."""
    xfail = tmp_path / "xf.yaml"
    xfail.write_text('expected_failures:\n  - {case: "model-rwkv/*/vocab/0-2spaces-after", reason: rwkv}\n')
    synthetic = RECORDINGS / "synthetic"
    given = [
        arg for name in ("model-plamo2", "model-rwkv") for arg in ("--recordings", str(synthetic / f"{name}.yaml"))
    ]
    case = ["--case", "vocab/1-2-adjacent", "--xfail", str(xfail), "--strict-xfail"]
    assert main(["check", "--impl", "reference", *given, *case]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("PASS: 3 passed")
    plugin = [f"--tokconf-recordings={synthetic / f'{name}.yaml'}" for name in ("model-plamo2", "model-rwkv")]
    result = sandbox.runpytest(*plugin, "--tokconf-impl", "reference", "--tokconf-case", "vocab/1-2-adjacent",
                               f"--tokconf-xfail={xfail}", "--tokconf-strict-xfail")  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["PASS: 3 passed*"])
