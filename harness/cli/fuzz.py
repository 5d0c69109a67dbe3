"""`tokconf fuzz`: differential fuzzing against the live llama.cpp, in this process or, with
`--workers N`, as pytest items spread by pytest-xdist (`harness.fuzz.pytest_items`)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

from harness.options import FUZZ, add_to_argparse, pytest_flag


def add_parser(commands: Any) -> None:
    fuz = commands.add_parser("fuzz", help="differential fuzzing of an implementation against the live llama.cpp")
    fuz.set_defaults(run=run)
    add_to_argparse(fuz, FUZZ)
    fuz.add_argument("--no-db", action="store_true", help="keep no example database")
    fuz.add_argument("--workers", type=int, default=1, help="spread over N processes (pytest-xdist); 0: all cores")


def run(args: argparse.Namespace) -> int:
    from harness.core.errors import TokconfError

    if not args.impl:
        raise TokconfError("tokconf fuzz needs --impl", "e.g. --impl mypkg.tok:load, or --impl reference")
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        raise TokconfError("tokconf fuzz needs hypothesis", "pip install 'tokconf[fuzz]'") from None
    if args.workers != 1:
        return _with_xdist(args)
    return _in_process(args)


def _in_process(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hypothesis.configuration import set_hypothesis_home_dir

    from harness.core.files import cache_root
    from harness.core.outcome import MODES
    from harness.fuzz import PROFILES
    from harness.fuzz.campaign import CampaignStats, database_at, fuzz_vocab
    from harness.fuzz.findings import describe_finding, write_findings
    from harness.implementations.resolve import resolve
    from harness.llama.build import require_build
    from harness.llama.vocabs import resolve_vocabs, vocab_name

    made = require_build(args.build)
    vocabs = resolve_vocabs(args.vocab, made)
    modes = args.mode or list(MODES)
    budget = args.max_examples or PROFILES[args.profile]
    impl = resolve(args.impl, args.timeout)
    database = database_at(None if args.no_db or not args.db else Path(args.db))
    stats = CampaignStats()
    # hypothesis keeps files of its own (`.hypothesis/constants`) in the working directory unless told
    # otherwise: a campaign writes only what the user asked for there, so they go to tokconf's cache.
    set_hypothesis_home_dir(cache_root() / "hypothesis")
    try:
        for vocab in vocabs:
            print(f"{vocab_name(vocab)}: {budget} examples x {len(modes)} modes", file=sys.stderr, flush=True)
            fuzz_vocab(made, impl, vocab, modes, budget, args.seed, database, stats)
    finally:
        set_hypothesis_home_dir(None)
        impl.close()
    for finding in stats.findings:
        print("\n".join(describe_finding(finding, impl.name, args.impl)))
    for line in stats.unsupported:
        print(f"unsupported: {line}")
    written = write_findings(args.found_dir, stats.findings, args.seed, impl.name)
    rate = stats.examples / max(stats.seconds, 1e-9)
    share = 100 * stats.oracle_seconds / max(stats.oracle_seconds + stats.impl_seconds, 1e-9)
    print(
        f"{stats.examples} examples in {stats.seconds:.1f} s ({rate:.0f}/s; {share:.0f}% of the tokenizing time in "
        f"llama.cpp), {len(stats.findings)} distinct failures, {len(stats.unsupported)} unsupported vocabs"
    )
    for path in written:
        print(f"found cases written to {path}")
    return 1 if stats.findings else 0


def _with_xdist(args: argparse.Namespace) -> int:
    """The same campaign as pytest items, spread by pytest-xdist; every option passed on by the table."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--dist", "loadgroup"]
    argv += ["-n", str(args.workers) if args.workers > 0 else "auto"]
    for option in FUZZ:
        value = getattr(args, option.name.replace("-", "_"))
        if option.name == "db" and args.no_db:
            value = ""
        values = value if option.many else [] if value is None else [value]
        argv += [f"{pytest_flag('tokconf-fuzz', option)}={v}" for v in values]
    return subprocess.call(argv)
