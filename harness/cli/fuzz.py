"""`tokconf fuzz`: differential fuzzing against the live llama.cpp, in this process or, with
`--workers N`, as pytest items spread by pytest-xdist (`tokconf.plugin.fuzz`); both run the
same `tokconf.fuzz.runner.Runner`."""

from __future__ import annotations

import argparse
import random
import shlex
import subprocess
import sys
from typing import Any

from ..fuzz import DEFAULT_DATABASE, Engine
from ..options import FUZZ, add_to_argparse, pytest_flag


def add_parser(commands: Any) -> None:
    fuz = commands.add_parser("fuzz", help="differential fuzzing of an implementation against the live llama.cpp")
    fuz.set_defaults(run=run)
    add_to_argparse(fuz, FUZZ)
    fuz.add_argument("--no-db", action="store_true", help="keep no example database (as --database '')")
    fuz.add_argument("--workers", type=int, default=1, help="spread over N processes (pytest-xdist); 0: all cores")


def run(args: argparse.Namespace) -> int:
    from ..core.errors import TokconfError

    if not args.impl:
        raise TokconfError("tokconf fuzz needs --impl", "e.g. --impl mypkg.tok:load, or --impl reference")
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        raise TokconfError("tokconf fuzz needs hypothesis", "pip install 'tokconf[fuzz]'") from None
    if args.no_db:
        args.database = ""
    elif args.database is None:
        args.database = DEFAULT_DATABASE
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    print(
        f"tokconf fuzz: seed {args.seed}, example database {args.database or 'none'}, engine {args.engine}",
        file=sys.stderr,
        flush=True,
    )
    if args.workers != 1:
        return _with_xdist(args)
    return _in_process(args)


def _in_process(args: argparse.Namespace) -> int:
    from ..builds.vocabs import vocab_name
    from ..fuzz.campaign import CampaignStats
    from ..fuzz.report import Progress, summary_lines, write_html
    from ..fuzz.runner import Asked, Runner

    asked = Asked.of(lambda name: getattr(args, name.replace("-", "_")), args.seed, args.database, Engine(args.engine))
    progress = Progress()

    def announce(text: str) -> None:
        progress.done()
        print(text, flush=True)

    runner = Runner(asked, announce, progress)
    vocabs = runner.vocabs()
    runner.prepare(vocabs)
    stats = CampaignStats(seed=args.seed)
    try:
        for vocab in vocabs:
            print(f"{vocab_name(vocab)}: {asked.budget} examples x {len(asked.modes)} modes", file=sys.stderr)
            runner.fuzz(vocab, asked.modes, stats)
    finally:
        progress.done()
        runner.close()
        if args.report:
            write_html(args.report, f"tokconf fuzz: {args.impl}", stats, runner.described)
    for line in stats.unsupported:
        print(f"unsupported: {line}")
    print("\n".join(summary_lines(stats)))
    for path in sorted(runner.written):
        gate = shlex.join(["tokconf", "check", "--impl", args.impl, "--recordings", str(path.parent)])
        print(f"found cases written to {path} (gate them: {gate})")
    if args.report:
        print(f"report written to {args.report}")
    decision = stats.decide()
    for reason in decision.reasons:
        print(f"fail: {reason}")
    print(decision.line())
    return 1 if stats.findings or not decision.passed else 0


def _with_xdist(args: argparse.Namespace) -> int:
    """The same campaign as pytest items, spread by pytest-xdist; every option passed on by the table."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--dist", "loadgroup"]
    argv += ["-n", str(args.workers) if args.workers > 0 else "auto"]
    for option in FUZZ:
        value = getattr(args, option.name.replace("-", "_"))
        values = value if option.many else [] if value is None else [value]
        argv += [f"{pytest_flag('tokconf-fuzz', option)}={v}" for v in values]
    return subprocess.call(argv)
