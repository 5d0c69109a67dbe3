"""`--impl` values: `reference` and other registered names, `module:factory`, `cmd:PROGRAM ARGS…`,
`llama.cpp@N`."""

from __future__ import annotations

import importlib.metadata
import shlex
import sys

from harness.core.errors import TokconfError
from harness.implementations.base import Implementation
from harness.implementations.command import CommandImplementation
from harness.implementations.llama_cpp import LlamaCppImplementation
from harness.implementations.python import PythonImplementation, load_factory

ENTRY_POINT_GROUP = "tokconf.implementations"
DEFAULT_TIMEOUT = 10.0  # seconds a cmd: program has for each request, when no --timeout is given


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def resolve(spec: str, timeout: float | None) -> Implementation:
    """Turn an `--impl` value into an implementation. With a `timeout`, a Python implementation runs
    in a worker process (`harness.implementations.serve`), where the timeout can be enforced; without
    one it runs in this process, and `cmd:` programs get `DEFAULT_TIMEOUT`."""
    if spec.startswith("cmd:"):
        return CommandImplementation(spec[4:], timeout or DEFAULT_TIMEOUT)
    if spec.startswith("llama.cpp@"):
        number = spec.removeprefix("llama.cpp@")
        if not number.isdigit():
            raise TokconfError(f"--impl {spec}: expected llama.cpp@BUILD, e.g. llama.cpp@11192")
        return LlamaCppImplementation(int(number))
    python = resolve_python(spec)  # imported here too, so a wrong name fails before a worker starts
    if timeout is None:
        return python
    worker = shlex.join([sys.executable, "-m", "harness.implementations.serve", spec])
    return CommandImplementation(worker, timeout, label=f"in a worker, timeout {timeout:g} s")


def resolve_python(spec: str) -> PythonImplementation:
    """`module:factory` or a registered name."""
    if ":" in spec:
        return PythonImplementation(spec, load_factory(spec))
    points = _entry_points()
    if spec in points:
        return PythonImplementation(spec, points[spec].load())
    known = ", ".join(sorted(points)) or "none installed"
    raise TokconfError(
        f"unknown implementation {spec!r}",
        f"use module:factory, 'cmd:PROGRAM ARGS', llama.cpp@BUILD or a registered name ({known})",
    )
