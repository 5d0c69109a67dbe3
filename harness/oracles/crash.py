"""Why a llama.cpp process died, as stable text: the reason a recording stores for an aborted input."""

from __future__ import annotations

import re
import signal

_UNCAUGHT = re.compile(r"terminate called after throwing an instance of '([^']+)'")
_WHAT = re.compile(r"what\(\):\s*(.*)")
_ASSERT = re.compile(r"(GGML_ASSERT\(.*\) failed|GGML_ABORT.*)")


def crash_reason(stderr_tail: str, returncode: int | None) -> str:
    """A short, deterministic description of why a llama.cpp process died, from its stderr.

    The exception type and message (`std::invalid_argument: invalid codepoint`) or the failed assert
    is kept; paths, addresses and timings are not, so re-recording gives the same text.
    """
    uncaught = _UNCAUGHT.findall(stderr_tail)
    what = _WHAT.findall(stderr_tail)
    if uncaught:
        message = what[-1].strip() if what else ""
        return f"abort: uncaught {uncaught[-1]}: {message}".rstrip(": ")
    asserted = _ASSERT.findall(stderr_tail)
    if asserted:
        where = re.compile(r" at \S+")
        return "abort: " + where.sub("", asserted[-1]).strip()
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"
