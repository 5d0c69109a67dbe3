"""A check run's counts: per vocab x section, each verdict, with what the verdict contract needs
beside them (each vocab's group and standing, the reasons of unsupported cases, the problems). Pure
data: `tokconf.reporting.report` draws it, `tokconf.checking.contract` decides on it."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from ..core.outcome import MODES, InputClass, Refusal, RefusalKind
from ..recording.format import VocabGroup
from .contract import Decision, Declines, Gate, Section, Standing, Verdict, decide
from .engine import CaseResult


class Summary:
    """Counts per vocab x section, each vocab's group and standing, the declines per input class (with
    their bytes and the section's recorded bytes) and the reasons of the declines no command can grant
    per vocab x section, and the problems kept for details; `decide` applies the verdict contract."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, Section], Counter[Verdict]] = defaultdict(Counter)
        self.groups: dict[str, VocabGroup] = {}
        self.standing: dict[str, Standing] = {}
        self.problems: list[CaseResult] = []
        self.unsupported_reasons: dict[tuple[str, Section], Counter[str]] = defaultdict(Counter)
        self.declines: dict[tuple[str, Section], Declines] = defaultdict(Declines)
        # Passed cases where llama.cpp aborts (the recording) and the implementation did too, by how:
        # refused, its process died (restarted), or it said it caught the abort.
        self.aborts: dict[tuple[str, Section], Counter[RefusalKind]] = defaultdict(Counter)

    def add(self, results: Iterable[CaseResult], group: VocabGroup) -> None:
        for result in results:
            self.count(result.vocab, result.section, result.verdict, group, result.standing, result.reason,
                       result.declined, agreed_abort(result), len(result.data))  # fmt: skip
            if result.verdict.is_problem:
                self.problems.append(result)

    def count(
        self,
        vocab: str,
        section: Section,
        verdict: Verdict,
        group: VocabGroup,
        standing: Standing = Standing.LOADED,
        reason: str = "",
        declined: InputClass | None = None,
        aborted: RefusalKind | None = None,
        size: int = 0,
    ) -> None:
        """One verdict; an unsupported case's input class (`declined`) when it declined an input; how a
        passed case aborted as llama.cpp does (`aborted`, `agreed_abort`); the input's bytes (`size`)."""
        self.counts[(vocab, section)][verdict] += 1
        self.groups[vocab] = group
        self.standing[vocab] = standing
        if aborted is not None:
            self.aborts[(vocab, section)][aborted] += 1
        declined = declined if verdict is Verdict.UNSUPPORTED else None
        self.declines[(vocab, section)].add(size, declined)
        if verdict is not Verdict.UNSUPPORTED:
            return
        if declined is None or not declined.grantable:  # a grantable class says it all; a reason of its own does not
            self.unsupported_reasons[(vocab, section)][reason] += 1

    def totals(self) -> Counter[Verdict]:
        total: Counter[Verdict] = Counter()
        for counts in self.counts.values():
            total.update(counts)
        return total

    def decide(self, gate: Gate, stale_entries: Sequence[str] = (), unmatched_cases: Sequence[str] = ()) -> Decision:
        """The run's verdict under the contract (`tokconf.checking.contract.decide`)."""
        return decide(self.counts, self.standing, gate, self.unsupported_reasons, stale_entries, unmatched_cases,
                      self.declines)  # fmt: skip


def agreed_abort(result: CaseResult) -> RefusalKind | None:
    """How the implementation aborted where llama.cpp aborts, on a case that passed so (refused, its
    process died, it said it caught the abort); None for any other result, and for the interleaving
    check's replays of the same cases and a vocabulary both refuse to load (no answer at all)."""
    if result.verdict is not Verdict.PASSED or result.section not in MODES or not isinstance(result.expected, Refusal):
        return None
    return result.actual.kind if isinstance(result.actual, Refusal) else None
