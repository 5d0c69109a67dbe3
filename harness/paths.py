"""Where tokconf keeps what it downloads and builds: outside the repository, reused across runs.

`TOKCONF_CACHE` overrides the location; otherwise the XDG cache folder is used, so a CI machine
builds llama.cpp once and every later run (and every checkout) reuses it.
"""

import os
from collections.abc import Iterable
from pathlib import Path

from harness.errors import TokconfError

REPO_ROOT = Path(__file__).resolve().parent.parent  # corpora/, recordings/ (an editable install's checkout)


def cache_root() -> Path:
    """The cache folder: `$TOKCONF_CACHE`, else `$XDG_CACHE_HOME/tokconf`, else `~/.cache/tokconf`."""
    explicit = os.environ.get("TOKCONF_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tokconf"


def build_root(build: int) -> Path:
    """The folder holding one llama.cpp build's source, cmake tree, log and marker."""
    return cache_root() / "llama.cpp" / f"b{build}"


def yaml_files(paths: Iterable[Path], what: str) -> list[Path]:
    """Every `*.yaml` under the given files or folders: folders sorted by path, files as given."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.rglob("*.yaml")))
        elif path.is_file():
            found.append(path)
        else:
            raise TokconfError(f"{what} path {path} does not exist", f"give a {what} file or folder")
    return found
