"""Whether a libllama can be the oracle at all, and what it says it is: for a llama.cpp of the user's
own (tokconf.builds.local), asked once before any vocabulary.

A library of another architecture, one whose libggml*.so cannot be found, or a file that is not
libllama would otherwise fail at the first vocabulary, where the oracle reads a load failure as
llama.cpp refusing that vocabulary (`VocabRefused`), and a recording would hold it as every case's
outcome. Asked here, it is an error naming the library and why. The library is loaded in the worker
process (`python -m tokconf.oracles.libllama_worker --info`), never in this one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..builds.build import Build
from ..core import isolated
from ..core.errors import TokconfError
from ..core.sandbox import Confiner
from ..core.supervisor import Framing, Program, ProgramFailed, ProgramTimedOut
from .crash import crash_reason
from .libllama import PARAMS_SAID
from .libllama_client import DEFAULT_TIMEOUT, STDERR_READ


@dataclass(frozen=True)
class LibraryInfo:
    """What a libllama says about itself (`tokconf.oracles.libllama.describe_library`); None where it
    says nothing."""

    version: str | None  # llama_version(): LLAMA_VERSION (src/llama.cpp), e.g. 0.5.0-dev
    system_info: str | None  # llama_print_system_info(): each ggml backend's features
    build_info: str | None  # b<LLAMA_BUILD_NUMBER>-<LLAMA_COMMIT>, built with …, from libllama-common beside it

    def describe(self) -> str:
        """The parts a check's implementation name carries (the system info is long: recordings keep it)."""
        version = f"llama_version {self.version}" if self.version else "no llama_version"
        build_info = f"build info {self.build_info}" if self.build_info else "no build info beside it"
        return f"{version}, {build_info}"


def probe_library(build: Build, timeout: float = DEFAULT_TIMEOUT, confiner: Confiner | None = None) -> LibraryInfo:
    """Load the build's libllama in a worker process (held as `confiner` says: a user's library runs its
    own code as it loads) and read what it says about itself, or raise an error saying why it cannot
    serve as the oracle."""
    args = ["--lib", str(build.libllama), "--header", str(build.llama_h), "--info"]
    for path in build.include_dirs:
        args += ["--include", str(path)]
    command = isolated.command("tokconf.oracles.libllama_worker", args)
    what = f"llama.cpp {build.source.label()}"
    if str(build.libllama) != build.source.origin:  # a tree's library, or one reached through a link
        what += f" (libllama {build.libllama})"
    fix = (
        "give a libllama.so built for this machine, with the libggml*.so it was built with findable "
        "(beside it, through its RUNPATH, or on LD_LIBRARY_PATH)"
    )
    env = {**isolated.environment(), "GGML_NO_BACKTRACE": "1"}
    worker = Program(command, timeout, env, confiner, Framing.LENGTH)
    try:
        frame = worker.receive()
    except ProgramTimedOut:
        raise TokconfError(f"{what} did not load within {timeout:g} s", fix) from None
    except ProgramFailed:  # it died loading: a static initializer aborted, or it crashed
        reason = crash_reason(worker.stderr.text(STDERR_READ), worker.end())
        raise TokconfError(f"{what} cannot be the oracle: loading it, the worker died ({reason})", fix) from None
    finally:
        worker.close()
    if frame[:1] != b"O":
        why = frame[1:].decode(errors="replace")
        if why.startswith("it does not export") and "llama_backend_init" not in why:
            # a libllama (llama_backend_init is in every one), a fork's (a Python package's) that keeps the
            # model-pointer API llama_vocab replaced: the missing are the llama_vocab calls
            fix = (
                "this libllama has no llama_vocab API (a fork or an older llama.cpp keeping the model-pointer "
                "calls, llama_tokenize(model, …)): check it through a `cmd:` adapter that calls it and declares "
                '"llama_cpp": true in its hello (docs/line-protocol.md), or give a tree whose llama.h has '
                "llama_model_get_vocab"
            )
        elif why.startswith("it does not export"):  # libggml*.so, libllama-common.so, another library
            fix = "give the libllama.so of a llama.cpp build (the libllama, not another of its libraries)"
        elif why.startswith(PARAMS_SAID):  # libllama.ParamsMismatch: bound with another version's llama.h
            fix = (
                "bind it with its own llama.h: give its llama.cpp source tree instead (llama.cpp:TREE), or keep "
                "the library in its CMake build folder or an install prefix with include/llama.h (docs/llama-local.md)"
            )
        raise TokconfError(f"{what} cannot be the oracle: {why}", fix)
    said = json.loads(frame[1:])
    return LibraryInfo(said["version"], said["system_info"], said["build_info"])
