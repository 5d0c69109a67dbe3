"""The pytest plugin (`pytest11` entry point `tokconf`): options and ini keys, nothing else at load.

Installing tokconf must not slow or break anyone's pytest, so this module imports only the option
table; the check engine (`tokconf.check.pytest_items`) and the fuzz campaign
(`tokconf.fuzz.pytest_items`, which needs hypothesis) are imported and registered only when a run
names recordings or a fuzz target, as hypothesis's own plugin defers its work.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from .fuzz import INI_DATABASE as INI_FUZZ_DATABASE
from .options import CHECK, FUZZ, add_to_pytest, claim_pattern

INI_RECORDINGS = "tokconf_recordings"
INI_IMPL = "tokconf_impl"
INI_CLAIM = "tokconf_claim"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_to_pytest(parser.getgroup("tokconf", "tokenizer conformance against llama.cpp recordings"), "tokconf", CHECK)
    fuzz = parser.getgroup("tokconf-fuzz", "differential fuzz campaign against the live llama.cpp")
    add_to_pytest(fuzz, "tokconf-fuzz", FUZZ)
    parser.addini(INI_RECORDINGS, "recordings to check (default: the bundled b11192 set)", type="paths", default=[])
    parser.addini(INI_IMPL, "the implementation checked on every run (as --tokconf-impl)", default="")
    parser.addini(INI_CLAIM, "what the implementation claims, vocab/mode globs (as --tokconf-claim)", type="linelist")
    parser.addini(INI_FUZZ_DATABASE, "the fuzz example database, a folder or redis://HOST:PORT/N", default="")


def implementation(config: pytest.Config) -> str:
    """The implementation a run checks: `--tokconf-impl`, else the ini key; "" for none."""
    return str(config.getoption("tokconf_impl") or config.getini(INI_IMPL) or "")


def recordings(config: pytest.Config) -> list[Path]:
    """The recordings a run checks: `--tokconf-recordings`, else the ini key, else the bundled set."""
    given = [Path(p) for p in config.getoption("tokconf_recordings")]
    return given or [Path(p) for p in config.getini(INI_RECORDINGS)]


def claims(config: pytest.Config) -> tuple[str, ...]:
    """What the implementation claims: `--tokconf-claim`, else the ini key (checked as the option is)."""
    given = config.getoption("tokconf_claim") or config.getini(INI_CLAIM)
    try:
        return tuple(claim_pattern(pattern) for pattern in given)
    except argparse.ArgumentTypeError as error:
        raise pytest.UsageError(f"tokconf: {INI_CLAIM}: {error}") from None


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
        from .check.pytest_items import CheckPlugin
        from .core.files import BUNDLED_RECORDINGS

        plugin = CheckPlugin(config, impl, paths or [BUNDLED_RECORDINGS], paths, claims(config))
        config.pluginmanager.register(plugin, CheckPlugin.NAME)
    if fuzz:
        from .fuzz.pytest_items import FuzzPlugin

        config.pluginmanager.register(FuzzPlugin(config), FuzzPlugin.NAME)
