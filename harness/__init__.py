"""tokconf: does a tokenizer give the token ids llama.cpp gives? This module is the public API.

    import tokconf

    run = tokconf.check("mypkg.tok:load", vocabs=["qwen2"])      # or a factory: tokconf.check(load)
    assert run.decision.passed, run.decision.reasons

    with tokconf.oracle("qwen2") as llama:                         # the live llama.cpp, crash-isolated
        llama.encode(b"Hello", add_special=False, parse_special=True)

A port is a factory `load(gguf_path) -> Tokenizer` (see `Tokenizer`); it raises `Unsupported` to
decline a vocabulary or an input (of an `InputClass`, which tokconf verifies on the input) and
`Refused` to refuse an input as llama.cpp does. It is imported and called in worker processes only. Hypothesis
strategies are in `tokconf.strategies`; the pytest plugin adds `--tokconf-impl` and the
`tokconf_oracle` fixture. Every other module is internal and may change in any release.

The implementation lives in the repository's harness/ folder, installed as this package. Its stages,
in the order data flows through them (each imports only from the ones before it): `core` → `builds`
(provisioning llama.cpp) → `synth` → `oracles` (the live llama.cpp) → `corpus` → `recording` →
`implementations` → `checking` → `reporting` → `ecosystem` → `fuzz` → `strategies` → `history` (bisect,
identify, upgrade) → `strength` → `options` → `api` → `cli` → `plugin` (the pytest entry point, which
loads the rest only when a run asks for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use (below)
    from .api import Factory, Oracle, bundled_recordings, check, oracle
    from .checking.contract import Decision, Verdict
    from .checking.run import CheckRun
    from .core.errors import TokconfError
    from .core.outcome import InputClass, Refusal
    from .implementations.base import Decoding, LoadRefused, Refused, Tokenizer, Unsupported
    from .synth.files import vocab_path

__all__ = [
    "CheckRun",
    "Decision",
    "Decoding",
    "Factory",
    "InputClass",
    "LoadRefused",
    "Oracle",
    "Refusal",
    "Refused",
    "TokconfError",
    "Tokenizer",
    "Unsupported",
    "Verdict",
    "__version__",
    "bundled_recordings",
    "check",
    "oracle",
    "vocab_path",
]

_HOMES = {
    "api": ("Factory", "Oracle", "bundled_recordings", "check", "oracle"),
    "synth.files": ("vocab_path",),
    "checking.contract": ("Decision", "Verdict"),
    "checking.run": ("CheckRun",),
    "core.errors": ("TokconfError",),
    "core.outcome": ("InputClass", "Refusal"),
    "implementations.base": ("Decoding", "LoadRefused", "Refused", "Tokenizer", "Unsupported"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use, so that importing the package (as the pytest plugin
    does at every pytest start) costs nothing; `__version__` is read from the installed distribution
    (pyproject.toml is the one source, and recordings stamp it)."""
    if name == "__version__":
        from importlib.metadata import version

        return version("tokconf")
    if name in _HOME:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
