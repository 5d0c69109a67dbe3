"""Issue 33's smaller points, and earlier fixes that had no test: each test proves its check can fail.

- a special id a port says in `load` that differs is a failed fact, not another vocabulary (in
  test_protocol2.py); `add_sep` is compared among the facts;
- `module:factory:ARG` works as `NAME:ARG` does;
- a port that cannot do a mode at all is pointed to `--claim`;
- a clean or error-only run says nothing about explaining;
- an interrupted pytest run fails and skips the interleaving check; the worker exits on a broken pipe
  whatever its port left running; a slow but in-time `token_to_piece` does not time out; an entry
  point named `reference` cannot stand in for tokconf's; after a load failure the interleaving check
  stops instead of waiting the load timeout once per vocabulary.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tokconf.checking.contract import Verdict
from tokconf.checking.explain.causes import reason_template
from tokconf.checking.run import CheckRun
from tokconf.cli.main import main
from tokconf.implementations import python
from tokconf.implementations.python import ENTRY_POINT_GROUP, PythonImplementation
from tokconf.implementations.reference import from_gguf
from tokconf.implementations.resolve import resolve

import reference_impl.tokenizer  # noqa: F401  # loaded before pytester's first in-process run (see `sandbox`)

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "recordings" / "b11192"
QWEN2 = RECORDINGS / "qwen2.yaml"
FEW = ["--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "edge/sentence"]


@pytest.fixture
def ports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder for port modules, on the path of tokconf's workers and this process."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    return tmp_path


def _module(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


def test_add_sep_is_a_compared_fact(ports: Path, check_runs: list[CheckRun]) -> None:
    """WordPiece adds [SEP]: a port that says it does not fails the fact; the reference, right, passes it."""
    _module(ports, "sep_ports", """
        from tokconf.implementations.reference import from_gguf

        def no_sep(path):
            port = from_gguf(path)
            port.tokenizer.add_sep = False
            return port
    """)  # fmt: skip
    bert = ["--recordings", str(RECORDINGS / "bert-bge.yaml"), "--mode", "plain"]
    assert main(["check", "--impl", "sep_ports:no_sep", *bert]) == 1
    facts = {r.case: r for r in check_runs[-1].results if r.section == "facts"}
    assert facts["add_sep"].verdict is Verdict.FAILED
    assert facts["add_sep"].reason == "add_sep: the implementation says False, llama.cpp says True"
    assert main(["check", "--impl", "reference", *bert]) == 0
    assert {r.case: r.verdict for r in check_runs[-1].results if r.section == "facts"}["add_sep"] is Verdict.PASSED


def test_a_python_factory_takes_an_argument_as_a_registered_name_does(
    ports: Path, check_runs: list[CheckRun], capsys: pytest.CaptureFixture[str]
) -> None:
    """`module:factory:ARG` is `factory(ARG)`, in the worker too; ARG is the rest, colons and all."""
    _module(ports, "arg_ports", """
        from tokconf.implementations.reference import from_gguf

        def for_file(argument):
            if argument != "C:/models/tokenizer.json":
                raise ValueError(f"no such file: {argument}")
            return from_gguf
    """)  # fmt: skip
    assert main(["check", "--impl", "arg_ports:for_file:C:/models/tokenizer.json", *FEW]) == 0
    assert {r.verdict for r in check_runs[-1].results} == {Verdict.PASSED}
    assert main(["check", "--impl", "arg_ports:for_file:other.json", *FEW]) == 2
    err = capsys.readouterr().err
    assert "arg_ports:for_file cannot use 'other.json': ValueError: no such file: other.json" in err
    assert main(["check", "--impl", "arg_ports:for_file:", *FEW]) == 2
    assert "arg_ports:for_file needs an argument" in capsys.readouterr().err


def test_a_port_that_cannot_do_a_mode_is_pointed_to_claim(
    ports: Path, check_runs: list[CheckRun], capsys: pytest.CaptureFixture[str]
) -> None:
    """It cannot turn special parsing off: plain mode judged nothing, and the reason says which claim
    leaves plain out; with that claim the run passes."""
    _module(ports, "always_special", """
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
    assert main(["check", "--impl", "always_special:load", *FEW]) == 1
    hint = (
        "fail: nothing judged in qwen2 plain: 2 unsupported, other (the port said: special parsing cannot be turned "
        "off); an implementation that cannot do plain at all claims the modes it does instead "
        "(--claim, pytest --tokconf-claim): qwen2/special qwen2/bos"
    )
    assert hint in capsys.readouterr().out
    assert (
        main(["check", "--impl", "always_special:load", *FEW, "--claim", "qwen2/special", "--claim", "qwen2/bos"]) == 0
    )


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
    tmp_path: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    """Errors only (a port that faults on every input): no failed case, so no "explained: 0 failed cases
    as 0 cause(s)"; neither on a clean run."""
    program = tmp_path / "faults.py"
    program.write_text(FAULTS)
    assert main(["check", "--impl", f"cmd:{sys.executable} {program}", *FEW, "--explain"]) == 1
    run = check_runs[-1]
    assert {r.verdict for r in run.results} == {Verdict.ERROR} and run.explained and not run.causes
    assert "explained:" not in capsys.readouterr().out
    assert main(["check", "--impl", "reference", *FEW, "--explain"]) == 0
    assert "explained:" not in capsys.readouterr().out


def test_an_entry_point_named_reference_cannot_stand_in_for_tokconfs(monkeypatch: pytest.MonkeyPatch) -> None:
    hijack = importlib.metadata.EntryPoint("reference", "os:getcwd", ENTRY_POINT_GROUP)
    monkeypatch.setattr(python, "_entry_points", lambda: {"reference": hijack})
    assert python.resolve_python("reference").factory is os.getcwd  # what a lookup by name would take
    impl = resolve("reference")
    assert isinstance(impl, PythonImplementation) and impl.factory is from_gguf


def test_the_worker_exits_on_a_broken_pipe_whatever_its_port_left_running(ports: Path) -> None:
    """tokconf gone (its end of the answers closed): the worker's next answer meets a broken pipe, and
    it ends at once, though its port started a thread that would keep an ordinary exit waiting."""
    _module(ports, "lingering", """
        import threading, time
        threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: an ordinary exit waits
        from tokconf.implementations.reference import from_gguf as load
    """)  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "tokconf.implementations.serve", "lingering:load"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert worker.stdin is not None and worker.stdout is not None
    try:
        worker.stdout.close()
        worker.stdin.write(b'{"op": "hello", "id": 0, "protocol": 2}\n')
        worker.stdin.flush()
        status = worker.wait(timeout=60)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        worker.stdin.close()
    assert worker.stderr is not None
    with worker.stderr:
        said = worker.stderr.read()
    assert status != 0 and b"Traceback" not in said  # not a clean end (tokconf is gone), and no crash


def test_a_slow_but_in_time_token_to_piece_does_not_time_out(ports: Path, check_runs: list[CheckRun]) -> None:
    """Its pieces take about 0.2 ms each: a request of 4,096 ids is well within the timeout, every id of
    the vocabulary (30,522, twice) is not. The worker computes the ids each request asks, in its time."""
    _module(ports, "slow_pieces", """
        import time
        from tokconf.implementations.reference import ReferencePort, from_gguf

        class SlowPieces(ReferencePort):
            def token_to_piece(self, token, special):
                time.sleep(0.00015)
                return self.tokenizer.token_to_piece(token, special)

        def load(path):
            return SlowPieces(from_gguf(path).tokenizer)
    """)  # fmt: skip
    bert = ["--recordings", str(RECORDINGS / "bert-bge.yaml"), "--mode", "decode", "--timeout", "3"]
    main(["check", "--impl", "slow_pieces:load", *bert])  # fails: decoding alone is not conformance
    results = check_runs[-1].results
    pieces = {r.case: r.verdict for r in results if r.case.startswith("pieces")}
    assert pieces == {"pieces-special": Verdict.PASSED, "pieces-plain": Verdict.PASSED}
    assert {r.verdict for r in results} == {Verdict.PASSED}


INTERLEAVE_PORT = """
import base64, json, sys, time
from reference_impl import Tokenizer

loads = 0
tok = None
for line in sys.stdin:
    request = json.loads(line)
    answer = {"id": request["id"]}
    if request["op"] == "hello":
        answer.update(protocol=2, name="one-vocabulary-a-process", vocab_types=["bpe", "spm"])
    elif request["op"] == "load":
        loads += 1
        if loads > 1:  # a second vocabulary in one process: it hangs
            time.sleep(3600)
        tok = Tokenizer.from_gguf(request["path"])
        answer.update(ok=True)
    else:
        data = base64.b64decode(request["text_b64"])
        answer["ids"] = tok.encode(data, request["add_special"], request["parse_special"])
    print(json.dumps(answer), flush=True)
"""


def test_after_a_load_failure_the_interleaving_check_stops(
    tmp_path: Path, check_runs: list[CheckRun], capsys: pytest.CaptureFixture[str]
) -> None:
    """Three vocabularies, each fine alone; loading a second into one process hangs. The interleaving
    check waits the load timeout once, for the second vocabulary, and asks nothing more (a third wait,
    and a fourth for the first again, would each cost the whole --load-timeout)."""
    port = tmp_path / "port.py"
    port.write_text(INTERLEAVE_PORT)
    names = ["gpt-2", "llama-spm", "qwen2"]
    recordings = [arg for name in names for arg in ("--recordings", str(RECORDINGS / f"{name}.yaml"))]
    args = ["check", "--impl", f"cmd:{sys.executable} {port}", *recordings, "--case", "edge/hello-world"]
    assert main([*args, "--load-timeout", "2"]) == 1
    interleaved = [r for r in check_runs[-1].results if r.section == "interleave"]
    assert {(r.vocab, r.verdict) for r in interleaved} == {("gpt-2", Verdict.PASSED), ("llama-spm", Verdict.ERROR)}
    errors = [r.reason for r in interleaved if r.verdict is Verdict.ERROR]
    assert errors and all("not in a process where gpt-2 was loaded before" in e for e in errors)
    assert "(the --load-timeout option)" in errors[0]
    capsys.readouterr()


INTERRUPTING = """
def pytest_runtest_call(item):
    if "{victim}" in item.name:
        raise KeyboardInterrupt
"""


def test_an_interrupted_pytest_run_fails_and_skips_the_interleaving_check(sandbox: pytest.Pytester) -> None:
    """Ctrl-C (a cancelled CI job) after some items: what did not run was not judged, so the run fails,
    says why, and does not go on to the interleaving check. Not interrupted, the same run interleaves."""
    recordings = [f"--tokconf-recordings={RECORDINGS / name}.yaml" for name in ("qwen2", "gpt-2")]
    args = [*recordings, "--tokconf-impl", "zoo_ports:right", "-k", "hello", "-p", "no:randomly"]
    result = sandbox.runpytest(*args, "--tokconf-json=whole.json")
    assert result.ret == pytest.ExitCode.OK
    whole = json.loads((sandbox.path / "whole.json").read_text())
    assert "interleave" in {unit["mode"] for unit in whole["units"]}
    sandbox.makepyfile(interrupting=INTERRUPTING.format(victim="gpt-2-special"))  # `python -m pytest` finds it
    result = sandbox.runpytest_subprocess(*args, "-p", "interrupting", "--tokconf-json=cut.json")  # Ctrl-C is its own
    assert result.ret == pytest.ExitCode.INTERRUPTED
    cut = json.loads((sandbox.path / "cut.json").read_text())
    assert cut["passed"] is False and cut["reasons"][0] == "the run was interrupted"
    assert "interleave" not in {unit["mode"] for unit in cut["units"]}


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
