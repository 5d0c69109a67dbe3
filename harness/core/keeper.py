"""The keeper: what holds a port's processes where no sandbox can be had (`tokconf.core.sandbox`).

    python -I -S .../tokconf/core/keeper.py PARENT_PID PROGRAM ARGS...

It runs PROGRAM as its child and is the *subreaper* of everything PROGRAM starts
(`prctl(PR_SET_CHILD_SUBREAPER)`): a process that leaves its parent (a `setsid` daemon, a
double-forked grandchild) is adopted by the keeper, not by init, and so cannot leave the keeper's
care. When PROGRAM exits, or tokconf ends the keeper with SIGTERM, or tokconf itself dies (the
keeper's `PR_SET_PDEATHSIG`), the keeper kills every process it holds and exits as PROGRAM did (the
same status, or the same signal). A SIGKILL is the one end it cannot act on: tokconf sends SIGTERM
first and waits for it (`tokconf.core.supervisor.Program.end`).

It is a script, run by path with `-I -S`, and imports nothing but the standard library: the port's
environment (`PYTHONPATH`, `.pth` files, a `sitecustomize`) cannot reach it, and it costs an
interpreter start without `site` (about 10 ms). A forked port (`tokconf.check(factory)`) is kept by
the same code, in its forked process (`keep`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Iterator

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
CAP_SYS_PTRACE = 19  # linux/capability.h
NOT_STARTED = 127  # as a shell says a program that could not be run


class _Ending(Exception):
    """SIGTERM reached the keeper: end everything it holds."""


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _terminate(signum: int, frame: object) -> None:
    raise _Ending


def _children() -> list[int]:
    """The keeper's children, adopted orphans included (every thread's list: the kernel keeps one per
    thread)."""
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as listed:
                found += [int(pid) for pid in listed.read().split()]
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return found


def end_all() -> None:
    """Kill every process the keeper holds, and the ones each leaves behind as it dies (they are
    adopted by the keeper), until none is left; every one reaped."""
    while True:
        for pid in _children():
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(pid, signal.SIGKILL)
        try:
            os.wait()
        except ChildProcessError:
            return


@contextlib.contextmanager
def adopting() -> Iterator[None]:
    """The calling process (`tokconf check`'s judge) as a subreaper too, and every process it holds
    ended when the block ends: a kept port can SIGKILL its keeper, the one end a keeper cannot act
    on, and what it started would then be adopted by init and outlive the run; so it is adopted by the
    judge instead, and ended before any output is written. Only where nothing else of the process has
    children to wait for: `end_all` reaps every child (the port processes are closed by then). The
    judge is also made not dumpable: a kept port of the same user could otherwise attach to it with
    ptrace (or write its /proc/PID/mem) and run code in it; one run by root loses `CAP_SYS_PTRACE`,
    which would let it anyway (`_run`)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_DUMPABLE, 0)  # and no kept port may trace it (see `_run`)
    try:
        yield
    finally:
        end_all()
        _prctl(PR_SET_CHILD_SUBREAPER, 0)


def _exit_as(status: int) -> None:
    """Leave with the status `os.wait` gave for the program: its exit code, or its signal again."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # the two whose handling cannot be set
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else NOT_STARTED)


def keep(start: Callable[[], None], parent: int) -> None:
    """Be the keeper of what `start` runs (in a child: it must not return), never returning:
    `parent` is the process whose death ends the keeper (checked again after the prctl, which
    cannot catch a death that came first)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.signal(signal.SIGTERM, _terminate)
    ended = int(signal.SIGKILL)  # the program's wait status: killed, when the keeper ends it first
    try:
        if os.getppid() != parent:
            raise _Ending
        program = os.fork()
        if program == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            start()
            os._exit(NOT_STARTED)
        # The program's standard streams are its own: the keeper's copies would keep its output open
        # after it closed it (tokconf reads that end as the program's), so they go. Standard error
        # stays, for the keeper's own last words.
        nothing = os.open(os.devnull, os.O_RDWR)
        os.dup2(nothing, 0)
        os.dup2(nothing, 1)
        os.close(nothing)
        while True:
            pid, status = os.wait()  # adopted orphans are reaped here too
            if pid == program:
                ended = status
                break
    except _Ending:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    end_all()
    _exit_as(ended)


def _run(argv: list[str]) -> Callable[[], None]:
    def start() -> None:
        """The program, without `CAP_SYS_PTRACE` in its bounding set (so not after `exec` either, a root
        user's program too): tracing the judge is what a not-dumpable judge (`adopting`) refuses to all
        but that capability. Without `CAP_SETPCAP` (not root) there is nothing to drop."""
        with contextlib.suppress(OSError):
            _prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE)
        try:
            os.execvp(argv[0], argv)
        except OSError as error:
            print(f"cannot start {argv[0]}: {error.strerror}", file=sys.stderr, flush=True)

    return start


if __name__ == "__main__":
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        print("usage: python -I -S keeper.py PARENT_PID PROGRAM ARGS...", file=sys.stderr)
        os._exit(2)
    keep(_run(sys.argv[2:]), int(sys.argv[1]))
