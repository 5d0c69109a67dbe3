"""The commits between two tags of a llama.cpp git checkout, for bisecting inside a tag range.

The first-parent line from tag bN (excluded) to tag bM (included), oldest first: llama.cpp lands
pull requests as single commits on master, so this is the order they were published in; a merge,
where there is one, is probed as one step. Runs `git` only, on the user's checkout.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import TokconfError


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TokconfError(
            f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}",
            f"give --source a llama.cpp git checkout with its tags (`git -C {repo} fetch --tags`)",
        )
    return done.stdout


def commits_between(repo: Path, good: int, bad: int) -> list[Commit]:
    """Commits after tag b`good` up to and including tag b`bad`, oldest first."""
    for tag in (good, bad):
        _git(repo, "rev-parse", "--verify", "--quiet", f"b{tag}^{{commit}}")
    log = _git(repo, "log", "--first-parent", "--reverse", "--format=%H%x00%s", f"b{good}..b{bad}")
    commits = [Commit(*line.split("\0", 1)) for line in log.splitlines() if line]
    if not commits:
        raise TokconfError(f"no commits between b{good} and b{bad} in {repo}", f"is b{bad} a descendant of b{good}?")
    return commits
