"""`--impl` values: `reference` and other registered names, `NAME:ARG` for a registered name that takes
an argument, `module:factory`, `cmd:PROGRAM ARGS…`, `llama.cpp@N`, `llama.cpp:PATH` (a libllama.so or
a llama.cpp source tree of the user's own: tokconf.builds.local; `llama.cpp` is never a module name).

A registered name is an entry point in the `tokconf.implementations` group. Most load the factory
itself (`reference`, `transformers-gguf`): `--impl NAME`. One that takes an argument
(`hf-tokenizers:PATH/tokenizer.json`) loads a callable with an `argument` attribute naming it
(`"PATH/tokenizer.json"`), which is called with ARG to get the factory:
`points[NAME].load()(ARG) -> Callable[[Path], object]`. Such a name must be given its argument, and a
name that takes none is never given one. `NAME:ARG` is looked up among the registered names first; a
value whose part before the colon is not a registered name taking an argument is `module:factory`
(module names never contain `-`, so a registered name like `hf-tokenizers` is never a module)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..builds.provide import default_lock, provide
from ..core.errors import TokconfError
from ..core.isolated import PORT_PATH
from ..core.sandbox import DEFAULT_POLICY, FORKED, IN_PROCESS, OWN_CODE, Confiner, SandboxPolicy
from ..core.timeouts import CLI_TIMEOUTS, TimeoutOptions
from .base import Implementation
from .command import DEFAULT_LOAD_TIMEOUT, DEFAULT_TIMEOUT, CommandImplementation, Launcher
from .command_worker import forked
from .llama_cpp import Limits, local, published
from .python import PythonImplementation, resolve_python

IN_PROCESS_ALWAYS = "reference"  # tokconf's own code: trusted, and the main job's speed


def resolve(
    spec: str,
    timeout: float | None = None,
    *,
    load_timeout: float | None = None,
    in_process: bool = False,
    options: TimeoutOptions = CLI_TIMEOUTS,
    sandbox: SandboxPolicy = DEFAULT_POLICY,
) -> Implementation:
    """Turn an `--impl` value into an implementation. A Python implementation (but the reference) runs
    in worker processes (`tokconf.implementations.command_worker`, given the same value), one per vocabulary,
    and is imported there only: its code never runs in this process, which judges it. With
    `in_process` it is imported and called here (for debugging), and says it is not contained.
    `timeout`: seconds for each answer; `load_timeout`: for starting and loading one vocabulary;
    `options`: the options that set them where the run was started (named by a timeout's message);
    `sandbox`: how every process of the implementation is confined (`tokconf.core.sandbox`)."""
    answer, load = timeout or DEFAULT_TIMEOUT, load_timeout or DEFAULT_LOAD_TIMEOUT
    if spec.startswith("cmd:"):
        return CommandImplementation.of_command(spec[4:], answer, load, options, sandbox.confiner())
    if spec.startswith("llama.cpp@"):
        number = spec.removeprefix("llama.cpp@")
        if not (number.isascii() and number.isdigit()):
            raise TokconfError(f"--impl {spec}: expected llama.cpp@BUILD, e.g. llama.cpp@11192")
        made = provide(int(number), default_lock())  # fetched, verified and built on first use: one trust policy
        return published(made, Limits(timeout, load_timeout, options), sandbox.confiner())
    if spec.startswith("llama.cpp:"):
        path = spec.removeprefix("llama.cpp:")
        if not path:
            raise TokconfError(
                f"--impl {spec}: expected llama.cpp:PATH", "PATH: a built libllama.so or a llama.cpp source tree"
            )
        return local(Path(path), Limits(timeout, load_timeout, options), sandbox.confiner())
    if spec == IN_PROCESS_ALWAYS:  # tokconf's own, never an entry point an installed package registers by its name
        from .reference import from_gguf  # tokconf_reference is slow to import: only when it is asked for

        return PythonImplementation(spec, from_gguf)
    if in_process:  # imported here, from where its worker would import it: the run says NOT CONTAINED
        sys.path[:0] = [entry for entry in json.loads(port_path()) if entry not in sys.path]
        python = resolve_python(spec)
        python.contained = False
        return python
    # -P: the path is the caller's
    worker = (sys.executable, "-P", "-m", "tokconf.implementations.command_worker", spec)
    launcher = Launcher(
        worker, sandbox.confiner(), {PORT_PATH: port_path()}, label=f"--impl {spec} (its worker process)"
    )
    return CommandImplementation(launcher, answer, load, label=None, options=options)


def confiner_of(spec: str, in_process: bool, sandbox: SandboxPolicy) -> Confiner:
    """How `resolve(spec, in_process=..., sandbox=...)` holds the implementation's processes, said
    without making it (the pytest plugin's controller decides for workers that made it)."""
    if spec == IN_PROCESS_ALWAYS:
        return OWN_CODE
    if in_process and not spec.startswith(("cmd:", "llama.cpp@", "llama.cpp:")):
        return IN_PROCESS
    return sandbox.confiner()


def port_path() -> str:
    """The `sys.path` a Python port's worker imports it with (JSON): the caller's, or, where `tokconf`
    runs isolated (`tokconf.core.isolated`), the one the command was started with, which its
    launcher left in the environment."""
    return os.environ.get(PORT_PATH) or json.dumps(sys.path)


def contained_factory(
    name: str,
    factory: Callable[[Path], Any],
    timeout: float | None = None,
    load_timeout: float | None = None,
    options: TimeoutOptions = CLI_TIMEOUTS,
) -> Implementation:
    """A factory object (`tokconf.check(load)`): served by this process forked, one fork per vocabulary,
    so its calls cannot reach the caller's verdict (its import already happened here, by the caller)."""
    impl = PythonImplementation(name, factory)
    launcher = Launcher((name,), FORKED, target=forked(impl), label=f"{name} (its forked worker process)")
    return CommandImplementation(launcher, timeout or DEFAULT_TIMEOUT, load_timeout or DEFAULT_LOAD_TIMEOUT,
                                 label=None, options=options)  # fmt: skip
