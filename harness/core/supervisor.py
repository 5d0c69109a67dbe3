"""The one supervisor of every child process tokconf runs: a `cmd:` program, a Python port's worker
(`tokconf.implementations.command_worker`, or this process forked), and the live llama.cpp's worker
(`tokconf.oracles.libllama_worker`, driven by `tokconf.oracles.libllama_client`). Each is a `Program`: its pipes, one
deadline per request, its process group, the end of its standard error, a bounded answer
(docs/line-protocol.md, "The program's process").

Nothing here knows a protocol's messages: a `Program` writes a request and returns the answer, cut by
its `Framing` (a line for the line protocol, a length prefix for the llama.cpp worker's binary one),
and whatever goes wrong on the way (a hang past the deadline, an exit, a closed pipe, output nobody
asked for, an answer over the bound) ends the program and is raised as `ProgramFailed` with the reason.
Ending it kills its whole process group, so a port behind a wrapper that does not `exec` (`bash run.sh`,
`npx`, `cargo run`) leaves no process behind, and neither does a llama.cpp worker's fork server. What
to do next (restart, give up, judge an abort) is the caller's: the restart policy belongs to the
protocol that knows which request died.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from enum import Enum
from typing import IO, Any, Protocol

from .errors import TokconfError
from .keeper import keep
from .sandbox import FORKED, KEEPER_GRACE, Confiner
from .timeouts import Wait

MAX_ANSWER = 64 << 20  # the longest answer taken unless a program says (a 1 MB input's ids are about 2 MB of JSON)
LENGTH = struct.Struct("<I")  # `Framing.LENGTH`'s prefix
STDERR_KEPT = 64 << 10  # the end of the program's standard error kept in memory, to show on failure
STDERR_LINES = 5  # how many of its last lines a failure shows...
STDERR_TAIL = 4096  # ...taken from this many of its last bytes
EXIT_GRACE = 1.0  # seconds a program whose output ended has to exit before it is killed
CLOSE_GRACE = 2.0  # seconds a program has to exit after its input is closed, at the end of the run
READER_GRACE = 1.0  # seconds to wait for the last of standard error once the whole group is dead
POLL = 0.01  # seconds between looks at whether the program exited (POSIX has no wait with a timeout)


class Framing(Enum):
    """How the messages on a child's pipes are cut."""

    LINE = "line"  # a message is a line: the line protocol's JSON (docs/line-protocol.md)
    LENGTH = "length"  # a little-endian u32 byte count, then the message: the llama.cpp worker's binary answers
    WHOLE = "whole"  # one request, all of the input; one answer, all of the output: a one-shot program (`run_once`)

    def frame(self, message: bytes) -> bytes:
        """`message` as written to the child."""
        if self is Framing.WHOLE:
            return message
        return message + b"\n" if self is Framing.LINE else LENGTH.pack(len(message)) + message

    def cut(self, buffer: bytearray, searched: int, bound: int) -> tuple[int, int] | None:
        """Where the first whole message of `buffer` is, as (its end, where the next one starts), or None
        while it is not whole; `searched`: how much of the buffer is known to hold no line's end. Raises
        ProgramFailed for a message over `bound` bytes (a line found too long, or a prefix announcing it)."""
        if self is Framing.WHOLE:  # whole only when the output ends (`Program._next`)
            if len(buffer) > bound:
                raise ProgramFailed(f"wrote more than the {bound} bytes its output may take")
            return None
        if self is Framing.LINE:
            end = buffer.find(b"\n", searched)
            if end < 0 and len(buffer) > bound:
                raise ProgramFailed(f"answered a line longer than {bound >> 20} MiB without a newline")
            return None if end < 0 else (end, end + 1)
        if len(buffer) < LENGTH.size:
            return None
        (size,) = LENGTH.unpack_from(buffer)
        if size > bound:
            raise ProgramFailed(f"announced an answer of {size} bytes, more than the {bound} it may take")
        end = LENGTH.size + size
        return (end, end) if len(buffer) >= end else None

    def message(self, buffer: bytearray, end: int) -> bytes:
        """The message `cut` found ending at `end`, without its framing."""
        return bytes(buffer[:end] if self is Framing.LINE else buffer[LENGTH.size : end])


class Process(Protocol):
    """What `Program` needs of its process: `subprocess.Popen`'s, or a `ForkedProcess`'s."""

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    @property
    def returncode(self) -> int | None: ...

    def wait(self) -> int: ...


class ForkedProcess:
    """This process forked, with pipes for its standard streams, the child in a session (and process
    group) of its own, as `Popen(start_new_session=True)` makes one; the little of `Popen` `Program`
    uses. The child is the keeper (`tokconf.core.keeper`) of a grandchild that runs `target`: bubblewrap
    cannot take a forked process in, but what the target starts is still ended with it."""

    def __init__(self, target: Callable[[], int]) -> None:
        pipes = [os.pipe() for _ in range(3)]  # (read, write) each: stdin, stdout, stderr
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            try:
                os.setsid()
                for fd, (read, write) in enumerate(pipes):
                    os.dup2(read if fd == 0 else write, fd)
                for read, write in pipes:
                    os.close(read)
                    os.close(write)
                keep(lambda: os._exit(target()), parent)
            finally:
                os._exit(70)
        (in_read, in_write), (out_read, out_write), (err_read, err_write) = pipes
        for fd in (in_read, out_write, err_write):
            os.close(fd)
        self.stdin: IO[bytes] | None = os.fdopen(in_write, "wb", buffering=0)
        self.stdout: IO[bytes] | None = os.fdopen(out_read, "rb", buffering=0)
        self.stderr: IO[bytes] | None = os.fdopen(err_read, "rb", buffering=0)
        self._status: int | None = None

    @property
    def returncode(self) -> int | None:
        return self._status

    def wait(self) -> int:
        if self._status is None:
            _, status = os.waitpid(self.pid, 0)
            self._status = os.waitstatus_to_exitcode(status)
        return self._status


class ProgramFailed(Exception):
    """The program did not answer a request as it must; the message says how. The program has ended
    (its process group killed) by the time this is raised."""


class ProgramExited(ProgramFailed):
    """The program's process ended (it exited, or a signal killed it) while the answer to a request
    written whole was awaited: it died on that request. A binding whose llama.cpp aborts dies so, where
    llama.cpp itself aborts (`tokconf.implementations.command` tells the two apart with the recording)."""


class ProgramTimedOut(ProgramFailed):
    """The program gave no answer within the timeout (and was killed): slow, or hanging."""


class StderrRing:
    """The last `STDERR_KEPT` bytes of the program's standard error, read as they come by a daemon
    thread: a program that logs a lot never blocks on a full pipe, and the memory it costs is bounded."""

    def __init__(self) -> None:
        self._kept = bytearray()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def drain(self, pipe: IO[bytes]) -> None:
        """Read the pipe to its end (every process of the group gone), then close it. Runs in its own
        thread, which owns the pipe: closing it from elsewhere while a read waits is not safe."""
        with pipe:
            fd = pipe.fileno()
            while chunk := os.read(fd, STDERR_KEPT):
                with self._lock:
                    self._kept += chunk
                    del self._kept[: max(0, len(self._kept) - STDERR_KEPT)]

    def text(self, size: int = STDERR_TAIL) -> str:
        """Its last `size` bytes, as text."""
        with self._lock:
            return self._kept[-size:].decode("utf-8", errors="replace")

    def tail(self) -> str:
        """Its last `STDERR_LINES` lines, as text."""
        return "\n".join(self.text().strip().splitlines()[-STDERR_LINES:])


class Program:
    """One running instance of a child program, in a session (and process group) of its own, with I/O
    that cannot hang: every request has one deadline for writing it and reading the whole answer,
    writes never block on a program that stopped reading, a closed stdout is noticed while the program
    lives, and an answer is bounded (`MAX_ANSWER`) and gathered in linear time."""

    def __init__(
        self,
        argv: list[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
        confiner: Confiner | None = None,
        framing: Framing = Framing.LINE,
        max_answer: int = MAX_ANSWER,
    ) -> None:
        """`timeout`: seconds an answer has unless a request says otherwise; `env`: variables over this
        process's; `confiner`: how the program is held (`tokconf.core.sandbox`: a bubblewrap sandbox, or
        a keeper ended with SIGTERM first, see `end`), None for a program of tokconf's own; `max_answer`:
        the most bytes one answer (or output nobody asked for) may take."""
        self.timeout = timeout
        self.argv = argv
        self.confiner = confiner
        self.framing = framing
        self.max_answer = max_answer
        try:
            options: dict[str, Any] = {
                "stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "bufsize": 0,
                "start_new_session": True, "env": None if env is None else {**os.environ, **env},
            }  # fmt: skip
            self.proc: Process = (
                subprocess.Popen(argv, **options) if confiner is None else confiner.popen(argv, **options)
            )
        except OSError as error:
            raise TokconfError(
                f"cannot start {shlex.join(argv)}: {error.strerror}", "check the program's command"
            ) from None
        self._started()

    @classmethod
    def forked(cls, name: str, target: Callable[[], int], timeout: float) -> Program:
        """A program that is this process, forked, running `target` (its exit status) with the three
        pipes as its standard streams, in a session of its own: for a Python object that cannot be
        imported by name in a fresh interpreter (a closure, a factory defined in `__main__`). The
        child never returns into the caller's code: it leaves with `os._exit`, whatever `target` does."""
        program = cls.__new__(cls)
        program.timeout = timeout
        program.argv = [name]
        program.confiner = FORKED
        program.framing = Framing.LINE
        program.max_answer = MAX_ANSWER
        program.proc = ForkedProcess(target)
        program._started()
        return program

    def _started(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        self.stderr = StderrRing()
        self._reader = threading.Thread(target=self.stderr.drain, args=(self.proc.stderr,), daemon=True)
        self._reader.start()
        self._buffer = bytearray()
        self._waiting = Wait(self.timeout)
        self._closing: threading.Thread | None = None

    @property
    def closing(self) -> bool:
        """Whether a `close_soon` is under way."""
        return self._closing is not None and self._closing.is_alive()

    @property
    def running(self) -> bool:
        """Whether it can still be asked: it has not been ended (it may have exited unnoticed)."""
        return self.proc.returncode is None

    def exchange(self, request: bytes, wait: Wait | None = None) -> bytes:
        """Write one request and return the answer (without its framing), all within the time `wait`
        gives (else the program's timeout); on any failure the program is ended and ProgramFailed raised."""
        self.send(request, wait)
        return self.receive(wait)

    def send(self, request: bytes, wait: Wait | None = None, pending: bool = False) -> None:
        """Write one request (framed here), which may ask for several answers (a batch): the program must have
        said nothing since its last answer, unless answers to earlier requests are `pending` (a
        pipeline: their ids tell them apart). What it answers meanwhile is read as the request is
        written, so neither side can block the other on a full pipe."""
        deadline = self._deadline(wait)
        if not self.running:  # ended already (`end`): its pipes are closed
            raise ProgramExited(f"the program had already exited with status {self.proc.returncode}")
        try:
            if not pending:
                self._refuse_unasked()
            self._write(self.framing.frame(request), deadline)
        except ProgramExited as died:  # it ended before this request was whole: on one in flight, if any
            self.end()
            if pending:
                raise
            raise ProgramFailed(str(died)) from None
        except ProgramFailed:
            self.end()
            raise

    def receive(self, wait: Wait | None = None) -> bytes:
        """The next answer, within its own deadline: a batch's answers each have the time one
        answer has, so a hang is found at the input that hangs."""
        deadline = self._deadline(wait)
        try:
            return self._next(deadline)
        except ProgramFailed:
            self.end()
            raise

    def run_once(self, data: bytes, wait: Wait | None = None) -> tuple[int, bytes]:
        """A one-shot program's run (`Framing.WHOLE`, e.g. `llama-tokenize --stdin`): `data` is all of its
        input, closed after it; its exit status and all it wrote, within one deadline. One that hangs,
        floods its output or lives on `EXIT_GRACE` after closing it is ended, and ProgramFailed raised."""
        assert self.framing is Framing.WHOLE and self.proc.stdin is not None
        deadline = self._deadline(wait)
        try:
            self._write(data, deadline)
        except ProgramExited:  # it stopped reading and exited (ended now): its status and output say why
            return self._status(), bytes(self._buffer)
        except ProgramFailed:
            self.end()
            raise
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        output = self.receive(wait)
        if not self._exits_within(EXIT_GRACE):
            self.end()
            raise ProgramFailed("it closed its output but kept running, and was killed")
        return self.end(), output

    def _status(self) -> int:
        """The exit status of a program already ended, as `end` gave it."""
        assert self.proc.returncode is not None
        return self.proc.returncode if self.confiner is None else self.confiner.status(self.proc.returncode)

    def end(self) -> int:
        """Kill the program's whole process group and reap its leader (the rest become init's
        children, and init reaps them); the leader's exit status. The group is killed before the
        leader is reaped: the leader's pid, which is the group's id, cannot be reused until then. A
        keeper is asked first (SIGTERM), so that it ends what left the group (a `setsid` daemon)
        before it goes; a sandbox needs no asking: its PID namespace ends with it."""
        if self.proc.returncode is None:
            if self.confiner is not None and not self.confiner.sandboxed:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGTERM)
                self._exits_within(KEEPER_GRACE)
            with contextlib.suppress(ProcessLookupError, PermissionError):  # macOS: a group of zombies only
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            assert pipe is not None
            pipe.close()
        self._reader.join(READER_GRACE)  # a process that left the group may hold stderr: not waited for
        return self._status()

    def close(self) -> None:
        """Close its input, give it `CLOSE_GRACE` seconds to exit, then end it (whatever of its group is
        left is killed, also when it ignores the end of its input); waits for a `close_soon` under way."""
        if self._closing is not None:
            self._closing.join()
        else:
            self._close_now()

    def _close_now(self) -> None:
        if not self.running:
            return
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        self._exits_within(CLOSE_GRACE)
        self.end()

    def close_soon(self) -> None:
        """`close` in a thread of its own, so the caller goes on while the program exits (a vocabulary's
        process, at its end); `close` then waits for it, so nothing is left running at the end."""
        if self._closing is None and self.running:
            self._closing = threading.Thread(target=self._close_now, daemon=True)
            self._closing.start()

    def _exits_within(self, seconds: float) -> bool:
        """Whether the group's leader exits within `seconds`; it is left unreaped (`end` reaps it)."""
        deadline = time.monotonic() + seconds
        while os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL)
        return True

    def _stderr_said(self) -> str:
        tail = self.stderr.tail()
        return f"; stderr: {tail}" if tail else ""

    def _ended(self, before: str = "") -> ProgramFailed:
        """Why its output ended, to raise: it exited (`ProgramExited`: its status, the end of its
        stderr), or it closed its output and lives on (killed). Either way the program is ended."""
        exited = self._exits_within(EXIT_GRACE)
        code = self.end()
        if not exited:
            return ProgramFailed(f"{before}it closed its output but kept running, and was killed")
        return ProgramExited(f"{before}the program exited with status {code}{self._stderr_said()}")

    def _deadline(self, wait: Wait | None) -> float:
        self._waiting = wait or Wait(self.timeout)
        return time.monotonic() + self._waiting.seconds

    def _remaining(self, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ProgramTimedOut(f"no answer within {self._waiting.describe()}{self._stderr_said()}")
        return left

    def _refuse_unasked(self) -> None:
        """Before a request is written, the program must have said nothing since its last answer: a
        line it wrote unasked would otherwise be taken as this request's answer, when it carries the
        right id (a guess at the next id must not pass)."""
        assert self.proc.stdout is not None
        if not self._buffer:
            ready, _, _ = select.select([self.proc.stdout.fileno()], [], [], 0)
            if not ready:
                return
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise self._ended()
            self._buffer += chunk
        if self.framing is not Framing.LINE:  # a binary framing has no lines to show: its first bytes
            raise ProgramFailed(f"wrote output nobody asked for: {bytes(self._buffer[:40])!r}")
        line = bytes(self._buffer[:200]).split(b"\n", 1)[0]
        raise ProgramFailed(f"wrote a line nobody asked for: {line!r}")

    def _write(self, data: bytes, deadline: float) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        fd, answers = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        view = memoryview(data)
        while view:
            readable, ready, _ = select.select([answers], [fd], [], self._remaining(deadline))
            if readable:
                self._take(answers)
            if not ready:
                continue
            try:
                view = view[os.write(fd, view) :]
            except BrokenPipeError:
                raise self._ended("the program closed its input: ") from None
            except BlockingIOError:
                continue

    def _take(self, fd: int) -> None:
        """What the program has written, into the buffer (bounded: a program that floods its output
        unasked is stopped)."""
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise self._ended()
        self._buffer += chunk
        if len(self._buffer) > self.max_answer:
            raise ProgramFailed(f"wrote more than {self.max_answer >> 20} MiB that was not yet asked for")

    def _next(self, deadline: float) -> bytes:
        """The next whole message, read until the framing has one (bounded by it: `Framing.cut`)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        searched = 0
        while (found := self.framing.cut(self._buffer, searched, self.max_answer)) is None:
            searched = len(self._buffer)
            ready, _, _ = select.select([fd], [], [], self._remaining(deadline))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                if self.framing is Framing.WHOLE:  # its output ended: that is the answer
                    return bytes(self._buffer)
                raise self._ended()
            self._buffer += chunk
        end, following = found
        message = self.framing.message(self._buffer, end)
        del self._buffer[:following]
        return message
