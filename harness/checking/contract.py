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
  of it passed but those declined as an input class the *command* grants (`Gate.granted`,
  `--allow-decline`; `InputClass`, each checked on the input by the engine). The port only says
  what it declines: by default the command grants the classes that are never a port's bug (not
  UTF-8, holds NUL: `DEFAULT_GRANTS`), never `too-long` (a port declaring 1,024 bytes leaves out
  61-67% of every shipped vocabulary's recorded bytes) nor `special-text` (a port parsing a user's
  `<|eot_id|>` as the control token in plain mode is the prompt-injection bug). `min_coverage`
  loosens that, explicitly: the share of the unit's other cases that must pass. So a port that
  declines exactly the inputs it gets wrong fails, and one that declines only what its API cannot
  take passes. Facts alone never pass; neither do the cases of a recording of a vocabulary llama.cpp
  refuses to load (both sides refusing is agreement, not coverage). Every granted class is listed
  with the declines made under it (and `too-long` with its share of the recorded bytes) in the
  verdict line and `--json`.
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
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from ..core.outcome import MODES, InputClass, Mode, Outcome, Refusal, RefusalKind
from ..core.printable import printable
from ..core.sandbox import OWN_CODE, Confinement, Confiner

# What a result is about: a case in one mode, a vocab fact, a decoding check, or a case replayed with
# other vocabularies loaded into the same process (its column in tables).
Section = Mode | Literal["facts", "decode", "interleave"]
FACTS: Section = "facts"
DECODE: Section = "decode"  # cases: pieces-special, pieces-plain and the DETOKENIZE settings
INTERLEAVE: Section = "interleave"  # cases: `MODE/CASE` (tokconf.checking.interleave)
S = TypeVar("S", bound=str)  # a section name: a mode, facts or decode

# The share of a unit's cases, but its granted declines, that must pass: all of them. A port that
# declines the inputs its API cannot take (not UTF-8, NUL: 7-16% of a shipped recording's cases) says
# so with their class and passes; any other decline or an expected failure is a case not passed,
# which only a grant of its class or an explicit `--min-coverage` below 100 allows.
DEFAULT_MIN_COVERAGE = 1.0

# What a command grants when it says nothing (`--allow-decline` not given): the classes that can never
# be a port's bug. A port whose API takes strings cannot be given invalid UTF-8, one on C strings cannot
# be given NUL; llama.cpp's `llama_tokenize` takes both (a length, not a C string; `unicode_cpts_from_utf8`
# reads invalid bytes as U+FFFD). Not `special-text`: llama.cpp leaves a CONTROL token's text unparsed
# without parse_special (`tokenizer_st_partition`), and a port that cannot is the prompt-injection bug;
# not `too-long`: `llama_tokenize` has no input limit. Everything else a port declines counts.
DEFAULT_GRANTS = frozenset({InputClass.INVALID_UTF8, InputClass.NUL})
NO_GRANTS = "none"  # `--allow-decline none`: nothing granted


def grants_named(text: str) -> frozenset[InputClass]:
    """The classes of one `--allow-decline` value: a comma list of grantable class names, or `none`
    (nothing). A ValueError saying what may be granted for anything else; a mode class or `other`
    points to the option that does its job (see `InputClass`)."""
    names = [name.strip() for name in text.split(",")]
    if names == [NO_GRANTS]:
        return frozenset()
    grantable = ", ".join(c.value for c in InputClass if c.grantable)
    found = set()
    for name in names:
        cls = InputClass.named(name)
        if cls is None or not cls.grantable:
            instead = {
                InputClass.PARSE_SPECIAL: "; a port that cannot do a mode claims the others (--claim)",
                InputClass.ADD_SPECIAL: "; a port that cannot do a mode claims the others (--claim)",
                InputClass.OTHER: "; a share of unverified declines is --min-coverage's",
            }.get(cls, "") if cls is not None else ""  # fmt: skip
            raise ValueError(f"{name!r} is not a class a command can grant ({grantable}, or {NO_GRANTS}){instead}")
        found.add(cls)
    return frozenset(found)


def grants_of(given: Sequence[str]) -> frozenset[InputClass]:
    """What a command grants from its `--allow-decline` values (repeatable, each a comma list): their
    classes together, or `DEFAULT_GRANTS` when none was given. A ValueError as `grants_named`."""
    if not given:
        return DEFAULT_GRANTS
    return frozenset().union(*map(grants_named, given))


def percent(share: float) -> str:
    """A share as the grant list shows it: whole percents, but never 0% or 100% for what is neither."""
    if 0 < share < 0.01:
        return "<1%"
    if 0.99 < share < 1:
        return ">99%"
    return f"{100 * share:.0f}%"


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
    """A run's settings that decide PASS: the claim, `--strict` (nothing unsupported at all),
    `--strict-xfail` (an expected-failure entry that matches nothing fails the run) and the input
    classes the command grants (`--allow-decline`: their declines leave coverage whole)."""

    claim: Claim = Claim()
    strict: bool = False
    strict_xfail: bool = False
    # Whether the front end takes a claim (`tokconf check`, pytest; not a fuzz campaign): a mode that
    # judged nothing, every case declined, is then pointed to the claim that leaves it out.
    claimable: bool = False
    granted: frozenset[InputClass] = DEFAULT_GRANTS


@dataclass
class Declines:
    """One unit's declined cases by the input class each was declined as (verified on its input by the
    engine), with the recorded bytes of those cases and of every case of the unit: what a grant leaves
    out, in cases and in bytes (a port declaring `max_input_bytes = 1024` declines 53 of gpt-2's 2,719
    cases, but 67% of their bytes)."""

    cases: Counter[InputClass] = field(default_factory=Counter)
    bytes: Counter[InputClass] = field(default_factory=Counter)
    recorded_bytes: int = 0

    def add(self, size: int, declined: InputClass | None) -> None:
        """One case of `size` bytes, declined as `declined` (None: not declined)."""
        self.recorded_bytes += size
        if declined is not None:
            self.cases[declined] += 1
            self.bytes[declined] += size

    def share(self, cls: InputClass) -> float:
        """The share of the unit's recorded bytes declined as `cls`."""
        return self.bytes[cls] / self.recorded_bytes if self.recorded_bytes else 0.0


@dataclass(frozen=True)
class Grant:
    """A class the command granted, and what the implementation declined under it in the scope: its
    cases, their bytes, and the recorded bytes of the scope's every case."""

    input_class: InputClass
    cases: int = 0
    bytes: int = 0
    recorded_bytes: int = 0

    @property
    def share(self) -> float:
        return self.bytes / self.recorded_bytes if self.recorded_bytes else 0.0

    def shown(self) -> str:
        """`invalid-utf8 402`; `too-long 53 (67% of the bytes)`: a length limit leaves out few cases but
        most of the text, and the grant list says so."""
        bytes_ = f" ({percent(self.share)} of the bytes)" if self.input_class is InputClass.TOO_LONG else ""
        return f"{self.input_class.value} {self.cases}{bytes_}"


@dataclass(frozen=True)
class Unit:
    """One vocabulary in one mode, as the run judged it; `declines`: its unsupported cases by the input
    class they were declined as; `granted`: the classes the command grants, which coverage does not
    count."""

    vocab: str
    mode: str
    counts: Counter[Verdict]
    declines: Declines = field(default_factory=Declines)
    granted: frozenset[InputClass] = frozenset()

    @property
    def exempt(self) -> int:
        """Its cases declined as a granted class."""
        return sum(self.declines.cases[cls] for cls in self.granted)

    @property
    def recorded(self) -> int:
        """Its cases that count: every recorded case but the granted declines."""
        return sum(self.counts.values()) - self.exempt

    def not_granted(self) -> str:
        """Its declines of a class a command could grant but this one does not, said with their count
        (and too-long's share of the bytes), or ""."""
        shown = [
            Grant(cls, n, self.declines.bytes[cls], self.declines.recorded_bytes).shown()
            for cls, n in self.declines.cases.most_common()
            if cls.grantable and cls not in self.granted
        ]
        return f"declines not granted (--allow-decline): {', '.join(shown)}" if shown else ""

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
    # every class the command granted, with the declines in scope made under it (not counted in `in_scope`)
    grants: tuple[Grant, ...] = ()
    confiner: Confiner = OWN_CODE  # how the implementation's processes were held (`tokconf.core.sandbox`)

    @property
    def contained(self) -> bool:
        """False: a port ran in tokconf's process (--in-process) and could change the run."""
        return self.confiner.confinement is not Confinement.IN_PROCESS

    @property
    def exit_status(self) -> int:
        return 0 if self.passed else 1

    @property
    def granted(self) -> int:
        """The cases in scope declined as a granted class."""
        return sum(grant.cases for grant in self.grants)

    def line(self) -> str:
        """The last line of a run: PASS or FAIL, the counts, the coverage, the declines granted (when
        there were any), and the first reason."""
        counts = ", ".join(f"{self.totals[v]} {v.value}" for v in Verdict if self.totals[v]) or "nothing checked"
        share = f" ({100 * self.covered / self.in_scope:.2f}%)" if self.in_scope else ""
        coverage = f"coverage {self.covered}/{self.in_scope} cases in scope{share}, {self.units} vocab x mode"
        made = [grant.shown() for grant in self.grants if grant.cases]
        coverage += f"; granted declines: {', '.join(made)}" if made else ""
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
    declines: Mapping[tuple[str, S], Declines] | None = None,
) -> Decision:
    """The verdict of a run from its counts per (vocab, section) and each vocabulary's standing.

    `unsupported_reasons`, per (vocab, mode), the reasons of its unsupported cases: the most common
    one is named when a unit falls short, so the message says why ("the implementation declared
    parse-special unsupported"). `stale_entries`: expected-failure patterns that matched no checked
    case (they fail the run with `gate.strict_xfail`); `unmatched_cases`: `--case` ids that matched
    no case (a mistyped id must not shrink a gate silently); `declines`, per (vocab, mode), its cases
    declined by input class: those of a class `gate.granted` holds are not counted in its coverage
    (none are without it: every decline counts)."""
    claim = gate.claim
    by_unit: dict[tuple[str, str], Counter[str]] = {(v, str(s)): c for (v, s), c in (unsupported_reasons or {}).items()}
    reasons: list[str] = []
    totals: Counter[Verdict] = Counter()
    for tally in counts.values():
        totals.update(tally)
    declines_of = declines or {}
    units = [Unit(v, s, c, declines_of.get((v, s), Declines()), gate.granted)
             for (v, s), c in sorted(counts.items()) if s in MODES]  # fmt: skip
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
        why = "; ".join(filter(None, (unit.not_granted(), _top(by_unit, unit))))
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
                f"only declines of a class the command grants are not counted; {_counted(unit)}){because}"
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
                    _grants(scope, gate.granted))  # fmt: skip


def _grants(scope: Sequence[Unit], granted: frozenset[InputClass]) -> tuple[Grant, ...]:
    """Every granted class (in `InputClass` order), with what was declined under it in the scope."""
    recorded_bytes = sum(unit.declines.recorded_bytes for unit in scope)
    return tuple(
        Grant(cls, sum(u.declines.cases[cls] for u in scope), sum(u.declines.bytes[cls] for u in scope), recorded_bytes)
        for cls in InputClass
        if cls in granted
    )


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
