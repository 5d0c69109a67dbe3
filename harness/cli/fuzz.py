"""`tokconf fuzz`: differential fuzzing against the live llama.cpp, in this process or, with
`--workers N`, as pytest items spread by pytest-xdist (`tokconf.fuzz.pytest_items`)."""

from __future__ import annotations

import argparse
import random
import shlex
import subprocess
import sys
from typing import Any

from ..fuzz import DEFAULT_DATABASE
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
    print(f"tokconf fuzz: seed {args.seed}, example database {args.database or 'none'}", file=sys.stderr, flush=True)
    if args.workers != 1:
        return _with_xdist(args)
    return _in_process(args)


def _in_process(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..core.outcome import MODES
    from ..fuzz import PROFILES
    from ..fuzz.campaign import Campaign, CampaignStats
    from ..fuzz.database import open_database
    from ..fuzz.findings import Finding, check_found_files, describe_finding, found_path, write_finding
    from ..fuzz.report import Progress, summary_lines, write_html
    from ..implementations.resolve import resolve
    from ..llama.build import require_build
    from ..llama.vocabs import resolve_vocabs, vocab_name

    made = require_build(args.build)
    vocabs = resolve_vocabs(args.vocab, made)
    modes = args.mode or list(MODES)
    budget = args.max_examples or PROFILES[args.profile]
    check_found_files(args.found_dir, made, vocabs)
    store = open_database(args.database, args.shared_database or "")
    impl = resolve(args.impl, args.timeout)
    described: list[str] = []
    written: set[Path] = set()
    progress = Progress()

    def keep(finding: Finding) -> None:
        path = found_path(args.found_dir, finding.vocab)
        text = "\n".join(describe_finding(finding, impl.name, args.impl, path))
        described.append(text)
        progress.done()
        print(text, flush=True)  # before the write: a finding that cannot be written is still reported
        written.add(write_finding(args.found_dir, finding, made, impl.name))

    stats = CampaignStats(seed=args.seed)
    campaign = Campaign(made, impl, modes, budget, store, stats, keep, progress)
    try:
        for vocab in vocabs:
            print(f"{vocab_name(vocab)}: {budget} examples x {len(modes)} modes", file=sys.stderr, flush=True)
            campaign.fuzz_vocab(vocab)
    finally:
        progress.done()
        impl.close()
        if args.report:
            write_html(args.report, f"tokconf fuzz: {args.impl}", stats, described)
    for line in stats.unsupported:
        print(f"unsupported: {line}")
    print("\n".join(summary_lines(stats)))
    for path in sorted(written):
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
