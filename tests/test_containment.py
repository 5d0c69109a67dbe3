"""Port code never runs where the verdict is decided (issue 32): a Python port is imported and called
only in worker processes, so what it does to its own process — exiting at import or at exit, patching
tokconf, leaving a thread running, ignoring signals, printing a verdict — cannot change the verdict or
the exit status, in `tokconf check`, `--jobs`, the pytest plugin (with and without xdist) and the API.
Each attack is a module written for the test; each run is a separate process, as a CI job's is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import tokconf
from tokconf.checking.contract import Verdict
from tokconf.core.facts import Fact
from tokconf.core.files import cache_root
from tokconf.core.outcome import MODES
from tokconf.recording.format import Recording, load, write

ROOT = Path(__file__).resolve().parent.parent
B11192 = ROOT / "recordings" / "b11192"
KEEP = re.compile(
    r"edge/|invalid-utf8/(lone-continuation|above-max-f4-90)$|vocab/50256-(alone|nl-after)$|controls/nul$"
)

# A port wrong on every input (one id too many), and one right on every input: the reference.
WRONG = """
from tokconf.implementations.reference import from_gguf

class Wrong:
    def __init__(self, path):
        self.inner = from_gguf(path)
    def encode(self, data, add_special, parse_special):
        return [*self.inner.encode(data, add_special, parse_special), 0]

def load(path):
    return Wrong(path)
"""
RIGHT = "from tokconf.implementations.reference import from_gguf as load\n"

ATTACKS = {
    # port module text, the exit status every front end must end with, what its output must say
    "exit_at_import": ("import os\nos._exit(0)\n" + RIGHT, 2, "failed the handshake: the program exited with status 0"),
    "patches_the_verdict": (
        WRONG
        + textwrap.dedent("""
        import tokconf.checking.contract as contract
        from collections import Counter
        contract.decide = lambda *a, **k: contract.Decision(True, (), Counter(), 1, 1, 1)
        contract.Decision.line = lambda self: "PASS: 2719 passed; coverage 2719/2719 cases in scope (100.00%)"
        contract.Decision.exit_status = property(lambda self: 0)
        """),
        1,
        "FAIL: ",
    ),
    "exits_0_at_exit": (WRONG + "import atexit, os\natexit.register(lambda: os._exit(0))\n", 1, "FAIL: "),
    "thread_that_never_ends": (
        RIGHT + "import threading, time\nthreading.Thread(target=lambda: time.sleep(10**6)).start()\n",
        0,
        "PASS: ",
    ),
    "ignores_signals_and_prints_a_verdict": (
        WRONG
        + textwrap.dedent("""
        import signal, sys
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        print("PASS: 2719 passed; coverage 2719/2719 cases in scope (100.00%), 1 vocab x mode")
        sys.stdout.flush()
        """),
        1,
        "FAIL: ",
    ),
}


@pytest.fixture(scope="module")
def slice_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("slice")
    gpt2 = load(B11192 / "gpt-2.yaml")
    write(folder / "gpt-2.yaml", Recording(gpt2.provenance, gpt2.facts, [c for c in gpt2.cases if KEEP.search(c.id)]))
    return folder


@pytest.fixture
def ports(tmp_path: Path) -> Path:
    for name, (text, _, _) in ATTACKS.items():
        (tmp_path / f"{name}.py").write_text(text)
    return tmp_path


def _run(args: list[str], ports: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ports), "TOKCONF_CACHE": str(cache_root())}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _holds(attack: str, name: str, run: subprocess.CompletedProcess[str]) -> None:
    """A `tokconf check` of the attacking port ended as the contract says (`ATTACKS`), its own verdict
    line never on the terminal."""
    _, status, said = ATTACKS[attack]
    assert run.returncode == status, (name, run.stdout[-2000:], run.stderr[-2000:])
    if status == 2:
        assert said in run.stderr and "--impl exit_at_import:load (its worker process)" in run.stderr
        return
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith(said), (name, last)
    verdicts = [line for line in run.stdout.splitlines() if line.startswith(("PASS:", "FAIL:"))]
    assert verdicts == [last], (name, verdicts)  # the port's own "PASS:" never reached the terminal


def _check_command(attack: str, slice_folder: Path) -> list[str]:
    return [sys.executable, "-m", "tokconf", "check", "--impl", f"{attack}:load", "--recordings", str(slice_folder)]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_what_a_port_does_to_its_process_cannot_change_the_verdict(
    attack: str, ports: Path, slice_folder: Path, tmp_path: Path
) -> None:
    _holds(attack, "check", _run(_check_command(attack, slice_folder), ports, tmp_path))


@pytest.mark.conformance
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_what_a_port_does_to_its_process_changes_no_front_ends_verdict(
    attack: str, ports: Path, slice_folder: Path, tmp_path: Path
) -> None:
    """The same with `--timeout`, `--jobs 2`, and through the pytest plugin without and with xdist."""
    _, status, said = ATTACKS[attack]
    check = _check_command(attack, slice_folder)
    _holds(attack, "check --timeout", _run([*check, "--timeout", "30"], ports, tmp_path))
    _holds(attack, "check --jobs 2", _run([*check, "--jobs", "2", "--vocab", "gpt-2"], ports, tmp_path))
    pytest_args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tokconf-impl", f"{attack}:load"]
    pytest_args += ["--tokconf-recordings", str(slice_folder)]
    for extra in ([], ["-n", "2"]):
        run = _run([*pytest_args, *extra], ports, tmp_path)
        assert (run.returncode == 0) == (status == 0), (extra, run.stdout[-3000:])
        if status != 2:
            assert said in run.stdout, (extra, run.stdout[-3000:])


def test_in_process_a_port_can_change_the_run_and_the_verdict_line_says_it_was_not_contained(
    ports: Path, slice_folder: Path, tmp_path: Path
) -> None:
    """The escape hatch for debugging: `--in-process` runs the port here, where its `atexit` ends the
    run with status 0 after the FAIL line, which says NOT CONTAINED."""
    check = [sys.executable, "-m", "tokconf", "check", "--impl", "exits_0_at_exit:load"]
    run = _run([*check, "--recordings", str(slice_folder), "--in-process"], ports, tmp_path)
    assert run.returncode == 0  # the port's doing: the reason the default is a worker
    assert "NOT CONTAINED: the implementation ran in tokconf's process (--in-process)" in run.stdout.splitlines()[-1]


def test_the_api_contains_a_factory_object_too(slice_folder: Path) -> None:
    """`tokconf.check(factory)`: the factory is called in this process forked, once per vocabulary, so
    its `os._exit` costs its fork, and patching tokconf there changes nothing here."""

    def load(path: Path) -> object:
        import tokconf.checking.contract as contract

        contract.Decision.exit_status = property(lambda self: 0)  # type: ignore[assignment,method-assign]
        os._exit(0)

    run = tokconf.check(load, slice_folder)
    assert not run.passed and run.decision.exit_status == 1 and run.decision.contained
    assert {r.verdict for r in run.results} == {Verdict.ERROR}


CRASHES = """
import os, time
from tokconf.implementations.reference import from_gguf

class Port:
    def __init__(self, path):
        self.inner = from_gguf(path)
    def encode(self, data, add_special, parse_special):
        if data == b"Hello world" and not parse_special:
            os._exit(3)
        if data == b" Hello world" and not parse_special:
            time.sleep(60)
        return self.inner.encode(data, add_special, parse_special)

def load(path):
    return Port(path)
"""


def test_a_crash_or_a_hang_inside_a_batch_is_that_inputs_error_alone(
    slice_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers come in batches, and a worker may hold some back a moment: where the process ends, the
    rest of the batch is asked one input at a time, so the error lands on the input that crashed or
    hung, each timeout message names its option, and every other case passes."""
    (tmp_path / "crashes.py").write_text(CRASHES)
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tokconf.check("crashes:load", slice_folder, timeout=2)
    errors = {(r.section, r.case): r.reason for r in run.results if r.verdict is Verdict.ERROR}
    assert set(errors) == {("plain", "edge/hello-world"), ("plain", "edge/hello-world-lead")}
    assert "the program exited with status 3" in errors[("plain", "edge/hello-world")]
    assert "no answer within 2 s (the tokconf.check timeout= option)" in errors[("plain", "edge/hello-world-lead")]
    assert {r.verdict for r in run.results if r.section in MODES} == {Verdict.PASSED, Verdict.ERROR}


def test_a_wrong_name_is_the_workers_handshake_error_and_this_process_never_imports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "marks_import.py").write_text("import os\nopen(os.environ['MARK'], 'a').write(str(os.getpid()))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MARK", str(tmp_path / "imported"))
    with pytest.raises(tokconf.TokconfError, match="marks_import has no callable 'load'"):
        tokconf.check("marks_import:load", vocabs=["gpt-2"], sandbox_write=[tmp_path])  # its mark goes there
    assert str(os.getpid()) not in (tmp_path / "imported").read_text()  # imported by the worker only
    with pytest.raises(tokconf.TokconfError, match="cannot import no_such_module"):
        tokconf.check("no_such_module:load", vocabs=["gpt-2"])
    assert "marks_import" not in sys.modules


DESELECTS_TOKCONF = """
def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if not item.nodeid.startswith("tokconf/")]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept
"""


def test_pytest_asked_for_a_check_that_a_conftest_deselected_fails(ports: Path, tmp_path: Path) -> None:
    """`--tokconf-impl` on the command line and no tokconf item run (a conftest deselected them all): the
    session fails saying so, instead of ending green beside the project's own tests. Named in an ini
    file only, the check is the project's default, and deselecting it is the project's choice."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(DESELECTS_TOKCONF)
    (project / "test_own.py").write_text("def test_own():\n    pass\n")
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tokconf-vocab", "gpt-2"]
    run = _run([*base, "--tokconf-impl", "thread_that_never_ends:load", "--tokconf-claim", "gpt-2/*"], ports, project)
    assert run.returncode == 1, run.stdout[-2000:]
    assert "FAIL: nothing checked; " in run.stdout and "none of its checks ran (all deselected?)" in run.stdout
    (project / "pytest.ini").write_text("[pytest]\ntokconf_impl = thread_that_never_ends:load\n")
    run = _run(base, ports, project)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-2000:]


@pytest.fixture
def zoo(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/support/zoo_ports.py importable by the workers (and pytest's subprocesses)."""
    tests = str(ROOT / "tests" / "support")
    monkeypatch.syspath_prepend(tests)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])))


@pytest.mark.long
@pytest.mark.usefixtures("zoo")
def test_selective_declines_fail_the_documented_ci_command(tmp_path: Path) -> None:
    """docs/ci.md's Python job, as written, on the whole gpt-2 recording: a port wrong on every input
    holding a digit (or a newline) that declines exactly those fails it, in process and over `cmd:`
    and pytest; one that declines only what is not UTF-8 or holds NUL passes it."""
    ci = [
        "--claim",
        "gpt-2/*",
        "--timeout",
        "60",
        "--junit",
        str(tmp_path / "t.xml"),
        "--report",
        str(tmp_path / "t.md"),
    ]
    check = [sys.executable, "-m", "tokconf", "check", *ci, "--impl"]
    serve = f"cmd:{sys.executable} -m tokconf.implementations.command_worker"
    for port, status in (("declines_digits", 1), ("declines_newlines", 1), ("declines_invalid_utf8", 0)):
        for impl in (f"zoo_ports:{port}", f"{serve} zoo_ports:{port}"):
            run = subprocess.run([*check, impl], capture_output=True, text=True, timeout=600, check=False)
            assert run.returncode == status, (impl, run.stdout[-1500:], run.stderr[-1500:])
            if status:
                assert "below the 100% a claim needs" in run.stdout.splitlines()[-1]
                assert "declined in gpt-2: " in run.stdout and "not granted other" in run.stdout
    pytest_ci = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--tokconf-impl",
        "zoo_ports:declines_digits",
    ]
    pytest_ci += ["--tokconf-claim", "gpt-2/*", "-n", "2", "--dist", "loadgroup"]
    run = subprocess.run(pytest_ci, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 1 and "below the 100% a claim needs" in run.stdout, run.stdout[-2000:]


@pytest.mark.usefixtures("zoo")
def test_declines_of_long_inputs_or_special_texts_fail_the_documented_ci_command_unless_granted(
    tmp_path: Path,
) -> None:
    """docs/ci.md's Python job, as written, on the whole gpt-2 recording: a port declaring
    `max_input_bytes = 1024` that declines the longer inputs (53 cases, 67% of the recorded bytes), or
    one parsing special tokens in every mode that declines the plain-mode inputs holding
    `<|endoftext|>`, fails it, and `--json` says so; the same command granting that class passes, its
    verdict line and `--json` listing the grant with its count (too-long with its share of the bytes)."""
    cases = load(B11192 / "gpt-2.yaml").cases
    size = sum(len(case.data) for case in cases)
    special = [len(c.data) for c in cases if b"<|endoftext|>" in c.data]
    probes = {
        "declines_long_inputs": ("too-long", [len(c.data) for c in cases if len(c.data) > 1024], MODES),
        "parses_special_everywhere": ("special-text", special, ["plain"]),
    }
    ci = ["--claim", "gpt-2/*", "--timeout", "60", "--junit", str(tmp_path / "t.xml")]
    ci += ["--report", str(tmp_path / "t.md")]
    for port, (name, declined, modes) in probes.items():
        verdict = tmp_path / f"{port}.json"
        check = [sys.executable, "-m", "tokconf", "check", "--impl", f"zoo_ports:{port}", *ci, "--json", str(verdict)]
        run = subprocess.run(check, capture_output=True, text=True, timeout=900, check=False)
        last = run.stdout.splitlines()[-1] if run.stdout else run.stderr
        assert run.returncode == 1, (last, run.stderr[-1500:])
        assert f"declines not granted (--allow-decline): {name} {len(declined)}" in last, last
        assert json.loads(verdict.read_text(encoding="utf-8"))["passed"] is False
        granted = [*check, "--allow-decline", f"invalid-utf8,nul,{name}"]
        run = subprocess.run(granted, capture_output=True, text=True, timeout=900, check=False)
        last = run.stdout.splitlines()[-1] if run.stdout else run.stderr
        assert run.returncode == 0, (last, run.stderr[-1500:])
        share = sum(declined) * len(modes) / (size * len(MODES))  # of every claimed mode's recorded bytes
        shown = f"{name} {len(declined) * len(modes)}" + f" ({round(100 * share)}% of the bytes)" * (name == "too-long")
        assert last.startswith("PASS: ") and last.endswith(f"; granted declines: {shown}"), last
        document = json.loads(verdict.read_text(encoding="utf-8"))
        assert document["passed"] is True and document["verdict_line"] == last
        made = {"cases": len(declined) * len(modes), "bytes": sum(declined) * len(modes), "share_of_bytes": share}
        assert document["grants"][name] == made
    assert round(100 * sum(probes["declines_long_inputs"][1]) / size) == 67  # the figure: 53 cases, 67%


CLASSES = """
from tokconf import Unsupported
from tokconf.implementations.reference import from_gguf

SPECIAL = b"<|endoftext|>"

class Port:
    max_input_bytes = {limit}
    def __init__(self, path):
        self.inner = from_gguf(path)
    def encode(self, data, add_special, parse_special):
        if len(data) > 1024:
            raise Unsupported("too long for me", input_class="too-long")
        if SPECIAL in data and not parse_special:
            raise Unsupported(input_class="special-text")
        if data == b"Hello world":
            raise Unsupported("cannot", input_class="{lie}")
        return self.inner.encode(data, add_special, parse_special)

def load(path):
    return Port(path)
"""


def test_each_input_class_is_verified_on_the_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`too-long` fits only past the limit the port declared (no limit, or one under 1,024 bytes, is no
    declaration), `special-text` only with parse_special off and a special token's text in the input;
    a class that does not fit (`nul` for "Hello world") is that case's error, over the worker too."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "classes.py").write_text(CLASSES.format(limit=1024, lie="nul"))
    run = tokconf.check("classes:load", vocabs=["gpt-2"], modes=["plain", "special"],
                        allow_decline="too-long,special-text")  # fmt: skip
    declined = {(r.section, r.case): r for r in run.results if r.verdict is Verdict.UNSUPPORTED and r.section in MODES}
    assert {r.declined for r in declined.values()} == {tokconf.InputClass.TOO_LONG, tokconf.InputClass.SPECIAL_TEXT}
    assert all(len(r.data) > 1024 or b"<|endoftext|>" in r.data for r in declined.values())
    assert not any(
        r.declined is tokconf.InputClass.SPECIAL_TEXT for (mode, _), r in declined.items() if mode != "plain"
    )
    errors = {(r.section, r.case): r.reason for r in run.results if r.verdict is Verdict.ERROR}
    hello = {(r.section, r.case) for r in run.results if r.data == b"Hello world" and r.section in MODES}
    assert set(errors) == hello and ("plain", "edge/hello-world") in hello
    assert (
        "declined the input as nul, which it is not (11 bytes); it said: cannot"
        in errors[("plain", "edge/hello-world")]
    )
    assert run.decision.granted == len(declined)
    (tmp_path / "classes_nolimit.py").write_text(CLASSES.format(limit=None, lie="invalid-utf8"))
    run = tokconf.check("classes_nolimit:load", vocabs=["gpt-2"], modes=["plain"])
    too_long = [r for r in run.results if len(r.data) > 1024 and r.section == "plain"]
    assert too_long and {r.verdict for r in too_long} == {Verdict.ERROR}  # no limit declared: nothing is too long
    (tmp_path / "classes_tiny.py").write_text(CLASSES.format(limit=10, lie="invalid-utf8"))
    run = tokconf.check("classes_tiny:load", vocabs=["gpt-2"], modes=["plain"])
    assert {r.verdict for r in run.results} == {Verdict.ERROR}
    assert "max_input_bytes must be an int of at least 1024, not 10" in run.results[0].reason


LLAMA_CPP_PROGRAM = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "hello":
        answer = {"protocol": 2, "name": "binding", "vocab_types": ["bpe"], "llama_cpp": True}
    else:
        answer = {"ok": False, "error": "llama_model_load: unknown pre-tokenizer type"}
    print(json.dumps({**answer, "id": request["id"]}), flush=True)
"""


def test_a_llama_cpp_refusing_a_vocabulary_the_recorded_build_loaded_fails(llama_build: object, tmp_path: Path) -> None:
    """b11434 loads pre-glm5, b11192 refuses it: checked against b11434's recording, b11192 fails every
    case with llama.cpp's reason, never "not claimed"; so does a binding whose handshake says llama_cpp.
    A port that is no llama.cpp declining it is unsupported, as before."""
    recording = ROOT / "recordings" / "b11434" / "synthetic" / "pre-glm5.yaml"
    run = tokconf.check("llama.cpp@11192", recording, modes=["plain"], explain=True)
    assert not run.passed and {r.verdict for r in run.results} == {Verdict.FAILED}
    reason = run.results[0].reason
    # llama.cpp's reason alone: the implementation is named where the reason is shown
    assert reason == "refused to load a vocabulary llama.cpp b11434 loads: unknown pre-tokenizer type: 'glm5'"
    [cause] = run.causes  # one cause, of its own kind, with every case
    assert cause.kind.value == "load-refused" and len(cause.cases) == len(run.results) - len(Fact)  # but the facts
    program = tmp_path / "binding.py"
    program.write_text(LLAMA_CPP_PROGRAM)
    run = tokconf.check(f"cmd:{sys.executable} {program}", recording, modes=["plain"])
    assert not run.passed and {r.verdict for r in run.results} == {Verdict.FAILED}
    spm = ROOT / "recordings" / "b11192" / "llama-spm.yaml"  # a type it does not list: no way around the refusal
    run = tokconf.check(f"cmd:{sys.executable} {program}", spm, modes=["plain"])
    assert {r.verdict for r in run.results} == {Verdict.FAILED} and "not spm" in run.results[0].reason
    program.write_text(LLAMA_CPP_PROGRAM.replace('"llama_cpp": True', '"llama_cpp": False'))
    run = tokconf.check(f"cmd:{sys.executable} {program}", recording, modes=["plain"])
    assert {r.verdict for r in run.results} == {Verdict.UNSUPPORTED}


def test_declining_a_whole_mode_counts_against_coverage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`parse-special` fits every request of the special and bos modes, so it is checked but not
    verified: a port declining almost all of them fails those modes, and passes the modes it claims."""
    (tmp_path / "no_specials.py").write_text(
        "from tokconf import Unsupported\nfrom tokconf.implementations.reference import from_gguf\n"
        "class P:\n    def __init__(self, path):\n        self.inner = from_gguf(path)\n"
        "    def encode(self, data, add_special, parse_special):\n"
        "        if parse_special and data:\n            raise Unsupported(input_class='parse-special')\n"
        "        return self.inner.encode(data, add_special, parse_special)\n"
        "def load(path):\n    return P(path)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tokconf.check("no_specials:load", vocabs=["gpt-2"], claims=["gpt-2/*"])
    assert not run.passed and any("gpt-2 special: 2 of 2746 cases passed" in r for r in run.decision.reasons)
    assert tokconf.check("no_specials:load", vocabs=["gpt-2"], claims=["gpt-2/plain"]).passed


@pytest.mark.parametrize("impl", ["no_such_module:load", "llama.cpp:{tmp}/no-such-tree"])
def test_a_run_that_dies_leaves_no_passing_verdict_file(impl: str, tmp_path: Path) -> None:
    """`--json` and `--junit` hold a failing verdict from the start: a run ending in a usage error, an
    implementation that cannot be made (a llama.cpp that does not build), or a kill never leaves the
    last run's PASS for a CI step to read."""
    verdict, junit = tmp_path / "v.json", tmp_path / "j.xml"
    check = [sys.executable, "-m", "tokconf", "check", "--vocab", "gpt-2", "--mode", "plain", "--json", str(verdict)]
    check += ["--junit", str(junit)]
    assert subprocess.run(check, capture_output=True, check=False, timeout=300).returncode == 0
    assert json.loads(verdict.read_text())["passed"] is True and "<error" not in junit.read_text()
    impl = impl.format(tmp=tmp_path)
    run = subprocess.run([*check, "--impl", impl], capture_output=True, check=False, timeout=300)
    assert run.returncode == 2
    assert json.loads(verdict.read_text()) == {
        "tokconf": 2, "passed": False, "exit_status": 2, "verdict_line": "FAIL: no verdict: the run did not finish",
        "reasons": ["the run did not finish"], "implementation": impl,
    }  # fmt: skip
    (suite,) = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("errors"), suite[0].get("name")) == ("1", "1", impl)
    assert suite[0][0].get("message") == "no verdict: the run did not finish"
