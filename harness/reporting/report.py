"""Reports a porter can act on: the one renderer of a check run. The terminal (`tokconf check`), the
Markdown report, the JUnit bodies, the HTML report (`tokconf.reporting.html_report`, which draws the same
texts) and pytest's summary all take their words and tables from here.

A mismatch shows the vocab, mode and case, the input with its whitespace made visible and its code
points, the first index where the ids diverge, a window of expected and actual ids each with its
piece (the token's text from the GGUF file), and one command that re-checks that case alone.

What a port or a file wrote (reasons, exception messages, a program's stderr, names, case ids) is
shown as `core.printable.printable` makes it: one line, its controls, bidi controls and lone
surrogates as escapes. Every line drawn here passes `escape_unprintable` as well, so that an input
or a piece shown with `visible` cannot bring one in either; and every reason sits behind a prefix
(`fail: `, `  expected : `), so that no port text starts a line, let alone one reading `PASS:`.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..checking.contract import DECODE, FACTS, INTERLEAVE, Decision, Verdict
from ..checking.engine import CaseResult
from ..checking.explain import Cause
from ..checking.explain.causes import (
    Fault,
    ReasonGroup,
    case_id,
    cause_record,
    document,
    fault_record,
    faults,
    other_failure,
    reasons_of,
)
from ..checking.run import CheckRun
from ..checking.summary import Summary
from ..core.files import recordings_shown
from ..core.outcome import MODES, InputClass, Outcome, Refusal, RefusalKind, render_outcome
from ..core.printable import escape_unprintable, printable
from ..core.render import code_points, first_divergence, ids_window, visible
from ..recording.format import VocabGroup
from ..recording.pieces import pieces_of

WINDOW = 4
EXAMPLES = 5  # case ids shown per cause or shared reason on the terminal; the reports list all
REPORT_FORMATS = (".md", ".html")  # --report's file name decides the format
COLUMNS = ("vocab", "mode", *(v.value for v in Verdict), "conformance")


@dataclass(frozen=True)
class Invocation:
    """How a check run was started, so that each `reproduce:` line runs as printed: the same
    implementation, every recordings path as its own argument (none for the bundled default), and
    the options that change a verdict (`--timeout`, `--load-timeout`, `--xfail`, `--vocab-dir`)."""

    impl: str
    recordings: tuple[str, ...] = ()
    timeout: float | None = None
    xfail: str | None = None
    vocab_dir: str | None = None
    load_timeout: float | None = None

    @classmethod
    def of(
        cls,
        impl: str,
        recordings: Sequence[Path],
        timeout: float | None,
        xfail: Path | None,
        vocab_dir: Path | None,
        load_timeout: float | None = None,
    ) -> Invocation:
        """As given on a command line or in pytest options; the bundled recordings by name."""
        xfail_shown, vocab_dir_shown = (None if path is None else str(path) for path in (xfail, vocab_dir))
        return cls(impl, tuple(map(recordings_shown, recordings)), timeout, xfail_shown, vocab_dir_shown, load_timeout)

    @staticmethod
    def recordings_shown(paths: Sequence[Path]) -> str:
        return " ".join(map(recordings_shown, paths))

    def command(self, result: CaseResult) -> str:
        args = ["tokconf", "check", "--impl", self.impl]
        for path in self.recordings:
            args += ["--recordings", path]
        options = (
            ("--timeout", self.timeout),
            ("--load-timeout", self.load_timeout),
            ("--xfail", self.xfail),
            ("--vocab-dir", self.vocab_dir),
        )
        for flag, value in options:
            if value is not None:
                args += [flag, f"{value:g}" if isinstance(value, float) else value]
        if result.section == INTERLEAVE:  # it takes the run's other vocabularies: the whole run again
            return escape_unprintable(shlex.join(args))
        args += ["--vocab", result.vocab]
        if result.section != FACTS:  # facts are checked with any mode: the vocab's whole check
            args += ["--mode", result.section]
        if result.section not in (DECODE, FACTS):
            args += ["--case", result.case]
        return escape_unprintable(shlex.join(args))  # one line: a recording's case id may hold a line break


def _lines(lines: list[str]) -> str:
    """A story's lines as one text, each line printable (`escape_unprintable`): what `visible` leaves
    as it is in an input or a piece (a bidi control) is escaped too."""
    return "\n".join(map(escape_unprintable, lines))


def describe(result: CaseResult, vocab: Path | None, how: Invocation) -> str:
    """The full story of one failed or broken case, as plain text."""
    head = f"{printable(result.vocab)} [{result.section}] {printable(result.case)}"
    lines = [f"{head}: {result.verdict.value} — {printable(result.reason)}"]
    if result.section == FACTS:
        return _lines(lines)
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
            lines.append(f"  expected [{start}:]: {ids_window(expected, at, pieces_of(vocab), WINDOW)}")
            lines.append(
                f"  actual   [{start}:]: {ids_window(actual, at, pieces_of(vocab), WINDOW, result.actual_pieces)}"
            )
            if result.actual_pieces is not None:
                lines.append("  (actual pieces: the implementation's own token_to_piece)")
        else:
            for label, outcome in (("expected", expected), ("actual", actual)):
                lines.append(f"  {label:9}: {_outcome_line(outcome, vocab)}")
    lines.append(f"  reproduce:   {how.command(result)}")
    return _lines(lines)


def _outcome_line(outcome: Outcome | None, vocab: Path | None) -> str:
    """An outcome on one line: a refusal's reason, or its first ids with their pieces (long lists cut)."""
    if outcome is None:
        return "(not asked)"
    if isinstance(outcome, Refusal) or not outcome:
        return printable(render_outcome(outcome))  # a port's refusal reason
    shown = ids_window(outcome[: 2 * WINDOW], 0, pieces_of(vocab), 2 * WINDOW).replace(">", " ", 1).strip()
    return shown + (f"  … ({len(outcome)} ids)" if len(outcome) > 2 * WINDOW else "")


def _modes(results: list[CaseResult]) -> str:
    """`bos 2, plain 2`: how many of the results each mode holds."""
    return ", ".join(f"{mode} {n}" for mode, n in sorted(Counter(r.section for r in results).items()))


def _some_cases(results: list[CaseResult]) -> str:
    """The first few distinct case ids of the results, and how many more there are."""
    cases = list(dict.fromkeys(printable(r.case) for r in results))
    more = f" … and {len(cases) - EXAMPLES} more" if len(cases) > EXAMPLES else ""
    return ", ".join(cases[:EXAMPLES]) + more


def _pieces_line(ids: Outcome, pieces: Sequence[bytes] | None, vocab: Path | None) -> str:
    """A port's answer on one line, with its own pieces where it decodes; else the GGUF's pieces,
    said to be the GGUF's (they mislead when the port's vocabulary differs)."""
    if pieces is None or not isinstance(ids, list) or not ids:
        line = _outcome_line(ids, vocab)
        return line + ("  (pieces: the GGUF's)" if isinstance(ids, list) and ids and vocab is not None else "")
    shown = (
        ids_window(ids[: 2 * WINDOW], 0, pieces_of(vocab), 2 * WINDOW, pieces[: 2 * WINDOW])
        .replace(">", " ", 1)
        .strip()
    )
    more = f"  … ({len(ids)} ids)" if len(ids) > 2 * WINDOW else ""
    return f"{shown}{more}  (pieces: its own)"


def describe_cause(number: int, cause: Cause, vocab: Path | None, how: Invocation) -> str:
    """One cause of `--explain`: what the port does wrong, the minimal input, both answers on it,
    how many cases of each mode it explains, and the first of them (every one is in the reports)."""
    count = len(cause.cases)
    lines = [f"cause {number}: {printable(cause.vocab)}, {cause.kind.value} — {cause.label}"]
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
    return _lines(lines)


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
            f"{printable(first.vocab)}: {len(group)} errors ({_modes(group)}), one reason: {printable(first.reason)}\n"
            f"  cases:       {_some_cases(group)}\n  reproduce:   {how.command(first)}"
        )
    first = min(group, key=lambda r: _PRIORITY[r.verdict])
    text = describe(first, vocab, how)
    if len(group) > 1:
        text += "\n  in modes:    " + ", ".join(f"{r.section} ({r.verdict.value})" for r in group)
    return text


UNSUPPORTED_SHOWN = 10  # reasons of unsupported answers on the terminal, the largest groups first


def decline_lines(summary: Summary, decision: Decision) -> list[str]:
    """What each vocabulary's declined inputs were, by input class, so a reviewer sees what a port left
    out: the classes the command granted (not counted against coverage) apart from the others
    (counted)."""
    granted = {grant.input_class for grant in decision.grants}
    by_vocab: dict[str, Counter[InputClass]] = {}
    for (vocab, _), declines in sorted(summary.declines.items()):
        by_vocab.setdefault(vocab, Counter()).update(declines.cases)
    lines = []
    for vocab, classes in by_vocab.items():
        if not classes:
            continue
        made = classes.most_common()
        yes = ", ".join(f"{c.value} {n}" for c, n in made if c in granted)
        no = ", ".join(f"{c.value} {n}" for c, n in made if c not in granted)
        shown = [f"granted {yes}"] * bool(yes) + [f"not granted {no}"] * bool(no)
        lines.append(f"declined in {printable(vocab)}: {'; '.join(shown)}")
    return lines


_ABORTED_HOW = {
    RefusalKind.DIED: "its process ended (restarted each time)",
    RefusalKind.ABORTED: "it said it caught the abort",
    RefusalKind.REFUSED: "it refused",
}


def abort_lines(summary: Summary, each: bool = True) -> list[str]:
    """The cases that abort as llama.cpp does: passed, and said so, since a binding's process that dies
    there agrees with llama.cpp (docs/line-protocol.md, section 5). Per vocabulary (`each`), or, for
    several, in one line (a whole run's 128 vocabularies are 128 lines of it)."""
    by_vocab: dict[str, Counter[RefusalKind]] = {}
    for (vocab, _), kinds in sorted(summary.aborts.items()):
        by_vocab.setdefault(vocab, Counter()).update(kinds)
    if not each and len(by_vocab) > 1:
        kinds = sum(by_vocab.values(), Counter[RefusalKind]())
        how = ", ".join(f"{_ABORTED_HOW[kind]}: {n:,}" for kind, n in kinds.most_common())
        return [f"{sum(kinds.values()):,} cases abort as llama.cpp does, in {len(by_vocab)} vocabularies ({how})"]
    lines = []
    for vocab, kinds in by_vocab.items():
        how = ", ".join(f"{_ABORTED_HOW[kind]}: {n}" for kind, n in kinds.most_common())
        lines.append(f"{sum(kinds.values())} cases of {printable(vocab)} abort as llama.cpp does ({how})")
    return lines


def conformance(counts: Counter[Verdict]) -> str:
    """Passed of judged: unsupported cases are not judged, and an expected failure never conforms."""
    judged = sum(n for v, n in counts.items() if v.is_judged)
    if not judged:
        return "n/a"
    return f"{100 * counts[Verdict.PASSED] / judged:.2f}%"


def table_rows(summary: Summary) -> list[list[str]]:
    """The cells of the full table (`--table full`): per group (shipped, synthetic, user) one row per
    vocab x section and the group's totals, then the totals of all. Synthetic vocabularies number about
    a hundred: those whose every check passed are counted in their group's row, not listed."""
    return _rows(summary, full=True)


def summary_rows(summary: Summary) -> list[list[str]]:
    """The cells of the table a run shows by default (`--table summary`): as `table_rows`, but a passing
    vocabulary of the shipped and user groups is one row, its sections added up. A whole run is then
    some thirty rows, and no failing row is ever left out: a vocabulary with a problem anywhere keeps
    a row per section."""
    return _rows(summary, full=False)


def _rows(summary: Summary, full: bool) -> list[list[str]]:
    rows = []
    for group in VocabGroup:
        keys = sorted(k for k in summary.counts if summary.groups[k[0]] is group)
        if not keys:
            continue
        vocabs = sorted({vocab for vocab, _ in keys})
        passing = {v for v in vocabs if _all_passed(summary, v)}
        quiet = passing if group is VocabGroup.SYNTHETIC else set()  # counted in the group's row alone
        for vocab in vocabs:
            sections = [key for key in keys if key[0] == vocab]
            if vocab in quiet:
                continue
            if full or vocab not in passing:
                rows += [_row(vocab, section, summary.counts[(vocab, section)]) for _, section in sections]
            else:
                rows.append(_row(vocab, "all", sum((summary.counts[key] for key in sections), Counter[Verdict]())))
        total: Counter[Verdict] = Counter()
        for key in keys:
            total.update(summary.counts[key])
        label = f"{group.value}: {len(vocabs)} vocabs" + (f", {len(quiet)} passed" if quiet else "")
        rows.append([label, "", *(str(total[v]) for v in Verdict), conformance(total)])
    totals = summary.totals()
    rows.append(["all", "", *(str(totals[v]) for v in Verdict), conformance(totals)])
    return rows


def _row(vocab: str, section: str, counts: Counter[Verdict]) -> list[str]:
    return [printable(vocab), section, *(str(counts[v]) for v in Verdict), conformance(counts)]


def _all_passed(summary: Summary, vocab: str) -> bool:
    return all(set(+c) <= {Verdict.PASSED} for (v, _), c in summary.counts.items() if v == vocab)


def shown_rows(summary: Summary, full: bool = False) -> list[list[str]]:
    """The rows a terminal shows (`--table`): `summary_rows`, or with `full` `table_rows`."""
    return table_rows(summary) if full else summary_rows(summary)


def text_table(summary: Summary, full: bool = False) -> list[str]:
    """The table as aligned plain-text lines, for pytest's terminal summary: `shown_rows`, as
    `terminal_table` draws them for `tokconf check`."""
    rows = [list(COLUMNS), *shown_rows(summary, full)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]


def terminal_table(summary: Summary, title: str, full: bool = False) -> Any:
    """The table `tokconf check` prints, a rich `Table` of `shown_rows` (the names left-aligned, the
    counts right): the rows pytest's `text_table` shows."""
    from rich.table import Table

    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("vocab", "mode") else "right")
    for row in shown_rows(summary, full):
        table.add_row(*row)
    return table


_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # ASCII punctuation: what CommonMark lets a backslash escape


def _markdown_text(text: str) -> str:
    """One line of text as Markdown that renders as exactly that text: every ASCII punctuation
    character backslash-escaped, so no tag, entity, emphasis, link, code span, heading, list or table
    cell border (`|`) can start in it. The line must be printable already (no line break)."""
    return _PUNCTUATION.sub(r"\\\1", text)


def _markdown_block(text: str) -> str:
    """Text as a fenced code block whose fence is longer than any run of backticks in it: no line of
    it can close the block, and nothing in a code block is markup."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def closing_lines(decision: Decision) -> list[str]:
    """The end of every run's output: its warnings, every reason it fails (one line each, printable:
    a reason quotes a port), and the verdict line, which is last."""
    warnings = [f"warning: {printable(w)}" for w in decision.warnings]
    return warnings + [f"fail: {printable(r)}" for r in decision.reasons] + [decision.line()]


class RunReport:
    """Everything said about one ended `CheckRun`, worded once: each problem's story (grouped by case),
    each cause's, the notes on explaining and on unsupported answers, the table, and the closing
    lines. The terminal shows the first few stories; the files hold every one."""

    def __init__(self, run: CheckRun, how: Invocation, title: str) -> None:
        self.run = run
        self.how = how
        self.title = escape_unprintable(title)  # it names the implementation: one line
        self.decision: Decision = run.decision

    @cached_property
    def details(self) -> list[str]:
        """Every problem's story, a case's modes told once (`group_problems`)."""
        return [
            describe_group(g, self.run.vocabs.get(g[0].vocab), self.how)
            for g in group_problems(self.run.summary.problems)
        ]

    def shown(self, budget: int) -> list[str]:
        """The stories the terminal shows: the first `budget`, and every failed fact after them (a
        wrong BOS id is one line among thousands of failed cases, and the one a porter fixes first)."""
        groups = group_problems(self.run.summary.problems)
        return [text for i, (text, g) in enumerate(zip(self.details, groups, strict=True))
                if i < budget or g[0].section == FACTS]  # fmt: skip

    @cached_property
    def faults(self) -> list[Fault]:
        """The causes folded across vocabularies (`explain.causes.faults`)."""
        return faults(self.run.causes)

    def fault_lines(self) -> list[str]:
        """Where a run's causes hold on more than one vocabulary: each fault once, with the
        vocabularies and modes it holds on and the causes it folds."""
        if len({c.vocab for c in self.run.causes}) < 2:
            return []
        lines = [f"faults: {len(self.faults)} across {len({c.vocab for c in self.run.causes})} vocabularies "
                 f"({len(self.run.causes)} causes)"]  # fmt: skip
        for n, fault in enumerate(self.faults, 1):
            where = ", ".join(
                f"{printable(vocab)} ({', '.join(f'{m} {k}' for m, k in sorted(modes.items()))})"
                for vocab, modes in fault.cases.items()
            )
            causes = ", ".join(str(i + 1) for i in fault.causes)
            lines.append(f"fault {n}: {fault.kind} — {printable(fault.label)}\n  holds on: {where}; causes {causes}")
        return lines

    @cached_property
    def causes(self) -> list[str]:
        run = self.run
        return [describe_cause(i, c, run.vocabs.get(c.vocab), self.how) for i, c in enumerate(run.causes, 1)]

    @cached_property
    def unsupported(self) -> list[ReasonGroup]:
        return reasons_of(self.run.results, Verdict.UNSUPPORTED)

    def notes(self, each: bool = True) -> list[str]:
        """What explaining could not do, the aborts llama.cpp agrees with (per vocabulary with `each`,
        else in one line), and why cases were unsupported (the largest groups)."""
        run = self.run
        lines = [f"explain: {printable(error)}" for error in run.explain_errors]
        if run.unexplained:
            lines.append(describe_unexplained(run.unexplained))
        if run.causes:  # nothing to say when no failed case was there to explain
            failed = len({case_id(r) for c in run.causes for r in c.cases})
            lines.append(f"explained: {failed} failed cases as {len(run.causes)} cause(s)")
        lines += abort_lines(run.summary, each)
        lines += decline_lines(run.summary, self.decision)
        groups = self.unsupported
        lines += [
            f"unsupported: {len(g.cases)} of {printable(g.vocab)}: {printable(g.example)}"
            for g in groups[:UNSUPPORTED_SHOWN]
        ]
        if len(groups) > UNSUPPORTED_SHOWN:
            rest, reasons = sum(len(g.cases) for g in groups[UNSUPPORTED_SHOWN:]), len(groups) - UNSUPPORTED_SHOWN
            lines.append(f"unsupported: {rest} more, for {reasons} other reasons (--causes FILE lists all)")
        return lines

    def ending(self) -> list[str]:
        """After the table: where the run stopped early, then `closing_lines`."""
        run = self.run
        stopped = [f"stopped after {run.maxfail} failing case(s) (--maxfail): the rest was not checked"]
        return stopped * run.stopped + closing_lines(self.decision)

    def stories(self) -> dict[int, str]:
        """Each problem's story by its index in the run's results (JUnit bodies), with the cause that
        explains it when there is one."""
        named: dict[str, list[str]] = {}
        for number, cause in enumerate(self.run.causes, 1):
            for result in cause.cases:
                label = escape_unprintable(cause.label)
                named.setdefault(case_id(result), []).append(f"cause {number}, {cause.kind.value}: {label}")
        stories = {}
        for index, result in enumerate(self.run.results):
            if result.verdict.is_problem:
                text = describe(result, self.run.vocabs.get(result.vocab), self.how)
                stories[index] = "".join([text, *(f"\n  explained by: {c}" for c in named.get(case_id(result), ()))])
        return stories

    def markdown(self) -> str:
        """The Markdown report: every case id of every cause, every problem's story. Nothing a port or
        a file wrote can become markup: in the text and the table it is escaped (`_markdown_text`), the
        stories are code blocks it cannot close (`_markdown_block`)."""
        decision = self.decision
        lines = [f"# {_markdown_text(self.title)}", "", f"**{_markdown_text(decision.line())}**", ""]
        lines += [f"- fail: {_markdown_text(printable(r))}" for r in decision.reasons]
        lines += [f"- warning: {_markdown_text(printable(w))}" for w in decision.warnings]
        lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += [f"| {_markdown_text(key)} | {' | '.join(rest)} |" for key, *rest in table_rows(self.run.summary)]
        declines = abort_lines(self.run.summary) + decline_lines(self.run.summary, decision)
        lines += ["", *(f"- {_markdown_text(line)}" for line in declines)] if declines else []
        every = [
            f"{text}\n  every case:    {' '.join(printable(case_id(r)) for r in c.cases)}"
            for text, c in zip(self.causes, self.run.causes, strict=True)
        ]
        if every:
            lines += ["", "## Causes", "", *map(_markdown_block, every)]
        if self.details:
            lines += ["", "## Failures", "", *map(_markdown_block, self.details)]
        return "\n".join(lines) + "\n"

    def causes_document(self) -> dict[str, Any]:
        """`--causes FILE`: every cause with every case id, what no cause reproduces, and the errors,
        unsupported answers and failed facts or decoding checks grouped by reason."""
        run = self.run
        others = [
            other_failure(case_id(r), r.verdict, r.reason)
            for r in run.results
            if r.section not in MODES and r.verdict in (Verdict.FAILED, Verdict.XPASSED)
        ]
        records = [cause_record(c) for c in run.causes]
        errors = reasons_of(run.results, Verdict.ERROR)
        folded = [fault_record(f) for f in self.faults]
        return document(records, [case_id(r) for r in run.unexplained], errors, self.unsupported, others, folded)
