"""The verdict contract: what a case's verdict is, and what PASS means for a whole run.

One module, so that every front end judges alike: `tokconf check` (in-process, with `--timeout` in a
worker, `cmd:` programs of protocol 1 and 2), the pytest plugin (with and without xdist), `tokconf
fuzz` and `tokconf bisect` all call `judge` for a case and `decide` for a run. docs/checking.md, "The
verdict contract", is this module in a table.

A run PASSES only when it judged what the implementation claims:

- The *scope* is what the implementation claims: every vocabulary it loaded (did not decline with
  `Unsupported`) x every mode checked, or, with `--claim vocab/mode` patterns, exactly those. A
  vocabulary claimed but declined fails the run.
- Every unit of the scope (one vocabulary in one mode) needs passed cases, and by default every case
  of it passed but those declined as a *verified* input class (not UTF-8, holds NUL, holds a special
  token's text with parse_special off, longer than the port's declared limit, ...: `InputClass`,
  checked on the input by the engine). `min_coverage` loosens that, explicitly: the share of the
  unit's other cases that must pass. So a port that declines exactly the inputs it gets wrong (as
  `other`) fails, and one that declines only what its API cannot take passes. Facts alone never
  pass; neither do the cases of a recording of a vocabulary llama.cpp refuses to load (both sides
  refusing is agreement, not coverage).
- Nothing failed, broke (error) or unexpectedly passed (xpassed), anywhere; with `strict`, nothing was
  unsupported either.

Conformance counts judged cases only (unsupported ones are not judged) and only `passed` conforms:
an expected failure is a known divergence, never conformance.
"""

from __future__ import annotations

import enum
import fnmatch
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from ..core.outcome import MODES, Mode, Outcome, Refusal, RefusalKind
from ..core.printable import printable
from ..core.sandbox import OWN_CODE, Confinement, Confiner

# What a result is about: a case in one mode, a vocab fact, a decoding check, or a case replayed with
# other vocabularies loaded into the same process (its column in tables).
Section = Mode | Literal["facts", "decode", "interleave"]
FACTS: Section = "facts"
DECODE: Section = "decode"  # cases: pieces-special, pieces-plain and the DETOKENIZE settings
INTERLEAVE: Section = "interleave"  # cases: `MODE/CASE` (tokconf.checking.interleave)
S = TypeVar("S", bound=str)  # a section name: a mode, facts or decode

# The share of a unit's cases, but its verified declines, that must pass: all of them. A port that
# declines the inputs its API cannot take (not UTF-8, NUL: 7-16% of a shipped recording's cases) says
# so with their class and passes; an unverified decline (`other`) or an expected failure is a case not
# passed, which only an explicit `--min-coverage` below 100 allows.
DEFAULT_MIN_COVERAGE = 1.0


class Verdict(enum.Enum):
    """What one check came to (docs/checking.md): passed or failed against llama.cpp's answer, an error
    (the implementation broke), unsupported (it declined: never judged, never a pass), or an expected
    failure that failed (xfailed) or unexpectedly passed (xpassed)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    XFAILED = "xfailed"
    XPASSED = "xpassed"

    @property
    def is_problem(self) -> bool:
        """Whether it fails the gate wherever it occurs."""
        return self in (Verdict.FAILED, Verdict.ERROR, Verdict.XPASSED)

    @property
    def is_judged(self) -> bool:
        """Whether the implementation's answer was compared with llama.cpp's (all but unsupported)."""
        return self is not Verdict.UNSUPPORTED


class Standing(enum.Enum):
    """How a vocabulary stood with the implementation, which decides whether it is in scope."""

    LOADED = "loaded"  # the implementation opened it: its modes are in scope
    DECLINED = "declined"  # it raised `Unsupported` / answered `ok: false` / does not serve the type
    BROKEN = "broken"  # loading it broke (any other exception, an exit, a crash): every case an error
    LLAMA_REFUSES = "llama-refuses"  # the recording is llama.cpp's load refusal (`facts.load_error`)
    LOAD_REFUSED = "load-refused"  # a llama.cpp refused what the recording's build loaded: in scope, all failed


def judge(expected: Outcome, actual: Outcome) -> tuple[Verdict, str]:
    """One answer against the recording. A refusal passes only against llama.cpp's refusal (it aborts
    on some inputs: `unicode_cpt_from_utf8` throws on a code point above U+10FFFF); a broken answer
    is an error and an undeclared one can never reach here as unsupported (the adapters decide).

    An implementation whose process ended on the input (`DIED`: a binding whose llama.cpp aborted,
    taking the process with it) agrees with a recorded llama.cpp abort, and is an error on any other
    input, as a crash always was. One that caught the abort and said so (`ABORTED`) is judged as a
    refusal, and where llama.cpp gave ids its failure is named as an abort."""
    if isinstance(actual, Refusal) and actual.kind is RefusalKind.BROKEN:
        return Verdict.ERROR, actual.reason
    if isinstance(actual, Refusal) and actual.kind is RefusalKind.UNSUPPORTED:
        return Verdict.UNSUPPORTED, actual.reason
    if isinstance(expected, Refusal):
        if isinstance(actual, Refusal):
            return Verdict.PASSED, ""
        return Verdict.FAILED, f"llama.cpp refused ({expected.reason}) but the implementation returned ids"
    if isinstance(actual, Refusal) and actual.kind is RefusalKind.DIED:
        return Verdict.ERROR, actual.reason
    if isinstance(actual, Refusal) and actual.kind is RefusalKind.ABORTED:
        return Verdict.FAILED, f"the implementation aborted ({actual.reason}) where llama.cpp gave ids"
    if isinstance(actual, Refusal):
        return Verdict.FAILED, f"the implementation refused: {actual.reason}"
    if actual == expected:
        return Verdict.PASSED, ""
    return Verdict.FAILED, "different ids"


def listed(verdict: Verdict) -> Verdict:
    """The verdict of a case the expected-failure file lists: a failure becomes xfailed, a pass
    xpassed (it fails the run, so the entry is removed once fixed). Errors and unsupported cases stay
    what they are: an entry documents a divergence, it cannot excuse a crash or a declined input."""
    if verdict is Verdict.FAILED:
        return Verdict.XFAILED
    if verdict is Verdict.PASSED:
        return Verdict.XPASSED
    return verdict


@dataclass(frozen=True)
class Claim:
    """What an implementation claims to tokenize as llama.cpp does (`--claim`, `--tokconf-claim`,
    the `tokconf_claim` ini key): `vocab/mode` patterns with shell-style globs; none means "every
    vocabulary I load, in every mode checked"."""

    patterns: tuple[str, ...] = ()
    min_coverage: float = DEFAULT_MIN_COVERAGE

    @property
    def explicit(self) -> bool:
        return bool(self.patterns)

    def covers(self, vocab: str, mode: str) -> bool:
        return not self.patterns or any(fnmatch.fnmatchcase(f"{vocab}/{mode}", p) for p in self.patterns)

    def covers_vocab(self, vocab: str) -> bool:
        return any(self.covers(vocab, mode) for mode in MODES)

    def unmatched(self, units: Iterable[tuple[str, str]]) -> list[str]:
        """The patterns that match no checked unit (a typo must not shrink a gate to nothing)."""
        found = [f"{v}/{m}" for v, m in units]
        return [p for p in self.patterns if not fnmatch.filter(found, p)]


@dataclass(frozen=True)
class Gate:
    """A run's settings that decide PASS: the claim, `--strict` (nothing unsupported at all) and
    `--strict-xfail` (an expected-failure entry that matches nothing fails the run)."""

    claim: Claim = Claim()
    strict: bool = False
    strict_xfail: bool = False
    # Whether the front end takes a claim (`tokconf check`, pytest; not a fuzz campaign): a mode that
    # judged nothing, every case declined, is then pointed to the claim that leaves it out.
    claimable: bool = False


@dataclass(frozen=True)
class Unit:
    """One vocabulary in one mode, as the run judged it; `verified`: its unsupported cases declined as
    a class tokconf verified on the input, which coverage does not count."""

    vocab: str
    mode: str
    counts: Counter[Verdict]
    verified: int = 0

    @property
    def recorded(self) -> int:
        """Its cases that count: every recorded case but the verified declines."""
        return sum(self.counts.values()) - self.verified

    @property
    def passed(self) -> int:
        return self.counts[Verdict.PASSED]

    @property
    def judged(self) -> int:
        return sum(n for v, n in self.counts.items() if v.is_judged)

    def coverage(self) -> float:
        return self.passed / self.recorded if self.recorded else 0.0


@dataclass(frozen=True)
class Decision:
    """A run's verdict: PASS or FAIL, every reason it fails, and the figures the verdict line shows."""

    passed: bool
    reasons: tuple[str, ...]
    totals: Counter[Verdict]
    units: int  # vocab x mode units in scope
    in_scope: int  # recorded cases in those units
    covered: int  # of them, passed
    warnings: tuple[str, ...] = ()  # what is worth saying but does not fail the run (a stale expected failure)
    verified: int = 0  # cases in scope declined as a verified input class (not counted in `in_scope`)
    confiner: Confiner = OWN_CODE  # how the implementation's processes were held (`tokconf.core.sandbox`)

    @property
    def contained(self) -> bool:
        """False: a port ran in tokconf's process (--in-process) and could change the run."""
        return self.confiner.confinement is not Confinement.IN_PROCESS

    @property
    def exit_status(self) -> int:
        return 0 if self.passed else 1

    def line(self) -> str:
        """The last line of a run: PASS or FAIL, the counts, the coverage, and the first reason."""
        counts = ", ".join(f"{self.totals[v]} {v.value}" for v in Verdict if self.totals[v]) or "nothing checked"
        share = f" ({100 * self.covered / self.in_scope:.2f}%)" if self.in_scope else ""
        coverage = f"coverage {self.covered}/{self.in_scope} cases in scope{share}, {self.units} vocab x mode"
        coverage += f", {self.verified} declined as verified classes" if self.verified else ""
        if self.confiner.confinement is Confinement.KEPT:  # files and network were open to it: said, and why
            coverage += f"; {self.confiner.confinement.note} ({self.confiner.reason})"
        elif note := self.confiner.confinement.note:
            coverage += f"; {note}"
        head = f"PASS: {counts}; {coverage}"
        if self.passed:
            return head
        more = f" (and {len(self.reasons) - 1} more reasons above)" if len(self.reasons) > 1 else ""
        return f"FAIL: {counts}; {coverage} — {printable(self.reasons[0])}{more}"  # a port's words: one line


def decide(
    counts: Mapping[tuple[str, S], Counter[Verdict]],
    standing: Mapping[str, Standing],
    gate: Gate = Gate(),
    unsupported_reasons: Mapping[tuple[str, S], Counter[str]] | None = None,
    stale_entries: Sequence[str] = (),
    unmatched_cases: Sequence[str] = (),
    verified: Mapping[tuple[str, S], int] | None = None,
) -> Decision:
    """The verdict of a run from its counts per (vocab, section) and each vocabulary's standing.

    `unsupported_reasons`, per (vocab, mode), the reasons of its unsupported cases: the most common
    one is named when a unit falls short, so the message says why ("the implementation declared
    parse-special unsupported"). `stale_entries`: expected-failure patterns that matched no checked
    case (they fail the run with `gate.strict_xfail`); `unmatched_cases`: `--case` ids that matched
    no case (a mistyped id must not shrink a gate silently); `verified`, per (vocab, mode), its cases
    declined as a verified input class, which coverage does not count."""
    claim = gate.claim
    by_unit: dict[tuple[str, str], Counter[str]] = {(v, str(s)): c for (v, s), c in (unsupported_reasons or {}).items()}
    reasons: list[str] = []
    totals: Counter[Verdict] = Counter()
    for tally in counts.values():
        totals.update(tally)
    verified_of = verified or {}
    units = [Unit(v, s, c, verified_of.get((v, s), 0)) for (v, s), c in sorted(counts.items()) if s in MODES]
    scope: list[Unit] = []
    for unit in units:
        state = standing.get(unit.vocab, Standing.LOADED)
        if not claim.covers(unit.vocab, unit.mode) or state is Standing.LLAMA_REFUSES:
            continue
        if state is Standing.DECLINED:
            if claim.explicit:
                why = _top(by_unit, unit) or "declined"
                reasons.append(f"{unit.vocab} {unit.mode} is claimed, but the implementation declined it: {why}")
            continue
        scope.append(unit)
    for unit in scope:
        if unit.passed and unit.coverage() >= claim.min_coverage:
            continue
        why = _top(by_unit, unit)
        because = f": {why}" if why else ""
        if gate.claimable and not unit.judged and not claim.explicit:
            because += _claim_hint(unit)
        if not unit.judged:
            reasons.append(f"nothing judged in {unit.vocab} {unit.mode}{because}")
        elif not unit.passed:
            reasons.append(f"nothing passed in {unit.vocab} {unit.mode} ({_counted(unit)})")
        else:
            reasons.append(
                f"{unit.vocab} {unit.mode}: {unit.passed} of {unit.recorded} cases passed "
                f"({100 * unit.coverage():.2f}%, below the {100 * claim.min_coverage:g}% a claim needs: "
                f"only declines of a verified input class are not counted; {_counted(unit)}){because}"
            )
    if not scope and not reasons:
        declined = sorted(v for v, s in standing.items() if s is Standing.DECLINED)
        what = f"the implementation declined every vocabulary ({', '.join(declined[:5])}{', …' * (len(declined) > 5)})"
        alone = "no vocabulary was checked in any mode (facts and decoding alone are not conformance)"
        reasons.append(f"nothing in scope: {what if declined else alone}")
    problems = [f"{totals[v]} {v.value}" for v in Verdict if v.is_problem and totals[v]]
    if problems:
        reasons.insert(0, ", ".join(problems))
    if gate.strict and totals[Verdict.UNSUPPORTED]:
        reasons.append(f"--strict: {totals[Verdict.UNSUPPORTED]} unsupported")
    checked = [unit for unit in counts if unit[1] in MODES]
    reasons += [f"--claim {pattern} matches no checked vocab x mode" for pattern in claim.unmatched(checked)]
    reasons += [f"--case {case} matched no case of the checked recordings" for case in unmatched_cases]
    stale = [f"expected-failure entry {entry!r} matched no checked case" for entry in stale_entries]
    reasons += stale if gate.strict_xfail else []
    in_scope = sum(u.recorded for u in scope)
    covered = sum(u.passed for u in scope)
    warnings = () if gate.strict_xfail else tuple(stale)
    return Decision(not reasons, tuple(reasons), totals, len(scope), in_scope, covered, warnings,
                    sum(u.verified for u in scope))  # fmt: skip


def _claim_hint(unit: Unit) -> str:
    """What a port that cannot do a mode at all (one that cannot turn special parsing off declines
    plain mode) does instead of declining it: claim the modes it does, so the one it leaves out is out
    of scope, said, rather than short of coverage. Worded alike in every front end (their verdict
    lines are compared), naming both options."""
    others = " ".join(f"{unit.vocab}/{mode}" for mode in MODES if mode != unit.mode)
    return (f"; an implementation that cannot do {unit.mode} at all claims the modes it does instead "
            f"(--claim, pytest --tokconf-claim): {others}")  # fmt: skip


def _counted(unit: Unit) -> str:
    return ", ".join(f"{n} {v.value}" for v, n in sorted(unit.counts.items(), key=lambda i: -i[1]) if n)


def _top(reasons: Mapping[tuple[str, str], Counter[str]], unit: Unit) -> str:
    """The most common reason of a unit's unsupported cases, or ""."""
    found = reasons.get((unit.vocab, unit.mode))
    if not found:
        return ""
    (reason, n), *rest = found.most_common()
    return f"{n} unsupported, {reason}" + (f" (and {len(rest)} other reasons)" if rest else "")
