"""`tokconf check`: run the check engine over recordings and print the table.

Exit status 0 only when the verdict contract (`tokconf.check.contract`) says PASS: every claimed
vocab x mode judged and covered, nothing failed, broke or unexpectedly passed; 1 otherwise, with
every reason. With --junit, --report (.md or .html) the same results are also written to files.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..options import CHECK, add_to_argparse, positive

UNSUPPORTED_SHOWN = 10  # reasons of unsupported answers on the terminal, the largest groups first


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

    from ..check.contract import Claim, Gate, Verdict
    from ..check.engine import Selection
    from ..check.explain.causes import case_id, cause_record, document, other_failure, reasons_of, write_causes
    from ..check.junit import write_junit
    from ..check.report import (
        COLUMNS,
        REPORT_FORMATS,
        Invocation,
        describe,
        describe_cause,
        describe_group,
        describe_unexplained,
        group_problems,
    )
    from ..check.run import check_paths
    from ..check.xfail import ExpectedFailures
    from ..core.errors import TokconfError
    from ..core.files import BUNDLED_RECORDINGS, atomic_write
    from ..core.outcome import MODES

    for output in (args.junit, args.report, args.causes):
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
            paths,
            impl,
            selection,
            xfails,
            args.vocab_dir,
            args.timeout,
            maxfail=args.maxfail,
            explain=args.explain or args.causes is not None,
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
    for error in run.explain_errors:
        console.print(f"explain: {error}", markup=False, soft_wrap=True)
    if run.unexplained:
        console.print(describe_unexplained(run.unexplained), markup=False, soft_wrap=True)
    if args.explain and summary.problems:
        failed = len({id(r) for c in run.causes for r in c.cases})
        console.print(f"explained: {failed} failed cases as {len(run.causes)} cause(s)", markup=False)
    unsupported = reasons_of(run.results, Verdict.UNSUPPORTED)
    for group in unsupported[:UNSUPPORTED_SHOWN]:
        console.print(
            f"unsupported: {len(group.cases)} of {group.vocab}: {group.example}", markup=False, soft_wrap=True
        )
    if len(unsupported) > UNSUPPORTED_SHOWN:
        rest, reasons = sum(len(g.cases) for g in unsupported[UNSUPPORTED_SHOWN:]), len(unsupported) - UNSUPPORTED_SHOWN
        console.print(f"unsupported: {rest} more, for {reasons} other reasons (--causes FILE lists all)")
    if args.causes:
        records = [cause_record(c) for c in run.causes]
        errors = reasons_of(run.results, Verdict.ERROR)
        others = [
            other_failure(case_id(r), r.verdict, r.reason)
            for r in run.results
            if r.section not in MODES and r.verdict in (Verdict.FAILED, Verdict.XPASSED)
        ]
        write_causes(args.causes, document(records, [case_id(r) for r in run.unexplained], errors, unsupported, others))
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
                stories[id(result)] += f"\n  explained by: cause {number}, {cause.kind.value}: {cause.label}"
        write_junit(args.junit, run.results, {i: stories[id(r)] for i, r in enumerate(run.results) if id(r) in stories})
    decision = run.decide(gate, selection, xfails)
    if args.report and args.report.suffix == ".html":
        from ..check.html_report import render_html

        atomic_write(args.report, render_html(run, decision, title, how), "report")
    elif args.report:  # every case id of every cause, not the first few the terminal shows
        every = [
            f"{text}\n  every case:    {' '.join(map(case_id, c.cases))}"
            for text, c in zip(causes, run.causes, strict=True)
        ]
        atomic_write(args.report, summary.markdown(title, decision, details, every), "report")
    for entry in xfails.unmatched(set(run.vocabs)):
        if not gate.strict_xfail:  # with --strict-xfail it is one of the decision's reasons below
            console.print(f"warning: expected-failure entry {entry.pattern!r} matched no checked case", markup=False)
    if run.stopped:
        console.print(f"stopped after {args.maxfail} failing case(s) (--maxfail): the rest was not checked")
    for reason in decision.reasons:
        console.print(f"fail: {reason}", markup=False, soft_wrap=True)
    console.print(decision.line(), markup=False, soft_wrap=True)
    return decision.exit_status
