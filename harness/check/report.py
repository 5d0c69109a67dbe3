"""Reports a porter can act on: the summary counts, each problem's story, Markdown and HTML.

A mismatch shows the vocab, mode and case, the input with its whitespace made visible and its code
points, the first index where the ids diverge, a window of expected and actual ids each with its
piece (the token's text from the GGUF file), and one command that re-checks that case alone.
"""

from __future__ import annotations

import shlex
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.outcome import MODES, Outcome, Refusal, render_outcome
from ..core.render import code_points, first_divergence, ids_window, visible
from ..recordings.format import VocabGroup
from .contract import DECODE, FACTS, Decision, Gate, Section, Standing, Verdict, decide
from .engine import CaseResult
from .explain import Cause

WINDOW = 4
EXAMPLES = 5  # case ids shown per cause or shared reason on the terminal; the reports list all
REPORT_FORMATS = (".md", ".html")  # --report's file name decides the format
COLUMNS = ("vocab", "mode", *(v.value for v in Verdict), "conformance")


@dataclass(frozen=True)
class Invocation:
    """How a check run was started, so that each `reproduce:` line runs as printed: the same
    implementation, every recordings path as its own argument (none for the bundled default), and
    the options that change a verdict (`--timeout`, `--xfail`, `--vocab-dir`)."""

    impl: str
    recordings: tuple[str, ...] = ()
    timeout: float | None = None
    xfail: str | None = None
    vocab_dir: str | None = None

    def command(self, result: CaseResult) -> str:
        args = ["tokconf", "check", "--impl", self.impl]
        for path in self.recordings:
            args += ["--recordings", path]
        for flag, value in (("--timeout", self.timeout), ("--xfail", self.xfail), ("--vocab-dir", self.vocab_dir)):
            if value is not None:
                args += [flag, f"{value:g}" if isinstance(value, float) else value]
        args += ["--vocab", result.vocab]
        if result.section != FACTS:  # facts are checked with any mode: the vocab's whole check
            args += ["--mode", result.section]
        if result.section not in (DECODE, FACTS):
            args += ["--case", result.case]
        return shlex.join(args)


def describe(result: CaseResult, vocab: Path | None, how: Invocation) -> str:
    """The full story of one failed or broken case, as plain text."""
    lines = [f"{result.vocab} [{result.section}] {result.case}: {result.verdict.value} — {result.reason}"]
    if result.section == FACTS:
        return lines[0]
    if result.section != DECODE:  # a whole-vocabulary decoding check: the reason lists the first differences
        lines.append(f"  input:       {visible(result.data)}")
        lines.append(f"  code points: {code_points(result.data)}")
        expected, actual = result.expected, result.actual
        if result.verdict is Verdict.XPASSED:
            lines.append("  now:         the implementation answers as llama.cpp does; remove the entry")
        elif isinstance(expected, list) and isinstance(actual, list):
            at = first_divergence(expected, actual)
            lines.append(f"  first divergence at index {at} (expected {len(expected)} ids, got {len(actual)})")
            start = max(0, at - WINDOW)
            lines.append(f"  expected [{start}:]: {ids_window(expected, at, vocab, WINDOW)}")
            lines.append(f"  actual   [{start}:]: {ids_window(actual, at, vocab, WINDOW, result.actual_pieces)}")
            if result.actual_pieces is not None:
                lines.append("  (actual pieces: the implementation's own token_to_piece)")
        else:
            for label, outcome in (("expected", expected), ("actual", actual)):
                lines.append(f"  {label:9}: {_outcome_line(outcome, vocab)}")
    lines.append(f"  reproduce:   {how.command(result)}")
    return "\n".join(lines)


def _outcome_line(outcome: Outcome | None, vocab: Path | None) -> str:
    """An outcome on one line: a refusal's reason, or its first ids with their pieces (long lists cut)."""
    if outcome is None:
        return "(not asked)"
    if isinstance(outcome, Refusal) or not outcome:
        return render_outcome(outcome)
    shown = ids_window(outcome[: 2 * WINDOW], 0, vocab, 2 * WINDOW).replace(">", " ", 1).strip()
    return shown + (f"  … ({len(outcome)} ids)" if len(outcome) > 2 * WINDOW else "")


def _modes(results: list[CaseResult]) -> str:
    """`bos 2, plain 2`: how many of the results each mode holds."""
    return ", ".join(f"{mode} {n}" for mode, n in sorted(Counter(r.section for r in results).items()))


def _some_cases(results: list[CaseResult]) -> str:
    """The first few distinct case ids of the results, and how many more there are."""
    cases = list(dict.fromkeys(r.case for r in results))
    more = f" … and {len(cases) - EXAMPLES} more" if len(cases) > EXAMPLES else ""
    return ", ".join(cases[:EXAMPLES]) + more


def _pieces_line(ids: Outcome, pieces: Sequence[bytes] | None, vocab: Path | None) -> str:
    """A port's answer on one line, with its own pieces where it decodes; else the GGUF's pieces,
    said to be the GGUF's (they mislead when the port's vocabulary differs)."""
    if pieces is None or not isinstance(ids, list) or not ids:
        line = _outcome_line(ids, vocab)
        return line + ("  (pieces: the GGUF's)" if isinstance(ids, list) and ids and vocab is not None else "")
    shown = ids_window(ids[: 2 * WINDOW], 0, vocab, 2 * WINDOW, pieces[: 2 * WINDOW]).replace(">", " ", 1).strip()
    more = f"  … ({len(ids)} ids)" if len(ids) > 2 * WINDOW else ""
    return f"{shown}{more}  (pieces: its own)"


def describe_cause(number: int, cause: Cause, vocab: Path | None, how: Invocation) -> str:
    """One cause of `--explain`: what the port does wrong, the minimal input, both answers on it,
    how many cases of each mode it explains, and the first of them (every one is in the reports)."""
    count = len(cause.cases)
    lines = [f"cause {number}: {cause.vocab}, {cause.kind.value} — {cause.label}"]
    lines.append(f"  cases:         {count} ({_modes(cause.cases)})")
    shown = visible(cause.minimal) if cause.minimal else "(the empty input)"
    note = "" if cause.shrunk else "  (not fully shrunk: the shrinking budget ran out)"
    lines.append(f"  minimal input: {shown}{note}")
    lines.append(f"  code points:   {code_points(cause.minimal) or '(none)'}")
    lines.append(f"  llama.cpp [{cause.mode}]: {_outcome_line(cause.expected, vocab)}")
    lines.append(f"  port      [{cause.mode}]: {_pieces_line(cause.actual, cause.actual_pieces, vocab)}")
    lines.append(f"  case ids:      {_some_cases(cause.cases)}")
    example = next((r for r in cause.cases if r.section == cause.mode), cause.cases[0])
    lines.append(f"  reproduce:     {how.command(example)}")
    return "\n".join(lines)


def describe_unexplained(unexplained: list[CaseResult]) -> str:
    """The failed cases no cause's mechanism reproduces, so that none goes unmentioned."""
    return (
        f"unexplained: {len(unexplained)} failed case(s) no cause reproduces ({_modes(unexplained)}): "
        + _some_cases(unexplained)
    )


_PRIORITY = {Verdict.ERROR: 0, Verdict.FAILED: 1, Verdict.XPASSED: 2}


def group_problems(problems: list[CaseResult]) -> list[list[CaseResult]]:
    """Problems grouped by vocab and case (one group holds the case's modes), errors first, then
    failures, then unexpected passes, each by shortest input first: the order a porter reads them.
    Errors of many cases with one reason (a vocabulary mismatch, a program given up on) are one
    group: told once, with the cases it covers."""
    shared = Counter((r.vocab, r.reason) for r in problems if r.verdict is Verdict.ERROR and r.section in MODES)
    groups: dict[tuple[str, str, str], list[CaseResult]] = {}
    for result in problems:
        if result.verdict is Verdict.ERROR and shared[(result.vocab, result.reason)] > len(MODES):
            key = (result.vocab, "error", result.reason)
        else:
            section = "decode" if result.section == DECODE else "facts" if result.section == FACTS else "case"
            key = (result.vocab, section, result.case)
        groups.setdefault(key, []).append(result)
    return sorted(
        groups.values(),
        key=lambda group: (min(_PRIORITY[r.verdict] for r in group), len(group[0].data), group[0].vocab, group[0].case),
    )


def describe_group(group: list[CaseResult], vocab: Path | None, how: Invocation) -> str:
    """One case's story, told once for all the modes it fails in; or one reason shared by many cases."""
    if len({r.case for r in group}) > 1:
        first = group[0]
        return (
            f"{first.vocab}: {len(group)} errors ({_modes(group)}), one reason: {first.reason}\n"
            f"  cases:       {_some_cases(group)}\n  reproduce:   {how.command(first)}"
        )
    first = min(group, key=lambda r: _PRIORITY[r.verdict])
    text = describe(first, vocab, how)
    if len(group) > 1:
        text += "\n  in modes:    " + ", ".join(f"{r.section} ({r.verdict.value})" for r in group)
    return text


class Summary:
    """Counts per vocab x section, each vocab's group and standing, the reasons of unsupported cases
    per vocab x section, and the problems kept for details; `decide` applies the verdict contract."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, Section], Counter[Verdict]] = defaultdict(Counter)
        self.groups: dict[str, VocabGroup] = {}
        self.standing: dict[str, Standing] = {}
        self.problems: list[CaseResult] = []
        self.unsupported_reasons: dict[tuple[str, Section], Counter[str]] = defaultdict(Counter)

    def add(self, results: Iterable[CaseResult], group: VocabGroup) -> None:
        for result in results:
            self.count(result.vocab, result.section, result.verdict, group, result.standing, result.reason)
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
    ) -> None:
        self.counts[(vocab, section)][verdict] += 1
        self.groups[vocab] = group
        self.standing[vocab] = standing
        if verdict is Verdict.UNSUPPORTED:
            self.unsupported_reasons[(vocab, section)][reason] += 1

    def totals(self) -> Counter[Verdict]:
        total: Counter[Verdict] = Counter()
        for counts in self.counts.values():
            total.update(counts)
        return total

    def decide(self, gate: Gate, stale_entries: Sequence[str] = (), unmatched_cases: Sequence[str] = ()) -> Decision:
        """The run's verdict under the contract (`tokconf.check.contract.decide`)."""
        return decide(self.counts, self.standing, gate, self.unsupported_reasons, stale_entries, unmatched_cases)

    @staticmethod
    def conformance(counts: Counter[Verdict]) -> str:
        """Passed of judged: unsupported cases are not judged, and an expected failure never conforms."""
        judged = sum(n for v, n in counts.items() if v.is_judged)
        if not judged:
            return "n/a"
        return f"{100 * counts[Verdict.PASSED] / judged:.2f}%"

    def rows(self) -> list[list[str]]:
        """The cells of every table: per group (shipped, synthetic, user) one row per vocab x section
        and the group's totals, then the totals of all. Synthetic vocabularies number about a
        hundred: those whose every check passed are counted in their group's row, not listed."""
        rows = []
        for group in VocabGroup:
            keys = sorted(k for k in self.counts if self.groups[k[0]] is group)
            if not keys:
                continue
            vocabs = sorted({vocab for vocab, _ in keys})
            quiet = {v for v in vocabs if group is VocabGroup.SYNTHETIC and self._all_passed(v)}
            for vocab, section in keys:
                if vocab not in quiet:
                    counts = self.counts[(vocab, section)]
                    rows.append([vocab, section, *(str(counts[v]) for v in Verdict), self.conformance(counts)])
            total: Counter[Verdict] = Counter()
            for key in keys:
                total.update(self.counts[key])
            label = f"{group.value}: {len(vocabs)} vocabs" + (f", {len(quiet)} passed" if quiet else "")
            rows.append([label, "", *(str(total[v]) for v in Verdict), self.conformance(total)])
        totals = self.totals()
        rows.append(["all", "", *(str(totals[v]) for v in Verdict), self.conformance(totals)])
        return rows

    def _all_passed(self, vocab: str) -> bool:
        return all(set(+c) <= {Verdict.PASSED} for (v, _), c in self.counts.items() if v == vocab)

    def text_table(self) -> list[str]:
        """The table as aligned plain-text lines (terminals, pytest's summary)."""
        rows = [list(COLUMNS), *self.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        return ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]

    def markdown(self, title: str, decision: Decision, details: list[str], causes: list[str]) -> str:
        lines = [f"# {title}", "", f"**{decision.line()}**", ""] + [f"- fail: {r}" for r in decision.reasons]
        lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows()]
        if causes:
            lines += ["", "## Causes", ""] + [f"```\n{c}\n```" for c in causes]
        if details:
            lines += ["", "## Failures", ""] + [f"```\n{d}\n```" for d in details]
        return "\n".join(lines) + "\n"
