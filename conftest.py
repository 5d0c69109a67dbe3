"""Repository-wide pytest configuration.

Tests that need the pinned llama.cpp get it from the `llama_build` fixture. When the build is
missing they fail with the command that makes it: a missing oracle is never a skipped (and so
silently passing) check.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from tokconf.builds.build import Build, require_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.core.errors import TokconfError
from tokconf.core.files import cache_root

pytest_plugins = ["pytester"]
CACHE = cache_root()  # read before pytester moves HOME


@pytest.fixture(scope="session")
def llama_build() -> Build:
    """The pinned build (b11192) from the cache, as libllama users get it: the tokenizer-only library
    (tests/test_tokenizer_build.py proves it answers as the full build)."""
    try:
        return require_build(DEFAULT_BUILD, tokenize=False)
    except TokconfError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def llama_full_build() -> Build:
    """The pinned build's full CMake build, for what only it has: `llama-tokenize`, and the provenance
    of a libllama in its build folder (libllama-common's build info, the CMakeCache.txt naming its tree)."""
    try:
        return require_build(DEFAULT_BUILD)
    except TokconfError as error:
        pytest.fail(str(error), pytrace=False)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (tox): a worker more than the cores. A share of the tests wait rather than compute (a port
    hanging past its timeout, a sandbox starting, a child's exit), and the extra worker fills those waits:
    tox's tests took 419 s with 3 workers on 2 idle cores, 476 s with 2 (docs/benchmarks.md)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


# Whole files of proofs: the three builds' equality, the docs' commands, the example ports, the installed wheel and
# one failing port through every front end. Single tests elsewhere are marked `conformance` where they prove the
# same of every front end (the CLI's case stays in `tox`; the plugin under xdist is a front end) or of every
# bundled recording or shipped vocabulary.
CONFORMANCE = ("test_tokenizer_build.py", "test_docs_commands.py", "test_examples.py", "test_installed.py",
               "test_front_ends.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs the pinned build (it asks for `llama_build` or `llama_full_build`) is marked `oracle`, so
    `-m "not oracle"` runs the rest without llama.cpp. The conformance proofs (`CONFORMANCE`'s files, and
    every `long` test) are marked `conformance`: `tox` runs the rest, `tox -e conformance` them, CI both.
    Tests marked `long` (minutes each: every bundled input asked of a llama.cpp build) go first, so
    xdist's workers run the rest beside them instead of waiting on them at the end (collection order put
    them among the last files)."""
    for item in items:
        if {"llama_build", "llama_full_build"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.oracle)
        if item.path.name in CONFORMANCE or item.get_closest_marker("long") is not None:
            item.add_marker(pytest.mark.conformance)
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: the same order on every worker


@pytest.fixture
def sandbox(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A port's test folder. In-process runs restore `sys.modules` afterwards, so a module first
    imported inside one (numpy, through gguf or a peer's library) would be imported again by the next,
    which numpy refuses: a test module using this imports its ports before any run."""
    tests = Path(__file__).resolve().parent / "tests" / "support"
    monkeypatch.setenv("TOKCONF_CACHE", str(CACHE))  # pytester moves HOME
    monkeypatch.syspath_prepend(str(tests))  # fake_impls, real_ports
    monkeypatch.setenv("PYTHONPATH", str(tests))  # for subprocess runs (xdist workers)
    return pytester


@pytest.fixture
def port_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """Writes a port module, `port_module(NAME, SOURCE)` (the source dedented), into a folder on the
    path of tokconf's workers and of this process."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))

    def write(name: str, source: str) -> None:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))

    return write
