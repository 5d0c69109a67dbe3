"""`tokconf check`: run the check engine over recordings and print the table.

Exit status 0 only when the verdict contract (`harness.check.contract`) says PASS: every claimed
vocab x mode judged and covered, nothing failed, broke or unexpectedly passed; 1 otherwise, with
every reason. With --junit, --report (.md or .html) the same results are also written to files.
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

    from harness.check.contract import Claim, Gate
    from harness.check.engine import Selection
    from harness.check.junit import write_junit
    from harness.check.report import (
        COLUMNS,
        REPORT_FORMATS,
        Invocation,
        describe,
        describe_cause,
        describe_group,
        group_problems,
    )
    from harness.check.run import check_paths
    from harness.check.xfail import ExpectedFailures
    from harness.core.errors import TokconfError
    from harness.core.files import BUNDLED_RECORDINGS, atomic_write
    from harness.core.render import visible

    for output in (args.junit, args.report):
        if output is not None and not output.parent.is_dir():
            raise TokconfError(f"{output}: folder {output.parent} does not exist", "create it, or write elsewhere")
    if args.report is not None and args.report.suffix not in REPORT_FORMATS:
        raise TokconfError(f"--report {args.report}: the name must end in .md or .html", "e.g. --report report.html")
    console = Console(highlight=False, width=max(120, Console().width))
    paths = args.recordings or [BUNDLED_RECORDINGS]
    impl = args.impl or "reference"
    how = Invocation(
        impl,
        tuple(str(p) for p in args.recordings),
        args.timeout,
        str(args.xfail) if args.xfail else None,
        str(args.vocab_dir) if args.vocab_dir else None,
    )
    gate = Gate(Claim(tuple(args.claim), args.min_coverage), args.strict, args.strict_xfail)
    selection = Selection(frozenset(args.vocab), frozenset(args.mode), frozenset(args.case), claim=gate.claim)
    xfails = ExpectedFailures.load(args.xfail)
    try:
        run = check_paths(
            paths, impl, selection, xfails, args.vocab_dir, args.timeout, maxfail=args.maxfail, explain=args.explain
        )
    except SystemExit as exit:  # from port code no adapter call guards: the run has no verdict, never a green one
        raise TokconfError(
            f"the implementation ended the run (sys.exit({exit.code!r})): no verdict",
            "fix the implementation; run it with --timeout, in a worker process, to keep the run going",
        ) from None
    summary = run.summary
    groups = group_problems(summary.problems)
    details = [describe_group(g, run.vocabs.get(g[0].vocab), how) for g in groups]
    shown = details[: args.details]  # on the terminal; the report files hold every one
    for text in shown:
        console.print(text, markup=False, soft_wrap=True)  # a repro command must stay one line
        console.print()
    if len(details) > len(shown):
        console.print(f"... and {len(details) - len(shown)} more failing cases (--details N shows more)")
    causes = [describe_cause(i, c, run.vocabs.get(c.vocab), how) for i, c in enumerate(run.causes, 1)]
    for text in causes:
        console.print(text, markup=False, soft_wrap=True)
        console.print()
    if args.explain and summary.problems:
        failed = sum(len(c.cases) for c in run.causes)
        console.print(f"explained: {failed} failed cases as {len(run.causes)} cause(s)", markup=False)
    for (vocab, reason), cases in sorted(summary.unsupported.items()):
        console.print(f"unsupported: {cases} of {vocab}: {reason}", markup=False, soft_wrap=True)
    recordings_arg = " ".join(str(p) for p in paths)
    title = f"tokconf check: {run.impl_name} against {recordings_arg}"
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("vocab", "mode") else "right")
    for row in summary.rows():
        table.add_row(*row)
    console.print(table)
    if args.junit:  # every problem's story, not only the ones shown
        stories = {id(r): describe(r, run.vocabs.get(r.vocab), how) for r in run.results if r.verdict.is_problem}
        for number, cause in enumerate(run.causes, 1):  # with --explain: each failure names its cause
            for result in cause.cases:
                stories[id(result)] += f"\n  explained by: cause {number} (minimal input {visible(cause.minimal)!r})"
        write_junit(args.junit, run.results, {i: stories[id(r)] for i, r in enumerate(run.results) if id(r) in stories})
    if args.report:
        render = summary.html if args.report.suffix == ".html" else summary.markdown
        text = render(title, details, causes)
        atomic_write(args.report, text, "report")
    decision = run.decide(gate, selection, xfails)
    for entry in xfails.unmatched(set(run.vocabs)):
        if not gate.strict_xfail:  # with --strict-xfail it is one of the decision's reasons below
            console.print(f"warning: expected-failure entry {entry.pattern!r} matched no checked case", markup=False)
    if run.stopped:
        console.print(f"stopped after {args.maxfail} failing case(s) (--maxfail): the rest was not checked")
    for reason in decision.reasons:
        console.print(f"fail: {reason}", markup=False, soft_wrap=True)
    console.print(decision.line(), markup=False, soft_wrap=True)
    return decision.exit_status
