"""`--impl` values: `reference` and other registered names, `NAME:ARG` for a registered name that takes
an argument, `module:factory`, `cmd:PROGRAM ARGS…`, `llama.cpp@N`, `llama.cpp:PATH` (a libllama.so or
a llama.cpp source tree of the user's own: tokconf.llama.local; `llama.cpp` is never a module name).

A registered name is an entry point in the `tokconf.implementations` group. Most load the factory
itself (`reference`, `transformers-gguf`): `--impl NAME`. One that takes an argument
(`hf-tokenizers:PATH/tokenizer.json`) loads a callable with an `argument` attribute naming it
(`"PATH/tokenizer.json"`), which is called with ARG to get the factory:
`points[NAME].load()(ARG) -> Callable[[Path], object]`. Such a name must be given its argument, and a
name that takes none is never given one. `NAME:ARG` is looked up among the registered names first; a
value whose part before the colon is not a registered name taking an argument is `module:factory`
(module names never contain `-`, so a registered name like `hf-tokenizers` is never a module)."""

from __future__ import annotations

import importlib.metadata
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from .base import Implementation
from .command import CommandImplementation
from .llama_cpp import local, published
from .python import PythonImplementation, load_factory

ENTRY_POINT_GROUP = "tokconf.implementations"
DEFAULT_TIMEOUT = 10.0  # seconds a cmd: program has for each request, when no --timeout is given
FORMS = "module:factory, NAME:ARG, 'cmd:PROGRAM ARGS', llama.cpp@BUILD, llama.cpp:PATH or a registered name"


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def resolve(spec: str, timeout: float | None) -> Implementation:
    """Turn an `--impl` value into an implementation. With a `timeout`, a Python implementation runs
    in a worker process (`tokconf.implementations.serve`, given the same value), where the timeout can
    be enforced; without one it runs in this process, and `cmd:` programs get `DEFAULT_TIMEOUT`."""
    if spec.startswith("cmd:"):
        return CommandImplementation(spec[4:], timeout or DEFAULT_TIMEOUT)
    if spec.startswith("llama.cpp@"):
        number = spec.removeprefix("llama.cpp@")
        if not number.isdigit():
            raise TokconfError(f"--impl {spec}: expected llama.cpp@BUILD, e.g. llama.cpp@11192")
        return published(int(number))
    if spec.startswith("llama.cpp:"):
        path = spec.removeprefix("llama.cpp:")
        if not path:
            raise TokconfError(
                f"--impl {spec}: expected llama.cpp:PATH", "PATH: a built libllama.so or a llama.cpp source tree"
            )
        return local(Path(path))
    python = resolve_python(spec)  # imported here too, so a wrong name fails before a worker starts
    if timeout is None:
        return python
    worker = shlex.join([sys.executable, "-m", "tokconf.implementations.serve", spec])
    return CommandImplementation(worker, timeout, label=f"in a worker, timeout {timeout:g} s")


def resolve_python(spec: str) -> PythonImplementation:
    """`module:factory`, a registered name, or `NAME:ARG` for a registered name that takes an argument."""
    points = _entry_points()
    name, colon, argument = spec.partition(":")
    if colon and name in points:
        loaded = _load(spec, points[name])
        takes = _argument_of(loaded)
        if takes is not None:
            return PythonImplementation(spec, _factory_for(spec, name, loaded, argument, takes))
        if not _may_be_module(name):
            raise TokconfError(f"--impl {spec}: {name} takes no argument", f"use --impl {name}")
    if colon:
        return PythonImplementation(spec, load_factory(spec))
    if spec in points:
        loaded = _load(spec, points[spec])
        takes = _argument_of(loaded)
        if takes is not None:
            raise TokconfError(f"--impl {spec}: {spec} needs an argument", f"use --impl {spec}:{takes}")
        return PythonImplementation(spec, loaded)
    known = ", ".join(sorted(points)) or "none installed"
    raise TokconfError(f"unknown implementation {spec!r}", f"use {FORMS} ({known})")


def _load(spec: str, point: importlib.metadata.EntryPoint) -> Any:
    """The object an entry point names; its import failing is the user's to fix (a missing extra)."""
    try:
        return point.load()
    except ImportError as error:
        raise TokconfError(
            f"--impl {spec}: cannot import {point.value}: {error}", "install it (peers: pip install -e '.[peers]')"
        ) from None
    except (Exception, SystemExit) as error:
        raise TokconfError(f"--impl {spec}: importing {point.value} failed: {type(error).__name__}: {error}") from None


def _argument_of(loaded: Any) -> str | None:
    """What a registered entry point takes as ARG (its `argument` attribute), or None if it takes none."""
    takes = getattr(loaded, "argument", None)
    return takes if isinstance(takes, str) and callable(loaded) else None


def _may_be_module(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _factory_for(spec: str, name: str, loaded: Any, argument: str, takes: str) -> Callable[[Path], Any]:
    """`loaded(argument)`: the factory; whatever it raises is a usage error, said with the form."""
    if not argument:
        raise TokconfError(f"--impl {spec}: {name} needs an argument", f"use --impl {name}:{takes}")
    try:
        factory = loaded(argument)
    except TokconfError:
        raise
    except (Exception, SystemExit) as error:
        raise TokconfError(
            f"--impl {spec}: {name} cannot use {argument!r}: {type(error).__name__}: {error}",
            f"use --impl {name}:{takes}",
        ) from None
    if not callable(factory):
        raise TokconfError(f"--impl {spec}: {name}({argument!r}) returned no factory, but {factory!r}")
    return factory  # type: ignore[no-any-return]
