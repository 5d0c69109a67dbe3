"""Ports that reach around the process boundary, for tests/test_sandbox.py: each tokenizes as the
bundled reference does (or with one planted bug, so its verdict is FAIL), and on loading a vocabulary
does one thing a port must not be able to do to a run. What it acts on comes from the environment
(`TOKCONF_TEST_*`, set by the test), so one factory serves every front end.

`module:factory` names are the lower-case functions at the end.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tokconf.core.outcome import MODES, Mode, Outcome
from tokconf.implementations.base import Refused
from tokconf.implementations.reference import ReferencePort, from_gguf
from tokconf.recording import decoding
from tokconf.recording.format import load, write

TARGETS = "TOKCONF_TEST_TARGETS"  # os.pathsep-separated files a port tries to write
RECORDING = "TOKCONF_TEST_RECORDING"  # the recording a port rewrites
DAEMON = "TOKCONF_TEST_DAEMON"  # MARKER:PATH: the daemon's command line holds MARKER; it writes PATH
SOCKET = "TOKCONF_TEST_SOCKET"  # a Unix socket on the host a port tries to connect to


class Wrong(ReferencePort):
    """The reference, one id short on every input of four bytes or more: FAIL wherever it runs."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = super().encode(data, add_special, parse_special)
        return ids[:-1] if len(data) >= 4 else ids


def writes_everywhere(path: Path) -> ReferencePort:
    """Right, but on every load overwrites each file `TARGETS` names (a verdict file, a recording,
    tokconf's cache, the folder it runs in) where it can."""
    for target in filter(None, os.environ.get(TARGETS, "").split(os.pathsep)):
        with contextlib.suppress(OSError):
            Path(target).write_text('{"passed": true}\n', encoding="utf-8")
    return from_gguf(path)


def rewrites_the_next_recording(path: Path) -> ReferencePort:
    """Wrong (`Wrong`) on the vocabulary of the recording `RECORDING` names, right on any other; and on
    loading another, rewrites that recording to hold its own wrong answers, sealed again, and removes
    the decoding beside it: a recording read one vocabulary at a time is then judged as it rewrote it.
    Where the recording is a link, it leaves the file alone and points the link at a forged one."""
    target = Path(os.environ[RECORDING])
    recording = load(target)
    theirs = recording.provenance["vocab"]["file"]
    if path.name == theirs:
        return Wrong(from_gguf(path).tokenizer)
    other = Wrong(from_gguf(path.with_name(theirs)).tokenizer)
    cases = [
        dataclasses.replace(case, outcomes={mode: _answer(other, case.data, mode, was) for mode, was in
                                            case.outcomes.items()})
        for case in recording.cases
    ]  # fmt: skip
    with contextlib.suppress(Exception):  # a sandbox refuses it (tokconf says so as a TokconfError): goes on
        rewritten = dataclasses.replace(recording, cases=cases)
        if target.is_symlink():  # a new file, and the link swapped to it: the pinned file itself untouched
            forged = target.resolve().parent / "forged" / target.name
            forged.parent.mkdir(exist_ok=True)
            write(forged, rewritten)
            swap = target.with_name(".swap")
            swap.symlink_to(forged)
            os.replace(swap, target)
        else:
            write(target, rewritten)
        decoding.path_for(target).unlink(missing_ok=True)
    return from_gguf(path)


def starts_a_daemon(path: Path) -> ReferencePort:
    """Wrong, and starts a daemon in a session of its own that outlives the port: once tokconf has
    written its final verdict into the file `DAEMON` names (a document with `units`), it waits a second
    and writes a passing one there (for a minute at most)."""
    marker, _, verdict = os.environ[DAEMON].partition(":")
    wait = f'for n in $(seq 600); do grep -q units "{verdict}" 2>/dev/null && break; sleep 0.1; done; sleep 1'
    script = f'{wait}; printf \'{{"passed": true}}\\n\' > "{verdict}" # {marker}'
    subprocess.Popen(["setsid", "sh", "-c", script], stdin=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.2)  # it is running before tokconf can end the port
    return Wrong(from_gguf(path).tokenizer)


def starts_a_daemon_and_kills_its_keeper(path: Path) -> ReferencePort:
    """`starts_a_daemon`, then SIGKILLs the process that started it (a keeper, kept with `--sandbox off`):
    the one end a keeper cannot act on."""
    port = starts_a_daemon(path)
    if b"keeper.py" in Path(f"/proc/{os.getppid()}/cmdline").read_bytes():  # not the judge, once adopted by it
        os.kill(os.getppid(), signal.SIGKILL)
    return port


def reaches_the_host(path: Path) -> ReferencePort:
    """Right where it can reach nothing of the host beyond files, wrong (`Wrong`) where it can: on load
    it opens the kernel's core-dump setting (`/proc/sys/kernel/core_pattern`, whose program a root port
    could make the kernel run as root on the host) for writing, writing nothing; connects to the Unix
    socket `SOCKET` names (as it would to Docker's or a root tmux's); sends a datagram there from a
    socket pair's end (which needs no `socket` call); and makes a user namespace of its own (whose
    capabilities would let it mount the host's cgroup hierarchies read-write)."""
    reached = []
    with contextlib.suppress(OSError):
        os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY))
        reached.append("kernel settings")
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as connection:
        connection.connect(os.environ[SOCKET])
        reached.append("a host socket")
    with contextlib.suppress(OSError):
        one, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        with one, other:
            one.sendto(b"hello", os.environ[SOCKET] + ".dgram")
        reached.append("a host datagram socket")
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0:  # CLONE_NEWUSER
        reached.append("a user namespace")
    return Wrong(from_gguf(path).tokenizer) if reached else from_gguf(path)


def traces_the_judge(path: Path) -> ReferencePort:
    """Right where it cannot trace the judge, wrong where it can: on load it opens the judge's memory
    (`/proc/PID/mem` of its keeper's parent, kept with `--sandbox off`) for reading, which takes what
    ptrace takes, and through which it could write code into the judge."""
    keeper = int(Path(f"/proc/{os.getppid()}/stat").read_text().rsplit(")", 1)[1].split()[1])
    try:
        os.close(os.open(f"/proc/{keeper}/mem", os.O_RDONLY))
    except OSError:
        return from_gguf(path)
    return Wrong(from_gguf(path).tokenizer)


def hangs(path: Path) -> ReferencePort:
    """Loads, then never answers: a run of it only ends when it is ended."""

    class Hanging(ReferencePort):
        def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
            time.sleep(3600)
            return []

    return Hanging(from_gguf(path).tokenizer)


def wrong(path: Path) -> ReferencePort:
    return Wrong(from_gguf(path).tokenizer)


def _answer(port: ReferencePort, data: bytes, mode: Mode, recorded: Outcome) -> Outcome:
    """The port's answer, as a recording holds it (llama.cpp's refusal kept where the port refuses)."""
    try:
        return port.encode(data, *MODES[mode])
    except Refused:
        return recorded


CURRENT: list[ReferencePort] = []  # the process's "current vocabulary" (the last), as a module global


class _Current(ReferencePort):
    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return CURRENT[-1].encode(data, add_special, parse_special)


def forges_what_the_interleaving_check_reads(path: Path) -> ReferencePort:
    """A module-global "current vocabulary" (each load replaces it): right while one vocabulary is alive
    in its process, wrong for the others once a second is loaded beside them, which only the
    interleaving check sees. On loading a vocabulary other than `RECORDING`'s, it rewrites that
    recording (sealed again) to hold what this vocabulary answers to its texts: what the shared process
    will answer for it."""
    CURRENT.append(from_gguf(path))
    target = Path(os.environ[RECORDING])
    recording = load(target)
    if path.name != recording.provenance["vocab"]["file"]:
        cases = [
            dataclasses.replace(case, outcomes={mode: _answer(CURRENT[-1], case.data, mode, was) for mode, was in
                                                case.outcomes.items()})
            for case in recording.cases
        ]  # fmt: skip
        with contextlib.suppress(Exception):  # a sandbox refuses it: goes on
            write(target, dataclasses.replace(recording, cases=cases))
    return _Current(CURRENT[-1].tokenizer)
