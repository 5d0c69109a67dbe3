"""`cmd:` programs that try to outlive the run, flood it, answer what was not asked, or keep it busy
restarting them: each is contained, and its cases are errors, never passes."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import checked
import pytest
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.core.sandbox import SandboxPolicy
from tokconf.core.supervisor import STDERR_KEPT, Program
from tokconf.implementations.base import VocabInfo
from tokconf.implementations.command import GIVE_UP_BROKEN, CommandImplementation, CommandSession
from tokconf.implementations.protocol import Op, encode_fields, request_line

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
PROGRAMS = ROOT / "tests" / "support" / "cmd_programs.py"
VOCAB = VocabInfo(Path("/nowhere/ggml-vocab-test.gguf"), "bpe", "gpt2", "gpt-2", "test")
LOOKS = 200  # times /proc is scanned for survivors, 50 ms apart (a SIGKILLed process takes a moment to go)


def _command(behaviour: str, *args: str) -> str:
    return shlex.join([sys.executable, str(PROGRAMS), behaviour, *args])


def _wrapped(behaviour: str, marker: str) -> str:
    """The program behind a shell that does not exec it (as `bash run.sh`, `npx`, `cargo run` are)."""
    return shlex.join(["bash", "-c", f"{_command(behaviour, marker)}; exit $?"])


def _with_marker(marker: str) -> list[int]:
    """The live processes whose command line holds the marker (a zombie's is empty)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # it ended while we looked
                continue
    return found


def _survivors(marker: str) -> list[int]:
    """The processes with the marker still alive after up to `LOOKS` looks."""
    for _ in range(LOOKS):
        if not (alive := _with_marker(marker)):
            return []
        time.sleep(0.05)
    return alive


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique argument for the test's programs; whatever of them survives the test is killed after."""
    mark = f"tokconf-test-{uuid.uuid4().hex}"
    yield mark
    for pid in _with_marker(mark):
        os.kill(pid, signal.SIGKILL)


def _session(impl: CommandImplementation) -> CommandSession:
    session = impl.open(VOCAB)
    assert isinstance(session, CommandSession)
    return session


@pytest.mark.parametrize("behaviour", ["hang", "spin"])
def test_a_hanging_port_behind_a_wrapper_leaves_no_process(
    behaviour: str, marker: str, llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    """The timeout kills the wrapper's whole process group, not only the shell tokconf started."""
    impl = f"cmd:{_wrapped(behaviour, marker)}"
    args = ["--recordings", str(QWEN2), "--case", "edge/hello-world", "--mode", "plain", "--timeout", "1"]
    done = checked.check(capsys, "--impl", impl, *args)
    assert done.status == 1 and [c.verdict for c in done.cases] == [Verdict.ERROR]
    assert "no answer within 1 s" in done.output
    assert _survivors(marker) == []


def test_a_program_that_exits_leaving_a_child_takes_the_child_along(marker: str) -> None:
    impl = CommandImplementation.of_command(_wrapped("orphan-then-exit", marker), timeout=10)
    try:
        [outcome] = _session(impl).encode_many([(b"a", False, False)])
        assert outcome == Refusal("the program exited with status 3", RefusalKind.DIED)
        assert _survivors(f"{marker}-orphan") == []  # while the restarted program runs
    finally:
        impl.close()


def test_close_ends_a_program_that_ignores_the_end_of_its_input(marker: str) -> None:
    impl = CommandImplementation.of_command(_wrapped("ignore-eof", marker), timeout=10)
    assert _session(impl).encode_many([(b"ab", False, False)]) == [[97, 98]]
    impl.close()
    assert _survivors(marker) == []


def test_stderr_is_kept_in_a_bounded_ring_read_as_it_comes() -> None:
    """1 MiB of stderr per answer: the program never blocks on a full pipe (it answers every request),
    and what is kept of it never exceeds `STDERR_KEPT`, in memory (its stderr is a pipe, no file)."""
    program = Program([sys.executable, str(PROGRAMS), "stderr-flood"], timeout=10)
    assert os.readlink(f"/proc/{program.proc.pid}/fd/2").startswith("pipe:")
    for request_id in range(20):
        line = program.exchange(request_line(request_id, Op.ENCODE, encode_fields((b"ab", False, False))))
        assert line == f'{{"id": {request_id}, "ids": [97, 98]}}'.encode()
        assert len(program.stderr) <= STDERR_KEPT
    program.close()
    assert len(program.stderr) == STDERR_KEPT  # 20 MiB written, the last 64 KiB kept
    assert program.stderr.tail().splitlines()[-1] == "answered 19"


def test_a_line_nobody_asked_for_is_an_error_never_an_answer() -> None:
    """The program answers each request, then at once an answer for the next id ([999]): the next
    request is not sent, its case is an error showing the line, and the program is restarted."""
    impl = CommandImplementation.of_command(_command("preempt"), timeout=10)
    try:
        outcomes = _session(impl).encode_many([(b"ab", False, False)] * 6)
    finally:
        impl.close()
    assert [999] not in outcomes
    assert outcomes[0::2] == [[97, 98]] * 3  # each program's first answer, before it spoke unasked
    for outcome in outcomes[1::2]:
        assert isinstance(outcome, Refusal) and outcome.kind is RefusalKind.BROKEN
        assert outcome.reason.startswith('wrote a line nobody asked for: b\'{"id": ')
        assert outcome.reason.endswith(', "ids": [999]}\'')


def test_a_program_that_breaks_on_every_other_input_is_given_up_on(tmp_path: Path) -> None:
    """Breaking never twice in a row, it is still given up on once `GIVE_UP_BROKEN` of its recent
    requests broke: 4 restarts, not one per two cases; the rest are errors with one reason."""
    starts = tmp_path / "starts"
    counted = SandboxPolicy(writable=(tmp_path,)).confiner()  # the program counts its starts in a file there
    impl = CommandImplementation.of_command(
        _command("alternate", "--starts", str(starts)), timeout=10, confiner=counted
    )
    try:
        outcomes = _session(impl).encode_many([(b"ab", False, False)] * 40)
    finally:
        impl.close()
    assert len(starts.read_text().splitlines()) == GIVE_UP_BROKEN  # the first start and 4 restarts
    asked = 2 * GIVE_UP_BROKEN
    assert outcomes[:asked:2] == [[97, 98]] * GIVE_UP_BROKEN
    assert {o.reason for o in outcomes[1:asked:2] if isinstance(o, Refusal)} == {
        "answered a line that is not JSON: b'oops'"
    }
    reasons = {o.reason if isinstance(o, Refusal) else "ids" for o in outcomes[asked:]}
    assert reasons == {
        f"given up after 5 failures in its last {asked} requests, the last: answered a line that is not JSON: "
        "b'oops' (the program writes other lines on stdout: stdout is for protocol answers only, log to stderr)"
    }


def test_a_vocabulary_given_up_on_leaves_the_next_one_a_fresh_program(marker: str) -> None:
    """A hung program is killed at its timeout, so giving up leaves nothing running, and the next
    vocabulary starts the program again instead of waiting on the hung one."""
    impl = CommandImplementation.of_command(_wrapped("hang", marker), timeout=0.5)
    try:
        outcomes = _session(impl).encode_many([(b"a", False, False)] * (GIVE_UP_BROKEN + 2))
        assert isinstance(outcomes[-1], Refusal) and outcomes[-1].reason.startswith(
            "given up after 5 failures in a row"
        )
        assert _survivors(marker) == []
        assert isinstance(_session(impl), CommandSession)  # loaded by a new program
    finally:
        impl.close()
    assert _survivors(marker) == []
