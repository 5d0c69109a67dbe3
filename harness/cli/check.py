"""`tokconf check`: run the check engine over recordings and print the table.

Exit status 0 only when something passed and nothing failed, broke or unexpectedly passed; 1
otherwise. With --junit, --report (.md or .html) the same results are also written to files.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.options import CHECK, add_to_argparse, positive


def add_parser(commands: Any) -> None:
    chk = commands.add_parser("check", help="check an implementation against recordings; prints the table")
    chk.set_defaults(run=run)
    add_to_argparse(chk, CHECK)
    chk.add_argument("--junit", type=Path, help="write JUnit XML here")
    chk.add_argument("--report", type=Path, help="write a .md or .html report here")
    chk.add_argument("--maxfail", type=positive(int), metavar="N", help="stop after N failing cases (errors count)")
    chk.add_argument("-x", "--exitfirst", action="store_const", const=1, dest="maxfail", help="stop at the first")
    chk.add_argument("--details", type=int, default=20, help="failing cases shown in full on the terminal (default 20)")


def run(args: argparse.Namespace) -> int:
    """The `check` command; returns the exit status."""
    from rich.console import Console
    from rich.table import Table

    from harness.check.engine import Selection
    from harness.check.junit import write_junit
    from harness.check.report import COLUMNS, describe, describe_cause, describe_group, group_problems
    from harness.check.run import check_paths
    from harness.check.xfail import ExpectedFailures
    from harness.core.errors import TokconfError
    from harness.core.files import BUNDLED_RECORDINGS, atomic_write
    from harness.core.render import visible

    for output in (args.junit, args.report):
        if output is not None and not output.parent.is_dir():
            raise TokconfError(f"{output}: folder {output.parent} does not exist", "create it, or write elsewhere")
    console = Console(highlight=False, width=max(120, Console().width))
    paths = args.recordings or [BUNDLED_RECORDINGS]
    recordings_arg = " ".join(str(p) for p in paths)
    selection = Selection(frozenset(args.vocab), frozenset(args.mode), frozenset(args.case))
    xfails = ExpectedFailures.load(args.xfail)
    impl = args.impl or "reference"
    run = check_paths(
        paths, impl, selection, xfails, args.vocab_dir, args.timeout, maxfail=args.maxfail, explain=args.explain
    )
    summary = run.summary
    groups = group_problems(summary.problems)
    details = [describe_group(g, run.vocabs.get(g[0].vocab), impl, recordings_arg) for g in groups]
    shown = details[: args.details]  # on the terminal; the report files hold every one
    for text in shown:
        console.print(text, markup=False, soft_wrap=True)  # a repro command must stay one line
        console.print()
    if len(details) > len(shown):
        console.print(f"... and {len(details) - len(shown)} more failing cases (--details N shows more)")
    causes = [describe_cause(i, c, run.vocabs.get(c.vocab), impl, recordings_arg) for i, c in enumerate(run.causes, 1)]
    for text in causes:
        console.print(text, markup=False, soft_wrap=True)
        console.print()
    if args.explain and summary.problems:
        failed = sum(len(c.cases) for c in run.causes)
        console.print(f"explained: {failed} failed cases as {len(run.causes)} cause(s)", markup=False)
    for (vocab, reason), cases in sorted(summary.unsupported.items()):
        console.print(f"unsupported: {cases} of {vocab}: {reason}", markup=False, soft_wrap=True)
    title = f"tokconf check: {run.impl_name} against {recordings_arg}"
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("vocab", "mode") else "right")
    for row in summary.rows():
        table.add_row(*row)
    console.print(table)
    if args.junit:  # every problem's story, not only the ones shown
        stories = {i: describe(r, run.vocabs.get(r.vocab), impl, recordings_arg) for i, r in enumerate(run.results)
                   if r.verdict.is_problem}  # fmt: skip
        index = {id(r): i for i, r in enumerate(run.results)}
        for number, cause in enumerate(run.causes, 1):  # with --explain: each failure names its cause
            for result in cause.cases:
                stories[index[id(result)]] += (
                    f"\n  explained by: cause {number} (minimal input {visible(cause.minimal)!r})"
                )
        write_junit(args.junit, run.results, stories)
    if args.report:
        render = summary.html if args.report.suffix == ".html" else summary.markdown
        text = render(title, details, causes)
        atomic_write(args.report, text, "report")
    stale = xfails.unmatched(set(run.vocabs))
    for entry in stale:
        word = "error" if args.strict_xfail else "warning"
        console.print(f"{word}: expected-failure entry {entry.pattern!r} matched no checked case", markup=False)
    if run.stopped:
        console.print(f"stopped after {args.maxfail} failing case(s) (--maxfail): the rest was not checked")
    # a mistyped --case must not shrink a gate silently (unless --maxfail stopped the run first)
    unmatched = [] if run.stopped else sorted(selection.cases - {r.case for r in run.results})
    for case in unmatched:
        console.print(f"error: --case {case} matched no case of the checked recordings", markup=False)
    console.print(summary.verdict_line(args.strict), markup=False, soft_wrap=True)
    return 0 if summary.ok(args.strict) and not (stale and args.strict_xfail) and not unmatched else 1
