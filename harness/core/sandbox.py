"""Where a port's processes run: a bubblewrap sandbox, or, where none can be had, a keeper.

A port is code tokconf judges, and a judge must not share its room with the judged. Every process of
a port (a Python port's worker, a `cmd:` program, a llama.cpp under test) is started through a
`Confiner`:

- **sandboxed** (`bwrap`, bubblewrap: what Flatpak uses; unprivileged, through user namespaces): the
  whole file system read-only but its scratch (a private `/dev/shm`, its `TMPDIR`) and the folders the
  gate's owner grants (`--sandbox-write`), so it cannot write tokconf's outputs, recordings or cache; a PID
  namespace of its own, so nothing it starts outlives it (when its first process ends, the kernel ends
  the namespace), and nothing outside is seen or signalled; no network unless granted
  (`--sandbox-network`); a session of its own (no controlling terminal to write to); killed with its
  parent (`--die-with-parent`);
- **kept** (`tokconf.core.keeper`), where bubblewrap is missing or user namespaces are off, where the
  gate's owner turned the sandbox off, and for a factory object `tokconf.check(load)` forks (bubblewrap
  starts programs, it cannot take over a forked process): a subreaper parent that adopts whatever the
  port starts and kills all of it when the port ends, when tokconf ends it, or when tokconf dies. The
  port can then write files and reach the network: the verdict line says NOT SANDBOXED, and why.

`--sandbox auto` (the default) is bubblewrap where it works, else kept; `--sandbox bwrap` makes a
machine without it a usage error (a CI job that must not run unsandboxed); `--sandbox off` keeps.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import itertools
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from .errors import TokconfError

if TYPE_CHECKING:
    import subprocess

KEEPER = Path(__file__).with_name("keeper.py")  # run by path, isolated: see its docstring
BWRAP = "bwrap"
KEEPER_GRACE = 2.0  # seconds a keeper has, after SIGTERM, to end what it holds before it is killed
INSTALL = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"


class SandboxMode(enum.Enum):
    """What the gate's owner asks for (`--sandbox`)."""

    AUTO = "auto"  # bubblewrap where it works, else kept (said in the verdict)
    BWRAP = "bwrap"  # bubblewrap, or a usage error
    OFF = "off"  # kept: the port may write files and reach the network


class Confinement(enum.Enum):
    """How a run's port processes were held: said by `--json`'s `sandbox` and, but for a sandbox,
    by the verdict line."""

    SANDBOXED = "bwrap"
    KEPT = "kept"  # a subreaper ends what it starts; files and network open to it
    IN_PROCESS = "in-process"  # the port ran in tokconf's own process (--in-process): NOT CONTAINED
    NO_PORT = "none-needed"  # no port code ran: tokconf's own reference tokenizer, in process

    @property
    def note(self) -> str:
        """What the verdict line adds (nothing for a sandbox, or for tokconf's own code)."""
        if self is Confinement.KEPT:
            return "NOT SANDBOXED"
        if self is Confinement.IN_PROCESS:
            return "NOT CONTAINED: the implementation ran in tokconf's process (--in-process)"
        return ""


@dataclass(frozen=True)
class SandboxPolicy:
    """The sandbox options of a run: `--sandbox`, `--sandbox-write DIR` (repeatable: a folder the port
    may write, bound read-write, e.g. a build or model cache it keeps) and `--sandbox-network`."""

    mode: SandboxMode = SandboxMode.AUTO
    writable: tuple[Path, ...] = ()
    network: bool = False

    @classmethod
    def of(cls, mode: str, writable: Sequence[Path], network: bool) -> SandboxPolicy:
        """The policy the sandbox options' values say (`tokconf.options.SANDBOX`)."""
        try:
            chosen = SandboxMode(mode)
        except ValueError:
            raise TokconfError(f"sandbox {mode!r}: not one of {', '.join(m.value for m in SandboxMode)}") from None
        return cls(chosen, tuple(writable), network)

    def confiner(self) -> Confiner:
        """How this run's port processes are started: a TokconfError where `--sandbox bwrap` cannot be
        had, or a granted folder is not one."""
        for folder in self.writable:
            if not folder.is_dir():
                raise TokconfError(f"--sandbox-write {folder}: not a folder", "give a folder that exists")
        for one, other in itertools.combinations(self.writable, 2):  # the outer could move the inner's
            if _overlap(one, other):
                raise TokconfError(  # mount point and put a link to any folder at its path for the next port
                    f"--sandbox-write {one} and {other}: one holds the other", "grant the outer folder alone"
                )
        if self.mode is SandboxMode.OFF:
            return Confiner(Confinement.KEPT, "--sandbox off", self.writable, self.network)
        missing = bwrap_missing()
        if missing is None:
            return Confiner(Confinement.SANDBOXED, "", tuple(f.resolve() for f in self.writable), self.network)
        if self.mode is SandboxMode.BWRAP:
            raise TokconfError(f"--sandbox bwrap: {missing}", f"{INSTALL}, or run with --sandbox auto")
        return Confiner(Confinement.KEPT, missing, self.writable, self.network)

    def keep_out_of(self, judged: Iterable[Path]) -> None:
        """A TokconfError where a granted folder overlaps one of `judged` (a recording, a decoding,
        tokconf's cache, an output file): the port could write it while the run lasts, or swap it for a
        FIFO or a link before tokconf writes it. `--sandbox-write` is for what a port keeps of its own (a
        build or model cache), never for what the judge reads or writes."""
        for folder, path in itertools.product(self.writable, judged):
            if _overlap(folder, path):
                raise TokconfError(
                    f"--sandbox-write {folder}: the port could write {path} there, which tokconf judges from or writes",
                    "grant a folder of the port's own, apart from the recordings, tokconf's cache and the output files",
                )


def _overlap(one: Path, other: Path) -> bool:
    """Whether one path holds the other, as given (absolute, links not followed) or as resolved."""
    return any(
        a.is_relative_to(b) or b.is_relative_to(a)
        for a, b in itertools.product(*({Path(os.path.abspath(p)), p.resolve()} for p in (one, other)))
    )


DEFAULT_POLICY = SandboxPolicy()  # `--sandbox auto`, nothing granted


@functools.cache
def bwrap_missing() -> str | None:
    """Why bubblewrap cannot sandbox here (None: it can), asked once per process by running it on
    `true` with every option a port's sandbox uses: a machine whose kernel refuses user namespaces
    says so at once, in bwrap's words."""
    import shutil
    import subprocess  # here: the options that name this module are read at every pytest start

    found = shutil.which(BWRAP)
    if found is None:
        return f"bubblewrap is not installed ({INSTALL})"
    true = shutil.which("true") or "/bin/true"
    try:
        tried = Confiner(Confinement.SANDBOXED, "").popen([true], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as error:
        return f"bubblewrap could not run: {error}"
    try:
        said = tried.communicate(timeout=30)[1].decode("utf-8", errors="replace").strip().splitlines()
    except subprocess.TimeoutExpired:
        tried.kill()
        tried.communicate()
        return "bubblewrap could not run: it did not end within 30 s"
    if tried.returncode != 0:
        return f"bubblewrap cannot make a sandbox here: {said[-1] if said else f'exit {tried.returncode}'}"
    return None


SCRATCH = "/dev/shm"  # a port's scratch in its sandbox: its own /dev's, in memory, gone with it


def _bwrap_options(writable: Sequence[Path], network: bool) -> list[str]:
    """bubblewrap's options for a port: the whole file system read-only and visible (/tmp too: a port,
    its venv or the folder it runs in may be there), a /dev and /proc of its own, its scratch in its own
    /dev/shm (`TMPDIR`), every namespace unshared (the network too unless granted), no capabilities (a
    root user's included), its own session, and killed with its parent.

    A fresh /proc still holds the kernel's settings: `/proc/sys` and the others Flatpak covers (its
    `flatpak-run.c`) are bound read-only over it, for a port that tokconf's user runs as root is root
    in them (a user namespace maps it to root, and the kernel lets root's uid write `/proc/sys` without
    any capability): it could set `kernel.core_pattern` to a program of its own, which the kernel runs
    as root on the host at the next crash."""
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for entry in KERNEL_SETTINGS:
        options += ["--ro-bind-try", entry, entry]
    for folder in writable:
        options += ["--bind", str(folder), str(folder)]
    options += ["--unshare-all", *(["--share-net"] if network else []), "--cap-drop", "ALL"]
    options += ["--die-with-parent", "--new-session", "--setenv", "TMPDIR", SCRATCH]
    return options


KERNEL_SETTINGS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")


@contextlib.contextmanager
def _filter_pipe() -> Iterator[int]:
    """The read end of a pipe holding `SOCKET_FILTER` (a few dozen bytes: far below a pipe's buffer),
    closed here once bubblewrap has been started with it."""
    assert SOCKET_FILTER is not None
    read, write = os.pipe()
    try:
        os.write(write, SOCKET_FILTER)
        os.close(write)
        yield read
    finally:
        os.close(read)


def _socket_filter() -> bytes | None:
    """A seccomp program (classic BPF, as bubblewrap's `--seccomp FD` reads it) for a port's processes,
    each refusal EACCES unless said:

    - `socket(AF_UNIX, …)`, and `socketpair(AF_UNIX, SOCK_DGRAM)`: a read-only file system still lets
      a process connect or send to the sockets in it (a Unix socket is not written by connecting), and
      a port run by root passes their permission checks: Docker's, the D-Bus system bus, syslog's, a
      tmux or ssh-agent socket in /tmp. A datagram socket of a pair still sends to any path
      (`sendto`); a stream pair reaches nothing but its peer, so it stays (Python's `socketpair`,
      asyncio);
    - `io_uring_setup`: io_uring can open and connect sockets without those calls (Docker's own seccomp
      profile refuses it too);
    - `unshare` and `clone` with `CLONE_NEWUSER`, and `clone3` (ENOSYS, whose flags a filter cannot
      read; the C library then uses `clone`): in a user namespace of its own a port holds every
      capability there, and as root's uid could mount the host's cgroup hierarchies read-write over
      the sandbox (Flatpak refuses the same);
    - a system call of another architecture (a 32-bit program on x86-64, x32): ENOSYS, all of them.

    None on a machine this knows no numbers for: there the port keeps them, and `describe` says so."""
    import platform
    import struct

    # (AUDIT_ARCH, socket, socketpair, unshare, clone, clone3, io_uring_setup, x32's first number)
    known = {
        "x86_64": (0xC000003E, 41, 53, 272, 56, 435, 425, 0x40000000),
        "aarch64": (0xC00000B7, 198, 199, 97, 220, 435, 425, None),
    }
    if platform.machine() not in known:
        return None
    arch, socket, pair, unshare, clone, clone3, uring, x32 = known[platform.machine()]
    load, equal, at_least, any_bit, mask, give = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06  # BPF_LD|W|ABS, BPF_JMP|
    # JEQ|K, BPF_JMP|JGE|K, BPF_JMP|JSET|K, BPF_ALU|AND|K, BPF_RET|K
    arg0, arg1 = 16, 24  # seccomp_data.args[N], the low 32 bits (little-endian)
    unix, datagram, new_user = 1, 2, 0x10000000  # AF_UNIX, SOCK_DGRAM, CLONE_NEWUSER
    # Each instruction (code, k, label if true, label if false); None goes on to the next.
    program: list[tuple[int, int, str | None, str | None, str | None]] = [
        (load, 4, None, None, None),  # seccomp_data.arch
        (equal, arch, None, "unknown", None),
        (load, 0, None, None, None),  # seccomp_data.nr
        *([(at_least, x32, "unknown", None, None)] if x32 is not None else []),
        (equal, uring, "refuse", None, None),
        (equal, clone3, "unknown", None, None),
        (equal, socket, "socket", None, None),
        (equal, pair, "pair", None, None),
        (equal, unshare, "flags", None, None),
        (equal, clone, "flags", "allow", None),
        (load, arg0, None, None, "socket"),
        (equal, unix, "refuse", "allow", None),
        (load, arg0, None, None, "pair"),
        (equal, unix, None, "allow", None),
        (load, arg1, None, None, None),
        (mask, 0xF, None, None, None),  # the type, its flags (SOCK_CLOEXEC, SOCK_NONBLOCK) aside
        (equal, datagram, "refuse", "allow", None),
        (load, arg0, None, None, "flags"),
        (any_bit, new_user, "refuse", "allow", None),
        (give, 0x7FFF0000, None, None, "allow"),  # SECCOMP_RET_ALLOW
        (give, 0x00050000 | 13, None, None, "refuse"),  # SECCOMP_RET_ERRNO | EACCES
        (give, 0x00050000 | 38, None, None, "unknown"),  # SECCOMP_RET_ERRNO | ENOSYS
    ]
    at = {label: n for n, (*_, label) in enumerate(program) if label is not None}

    def jump(n: int, label: str | None) -> int:  # a jump counts the instructions after the next one
        return 0 if label is None else at[label] - n - 1

    return b"".join(
        struct.pack("=HBBI", code, jump(n, yes), jump(n, no), k) for n, (code, k, yes, no, _) in enumerate(program)
    )


SOCKET_FILTER = _socket_filter()


@dataclass(frozen=True)
class Confiner:
    """How port processes are started in a run: `argv` turns a command line into the one that runs it
    confined."""

    confinement: Confinement
    reason: str  # why not sandboxed ("" when sandboxed)
    writable: tuple[Path, ...] = ()
    network: bool = False

    @property
    def sandboxed(self) -> bool:
        return self.confinement is Confinement.SANDBOXED

    def popen(self, argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
        """`argv` started confined, in the current folder (`options` as `subprocess.Popen` takes them).
        The program is looked up here first, so one that does not exist is said as such, not as a
        sandbox that exited. A sandbox's seccomp program (`SOCKET_FILTER`) reaches bubblewrap through a
        pipe it is handed, read by it before the port starts."""
        import shutil
        import subprocess

        program = argv[0]
        found = program if os.sep in program else shutil.which(program)
        if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
            raise FileNotFoundError(2, "No such file or directory" if found is None else "Permission denied", program)
        if not self.sandboxed:
            return subprocess.Popen([sys.executable, "-I", "-S", str(KEEPER), str(os.getpid()), *argv], **options)
        bwrap = [shutil.which(BWRAP) or BWRAP, *_bwrap_options(self.writable, self.network), "--chdir", os.getcwd()]
        if SOCKET_FILTER is None:
            return subprocess.Popen([*bwrap, "--", *argv], **options)
        with _filter_pipe() as descriptor:
            return subprocess.Popen(
                [*bwrap, "--seccomp", str(descriptor), "--", *argv], pass_fds=(descriptor,), **options
            )

    @overload
    def status(self, code: int) -> int: ...
    @overload
    def status(self, code: None) -> None: ...
    def status(self, code: int | None) -> int | None:
        """A confined program's exit status as `Popen.returncode` gives an unconfined one's: bubblewrap
        exits with 128 + N for a program killed by signal N (as a shell says it), here -N again; a
        keeper dies of the same signal itself, which needs nothing."""
        if self.sandboxed and code is not None and 128 < code < 128 + signal.NSIG:
            return 128 - code
        return code

    def describe(self) -> str:
        """`--json`'s words for it, and the verdict line's after its note."""
        if self.sandboxed:
            granted = [f"writes {', '.join(map(str, self.writable))}"] * bool(self.writable)
            granted += ["network"] * self.network
            granted += ["Unix sockets, user namespaces (no seccomp numbers here)"] * (SOCKET_FILTER is None)
            return "bubblewrap" + (f" (granted: {'; '.join(granted)})" if granted else "")
        return self.reason


FORKED = Confiner(
    Confinement.KEPT,
    "a factory object runs in forked processes, which bubblewrap cannot enter (name it as module:factory to "
    "sandbox it)",
)
IN_PROCESS = Confiner(Confinement.IN_PROCESS, "--in-process")
OWN_CODE = Confiner(Confinement.NO_PORT, "tokconf's own reference tokenizer, in its process")
