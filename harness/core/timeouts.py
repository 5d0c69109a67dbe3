"""How long an implementation may take, and which option says so where the run was started.

Every timeout message names the option that sets it (`--timeout`, the pytest plugins' own flags,
`tokconf.check(timeout=...)`): "no answer within 10 s" alone sends a user of a loaded machine to the
source code. Here, below every front end and both transports (a `cmd:` program, the live llama.cpp
worker), so each names it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wait:
    """How long one answer may take, and the option that sets it, which a timeout's message names
    (None where no option does: the recorder's own llama.cpp worker)."""

    seconds: float
    option: str | None = "--timeout"

    def describe(self) -> str:
        return f"{self.seconds:g} s" + (f" (the {self.option} option)" if self.option else "")


@dataclass(frozen=True)
class TimeoutOptions:
    """The options that set the per-answer and the load timeout where the run was started, which every
    timeout message names (`tokconf check` and `tokconf fuzz` by default; the pytest plugin its own)."""

    answer: str = "--timeout"
    load: str = "--load-timeout"


CLI_TIMEOUTS = TimeoutOptions()  # tokconf check, tokconf fuzz; the pytest plugins name their own
API_TIMEOUTS = TimeoutOptions("tokconf.check timeout=", "tokconf.check load_timeout=")
