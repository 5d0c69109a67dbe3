"""The pytest plugin (`pytest11` entry point `tokconf`): options and ini keys, nothing else at load.

Installing tokconf must not slow or break anyone's pytest, so this module imports only the option
table; the check items (`tokconf.plugin.check`) and the fuzz campaign's
(`tokconf.plugin.fuzz`, which needs hypothesis) are imported and registered only when a run
names recordings or a fuzz target, as hypothesis's own plugin defers its work.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..checking.contract import grants_of
from ..core.outcome import InputClass
from ..fuzz import INI_DATABASE as INI_FUZZ_DATABASE
from ..options import CHECK, FUZZ, add_to_pytest, claim_pattern, recordings_path

if TYPE_CHECKING:
    from ..api import Oracle

INI_RECORDINGS = "tokconf_recordings"
INI_IMPL = "tokconf_impl"
INI_CLAIM = "tokconf_claim"
INI_ALLOW_DECLINE = "tokconf_allow_decline"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_to_pytest(parser.getgroup("tokconf", "tokenizer conformance against llama.cpp recordings"), "tokconf", CHECK)
    fuzz = parser.getgroup("tokconf-fuzz", "differential fuzz campaign against the live llama.cpp")
    add_to_pytest(fuzz, "tokconf-fuzz", FUZZ)
    parser.addini(INI_RECORDINGS, "recordings to check (default: bundled, the b11192 set)", type="linelist", default=[])
    parser.addini(INI_IMPL, "the implementation checked on every run (as --tokconf-impl)", default="")
    parser.addini(INI_CLAIM, "what the implementation claims, vocab/mode globs (as --tokconf-claim)", type="linelist")
    parser.addini(INI_ALLOW_DECLINE, "input classes granted, comma lists (as --tokconf-allow-decline)", type="linelist")
    parser.addini(INI_FUZZ_DATABASE, "the fuzz example database, a folder or redis://HOST:PORT/N", default="")


def implementation(config: pytest.Config) -> str:
    """The implementation a run checks: `--tokconf-impl`, else the ini key; "" for none."""
    return str(config.getoption("tokconf_impl") or config.getini(INI_IMPL) or "")


def recordings(config: pytest.Config) -> list[Path]:
    """The recordings a run checks: `--tokconf-recordings`, else the ini key, else the bundled set."""
    given: list[Path] = config.getoption("tokconf_recordings")
    base = config.inipath.parent if config.inipath else config.rootpath  # the ini key's paths are relative to it
    return given or [base / recordings_path(text) for text in config.getini(INI_RECORDINGS)]


def claims(config: pytest.Config) -> tuple[str, ...]:
    """What the implementation claims: `--tokconf-claim`, else the ini key (checked as the option is)."""
    given = config.getoption("tokconf_claim") or config.getini(INI_CLAIM)
    try:
        return tuple(claim_pattern(pattern) for pattern in given)
    except argparse.ArgumentTypeError as error:
        raise pytest.UsageError(f"tokconf: {INI_CLAIM}: {error}") from None


def granted(config: pytest.Config) -> frozenset[InputClass]:
    """The input classes the run grants: `--tokconf-allow-decline`, else the ini key, else the default
    (checked as the option is)."""
    given = config.getoption("tokconf_allow_decline") or config.getini(INI_ALLOW_DECLINE)
    try:
        return grants_of(given)
    except ValueError as error:
        raise pytest.UsageError(f"tokconf: {INI_ALLOW_DECLINE}: {error}") from None


def pytest_configure(config: pytest.Config) -> None:
    impl = implementation(config)
    paths = recordings(config)
    fuzz = config.getoption("tokconf_fuzz")
    if paths and not impl:
        raise pytest.UsageError(
            "tokconf: recordings are named but no implementation: add --tokconf-impl mypkg.tok:load "
            f"(or the {INI_IMPL} ini key); tokconf checks only what you name"
        )
    if impl or fuzz:
        config.addinivalue_line("markers", "xdist_group(name): pytest-xdist keeps a group on one worker (loadgroup)")
    if impl:
        from ..core.files import BUNDLED_RECORDINGS
        from .check import CheckPlugin

        plugin = CheckPlugin(config, impl, paths or [BUNDLED_RECORDINGS], paths, claims(config), granted(config))
        config.pluginmanager.register(plugin, CheckPlugin.NAME)
    if fuzz:
        from .fuzz import FuzzPlugin

        config.pluginmanager.register(FuzzPlugin(config), FuzzPlugin.NAME)


@pytest.fixture(scope="session")
def tokconf_oracle() -> Iterator[Callable[..., Oracle]]:
    """The live llama.cpp for a port's own tests: `tokconf_oracle("qwen2")` (or a GGUF path, and
    `build=N`) is an open `tokconf.Oracle`, one per vocabulary and build for the whole session, closed
    at its end. It needs the build (`tokconf llama build`); without it the test errs saying so."""
    from contextlib import ExitStack

    from ..api import oracle

    opened: dict[tuple[str, int | None], Oracle] = {}
    with ExitStack() as stack:

        def get(vocab: str | Path, build: int | None = None) -> Oracle:
            key = (str(vocab), build)
            if key not in opened:
                opened[key] = stack.enter_context(oracle(vocab, build))
            return opened[key]

        yield get
