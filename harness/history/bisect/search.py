"""Bisection over an ordered list of builds, with builds that cannot be probed skipped.

The answer of `good` and of `bad` differ; every build in between answers either like `good` or not.
The search keeps the last build known to answer like `good` and the first known not to, probing the
middle of what is left, as `git bisect` does; a build that cannot be fetched or compiled is skipped
(`git bisect skip`): dropped from the list with its reason, and the next middle probed instead.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ...core.errors import TokconfError


class Unprobeable(Exception):
    """A build that could not be fetched, compiled or run: skipped, with the reason."""


T = TypeVar("T", bound=Hashable)  # a published build number, or in a commit-level bisect also a commit


@dataclass
class Bisection(Generic[T]):
    last_good: T
    first_bad: T
    probed: list[T] = field(default_factory=list)  # in the order they were probed
    skipped: dict[T, str] = field(default_factory=dict)  # build -> why it could not be probed
    between: list[T] = field(default_factory=list)  # skipped builds left between the two: the change may be in any


def bisect(builds: list[T], probe: Callable[[T], Hashable]) -> Bisection[T]:
    """The last of `builds` (in order: the first is good, the last bad) that answers like the first,
    and the first after it that does not."""
    if len(builds) < 2:
        raise TokconfError("a bisect needs a good and a bad build", "give --good below --bad")
    result = Bisection(builds[0], builds[-1])
    good, bad = (_end(probe, end) for end in (builds[0], builds[-1]))
    result.probed += [builds[0], builds[-1]]
    if good == bad:
        raise TokconfError(
            f"b{builds[0]} and b{builds[-1]} answer the same on every selected case: nothing to bisect",
            "choose builds that differ (`tokconf diff` of their recordings shows where), or other cases",
        )
    candidates = list(builds)
    lo, hi = 0, len(candidates) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        build = candidates[mid]
        try:
            answer = probe(build)
        except Unprobeable as why:
            result.skipped[build] = str(why)
            del candidates[mid]
            hi -= 1
            continue
        result.probed.append(build)
        if answer == good:
            lo = mid
        else:
            hi = mid
    result.last_good, result.first_bad = candidates[lo], candidates[hi]
    position = {b: i for i, b in enumerate(builds)}
    low, high = position[result.last_good], position[result.first_bad]
    result.between = [b for b in result.skipped if low < position[b] < high]
    return result


def _end(probe: Callable[[T], Hashable], end: T) -> Hashable:
    """An end's answer: an end that cannot be probed leaves nothing to compare with, so it is an error
    (a build inside the range is skipped instead)."""
    try:
        return probe(end)
    except Unprobeable as why:
        label = f"b{end}" if isinstance(end, int) else str(end)
        raise TokconfError(f"{label} cannot be probed: {why}", "choose another end build") from None
