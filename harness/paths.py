"""Where tokconf keeps what it downloads and builds: outside the repository, reused across runs.

`TOKCONF_CACHE` overrides the location; otherwise the XDG cache folder is used, so a CI machine
builds llama.cpp once and every later run (and every checkout) reuses it.
"""

import os
from pathlib import Path


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
