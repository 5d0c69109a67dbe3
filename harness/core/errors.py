"""The one error type the command line turns into a message and a non-zero exit code.

Every failure a user can cause or fix (a wrong build number, a hash mismatch, a missing compiler,
a corrupt corpus file) is raised as `TokconfError` with a sentence saying what is wrong and one
saying what to do, so `tokconf` never answers a user mistake with a traceback.
"""

from __future__ import annotations


class TokconfError(Exception):
    """A failure the user can act on; `str()` is the full message shown to them."""

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}\n  what to do: {fix}" if fix else problem)

    def __reduce__(self) -> tuple[type[TokconfError], tuple[str, str]]:
        """Pickled as a plain `TokconfError` with the same words: a subclass's own constructor may take
        other arguments, and a check's worker process sends its errors back this way."""
        return TokconfError, (self.problem, self.fix)
