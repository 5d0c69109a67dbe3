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

import enum
import functools
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from .errors import TokconfError

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
        if self.mode is SandboxMode.OFF:
            return Confiner(Confinement.KEPT, "--sandbox off", self.writable, self.network)
        missing = bwrap_missing()
        if missing is None:
            return Confiner(Confinement.SANDBOXED, "", tuple(f.resolve() for f in self.writable), self.network)
        if self.mode is SandboxMode.BWRAP:
            raise TokconfError(f"--sandbox bwrap: {missing}", f"{INSTALL}, or run with --sandbox auto")
        return Confiner(Confinement.KEPT, missing, self.writable, self.network)


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
        tried = subprocess.run([found, *_bwrap_options((), False), "--", true], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not run: {error}"
    if tried.returncode != 0:
        said = tried.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return f"bubblewrap cannot make a sandbox here: {said[-1] if said else f'exit {tried.returncode}'}"
    return None


SCRATCH = "/dev/shm"  # a port's scratch in its sandbox: its own /dev's, in memory, gone with it


def _bwrap_options(writable: Sequence[Path], network: bool) -> list[str]:
    """bubblewrap's options for a port: the whole file system read-only and visible (/tmp too: a port,
    its venv or the folder it runs in may be there), a /dev and /proc of its own, its scratch in its own
    /dev/shm (`TMPDIR`), every namespace unshared (the network too unless granted), no capabilities (a
    root user's included), its own session, and killed with its parent."""
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in writable:
        options += ["--bind", str(folder), str(folder)]
    options += ["--unshare-all", *(["--share-net"] if network else []), "--cap-drop", "ALL"]
    options += ["--die-with-parent", "--new-session", "--setenv", "TMPDIR", SCRATCH]
    return options


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

    def argv(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs `argv` confined, in the current folder. The program is looked up
        here first, so one that does not exist is said as such, not as a sandbox that exited."""
        import shutil

        program = argv[0]
        found = program if os.sep in program else shutil.which(program)
        if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
            raise FileNotFoundError(2, "No such file or directory" if found is None else "Permission denied", program)
        if self.sandboxed:
            bwrap = shutil.which(BWRAP) or BWRAP
            return [bwrap, *_bwrap_options(self.writable, self.network), "--chdir", os.getcwd(), "--", *argv]
        return [sys.executable, "-I", "-S", str(KEEPER), str(os.getpid()), *argv]

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
            return "bubblewrap" + (f" (granted: {'; '.join(granted)})" if granted else "")
        return self.reason


FORKED = Confiner(
    Confinement.KEPT,
    "a factory object runs in forked processes, which bubblewrap cannot enter (name it as module:factory to "
    "sandbox it)",
)
IN_PROCESS = Confiner(Confinement.IN_PROCESS, "--in-process")
OWN_CODE = Confiner(Confinement.NO_PORT, "tokconf's own reference tokenizer, in its process")
