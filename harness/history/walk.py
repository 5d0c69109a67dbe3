"""Every change point between two published builds, with probes that shrink as they go.

`tokconf bisect` finds the first build that answers otherwise and stops. An upgrade over months of
builds can hold several changes (a WordPiece fix, then a new pre-tokenizer, then a PLaMo-2 rule), in
different vocabularies or the same ones, so the walk splits the range wherever its two ends differ and
goes on in both halves until every change sits between two neighbouring builds.

The two ends are asked every selected case. A build inside a range is asked only the cases whose
outcomes differ between that range's ends: those are the only ones a change inside it can be seen in
under the bisect assumption (an outcome that changes and changes back between two probed builds is not
seen, as with `git bisect`). So after the ends, each probe asks a few hundred inputs, not 400,000, and
its answers to everything else are taken to be its range's lower end's.

Besides the ids, a probe asks what a recording holds of facts and decoding (tokconf.history.bisect.probe), so
a change there is a change point too. Outcomes are compared as `tokconf check` judges them: ids must be
equal, and a refusal equals any refusal (which abort llama.cpp reports can depend on what the process
did before, not on the build: docs/reports/upgrade-b11192-b11434.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..core.errors import TokconfError
from .bisect.probe import Answer, Answers, Key, same
from .bisect.search import Unprobeable

Cases = frozenset[tuple[str, str]]  # (vocab, case id): what a probe inside a range is asked, in every mode
Ask = Callable[[int, Cases | None], Answers]  # a build's answers to those cases (None: to every selected case)


@dataclass(frozen=True)
class Change:
    """Outcomes that answer one way up to `before` and another from `after` on; any build between
    them could not be probed (`skipped`, with why), so the change may lie in one of those."""

    before: int
    after: int
    keys: frozenset[Key]
    skipped: tuple[tuple[int, str], ...] = ()

    @property
    def vocabs(self) -> list[str]:
        return sorted({vocab for vocab, _, _ in self.keys})


@dataclass
class Walk:
    """A walk's result: the builds it covered, every change in build order, and what each probed build
    was asked and answered (`asked`), with the range end whose answers stand for the rest (`base`)."""

    builds: list[int]
    changes: list[Change] = field(default_factory=list)
    asked: dict[int, Answers] = field(default_factory=dict)
    base: dict[int, int] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)

    def outcome(self, build: int, key: Key) -> Answer | None:
        """What a probed build answers for `key`: asked, or else its range's lower end's answer."""
        while key not in self.asked[build]:
            if build not in self.base:
                return None  # not a selected case
            build = self.base[build]
        return self.asked[build][key]

    def answers(self, build: int, keys: Iterable[Key]) -> Answers:
        """A probed build's outcomes for selected `keys`."""
        found = {key: self.outcome(build, key) for key in keys}
        return {key: outcome for key, outcome in found.items() if outcome is not None}

    @property
    def probed(self) -> list[int]:
        return sorted(self.asked)

    def differing(self, lo: int, hi: int, keys: Iterable[Key]) -> frozenset[Key]:
        return frozenset(k for k in keys if not same(self.outcome(lo, k), self.outcome(hi, k)))

    @property
    def stretches(self) -> list[tuple[int, int]]:
        """The builds between change points, as (first, last) pairs of published builds: every build in
        one stretch answers alike (under the bisect assumption), neighbouring stretches differ."""
        firsts = [self.builds[0], *(c.after for c in self.changes)]
        lasts = [*(c.before for c in self.changes), self.builds[-1]]
        return list(zip(firsts, lasts, strict=True))


def walk(builds: list[int], ask: Ask, progress: Callable[[str], None] = lambda _: None) -> Walk:
    """Every change point in `builds` (ascending published builds; the ends must be probeable)."""
    if len(builds) < 2:
        raise TokconfError("a walk needs two builds", "give --from below --to")
    result = Walk(list(builds))
    lo, hi = builds[0], builds[-1]
    for end in (lo, hi):
        progress(f"b{end}: every selected case")
        try:
            result.asked[end] = ask(end, None)
        except Unprobeable as why:
            raise TokconfError(f"b{end} cannot be probed: {why}", "choose another end build") from None
    candidates = list(builds)
    pending = [(lo, hi, result.differing(lo, hi, result.asked[lo]))]
    while pending:
        lo, hi, keys = pending.pop()
        if not keys:
            continue
        inner = [b for b in candidates if lo < b < hi]
        if not inner:
            skipped = tuple((b, result.skipped[b]) for b in builds if lo < b < hi and b in result.skipped)
            result.changes.append(Change(lo, hi, keys, skipped))
            continue
        mid = inner[len(inner) // 2]
        cases = frozenset((vocab, case) for vocab, case, _ in keys)
        progress(f"b{mid}: {len(cases)} cases changing between b{lo} and b{hi}")
        try:
            result.asked[mid] = ask(mid, cases)
        except Unprobeable as why:
            result.skipped[mid] = str(why)
            candidates.remove(mid)
            pending.append((lo, hi, keys))
            continue
        result.base[mid] = lo
        pending += [(mid, hi, result.differing(mid, hi, keys)), (lo, mid, result.differing(lo, mid, keys))]
    result.changes.sort(key=lambda c: c.before)
    return result
