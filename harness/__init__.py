"""tokconf: record what a pinned llama.cpp answers for a tokenizer, and check other tokenizers against it.

The stages, in the order data flows through them (each imports only from the ones before it):
`core` → `llama` → `synth` → `oracle` → `corpus` → `recordings` → `record` → `implementations` → `check` →
`ecosystem` → `fuzz` → `bisect` → `options` → `cli`; `plugin` is the pytest entry point and loads the rest only
when asked to.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Refused", "Unsupported", "__version__"]


def __getattr__(name: str) -> Any:
    """The public names, loaded on first use so that importing the package (as the pytest plugin does
    at every pytest start) costs nothing: `__version__`, read from the installed distribution
    (pyproject.toml is the one source, and recordings stamp it); `Unsupported`, which a port's
    factory raises to decline a vocabulary and its `encode` for an input it cannot be given; and
    `Refused`, which its `encode` raises to refuse an input as llama.cpp does (docs/checking.md)."""
    if name == "__version__":
        from importlib.metadata import version

        return version("tokconf")
    if name in ("Unsupported", "Refused"):
        from .implementations import base

        return getattr(base, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
