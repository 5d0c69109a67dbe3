"""One check run over recording files, as data: every result, the counts, the causes and the verdict.
`tokconf.check()`, `tokconf check` and the reports all start from a `CheckRun`; nothing here draws."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import cache_root
from ..core.sandbox import DEFAULT_POLICY, OWN_CODE, Confinement, Confiner, SandboxPolicy
from ..core.timeouts import CLI_TIMEOUTS, TimeoutOptions
from ..implementations.base import Implementation
from ..implementations.resolve import resolve
from ..recording.format import VocabGroup
from .contract import Decision, Gate
from .engine import CaseResult, CheckedFile, Selection, Stop, check_file
from .explain import Cause, Explanation, explain_file
from .interleave import Replay, replayable, sample
from .session import CheckSession, selected_recordings
from .summary import Summary
from .xfail import ExpectedFailures


@dataclass
class CheckRun:
    """Every result of a run, its counts and its verdict, and the GGUF file of each vocab (for pieces
    in reports). `decision` is the verdict contract's (docs/checking.md): PASS only when everything
    claimed was judged, covered and passed."""

    impl_name: str
    ended: Decision | None = None  # the verdict, set when the run has ended (`decision`)
    confiner: Confiner = (
        OWN_CODE  # how the implementation's processes were held; the verdict line says all but a sandbox
    )
    stopped: bool = False  # --maxfail was reached: part of the recordings was not checked
    maxfail: int | None = None
    summary: Summary = field(default_factory=Summary)
    results: list[CaseResult] = field(default_factory=list)
    vocabs: dict[str, Path] = field(default_factory=dict)
    explained: bool = False  # causes were looked for
    causes: list[Cause] = field(default_factory=list)  # with explain: each vocab's, most cases first
    unexplained: list[CaseResult] = field(default_factory=list)  # with explain: failures no cause reproduces
    explain_errors: list[str] = field(default_factory=list)  # with explain: vocabularies it could not explain

    @property
    def decision(self) -> Decision:
        """The run's verdict under the contract: `passed`, every reason it fails, its warnings."""
        if self.ended is None:
            raise TokconfError("the check run has not ended: it has no verdict yet")
        return self.ended

    @property
    def passed(self) -> bool:
        return self.ended is not None and self.ended.passed

    @property
    def contained(self) -> bool:
        """False: a port ran in tokconf's process (--in-process)."""
        return self.confiner.confinement is not Confinement.IN_PROCESS


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def check_paths(
    paths: list[Path],
    impl: str | Implementation,
    selection: Selection,
    xfails: ExpectedFailures,
    vocab_dir: Path | None,
    timeout: float | None,
    progress: Callable[[str], None] = _progress,
    maxfail: int | None = None,
    explain: bool = False,
    gate: Gate | None = None,
    jobs: int = 1,
    load_timeout: float | None = None,
    in_process: bool = False,
    options: TimeoutOptions = CLI_TIMEOUTS,
    sandbox: SandboxPolicy = DEFAULT_POLICY,
) -> CheckRun:
    """Check an implementation (an `--impl` value, or one made already) against every selected
    recording under `paths`; with `maxfail`, stop asking once that many problems were found; with
    `explain`, group each vocab's failures into causes (`tokconf.checking.explain`). With `jobs` above
    one (and an `--impl` value, and no `maxfail`), that many processes check a recording each at a
    time. A Python implementation runs in worker processes unless `in_process`
    (`tokconf.implementations.resolve`), every process of an implementation as `sandbox` says
    (`tokconf.core.sandbox`). The run is a `CheckSession` (`tokconf.checking.session`): it pins every
    recording and decoding judged before the first port process starts, finds every GGUF file, runs
    the interleaving check once the whole run was checked, and decides under `gate` (default:
    `Gate()`, every vocabulary the implementation loads) once every process of the implementation has
    ended."""
    session = CheckSession(paths, selection, xfails, gate or Gate(selection.claim), vocab_dir)
    files = selected_recordings(session.paths, selection)
    running = _Running(timeout, load_timeout, in_process, options, sandbox)
    sandbox.keep_out_of([*session.paths, cache_root()])
    try:
        session.pin(files)
        implementation = running.resolve(impl) if isinstance(impl, str) else impl  # a wrong --impl fails first
        try:
            vocabs = session.provision(files)
            checked, run = _checked(files, impl, implementation, session, running, explain, vocabs, jobs, maxfail,
                                    progress)  # fmt: skip
        finally:
            implementation.close()
    finally:
        session.close()
    run.confiner = implementation.confiner
    run.summary = session.summary
    for one in checked:
        run.vocabs[one.vocab_name] = one.vocab
        run.results.extend(one.results)
        if one.explanation is not None:
            run.causes += one.explanation.causes
            run.unexplained += one.explanation.unexplained
            run.explain_errors += [one.explanation.error] * bool(one.explanation.error)
    seen = None if run.stopped else {result.case for result in run.results}
    run.ended = session.decide(seen, run.confiner)
    return run


def _checked(
    files: list[Path],
    impl: str | Implementation,
    implementation: Implementation,
    session: CheckSession,
    running: _Running,
    explain: bool,
    vocabs: dict[Path, Path],
    jobs: int,
    maxfail: int | None,
    progress: Callable[[str], None],
) -> tuple[list[_Checked], CheckRun]:
    """Every recording checked (in `jobs` processes, or here) and counted, then the interleaving check."""
    task = _Task(impl, session.selection, session.xfails, session.vocab_dir, running, explain, vocabs)
    if isinstance(impl, str) and maxfail is None and min(jobs, len(files)) > 1:
        try:
            with ProcessPoolExecutor(min(jobs, len(files)), get_context("fork")) as pool:
                checked = list(_reported(pool.map(task, files), progress))
        except BrokenProcessPool:  # a port in process (--in-process) ended it, or a port killed it
            hint = (
                "run it without --in-process: in worker processes it cannot take it down" if running.in_process
                else "something killed it (the implementation, signalling its parent?); run the check again"
            )  # fmt: skip
            raise TokconfError(f"a process checking recordings with {impl} died: no verdict", hint) from None
        changed = sorted({one.impl_name for one in checked} - {implementation.name})
        if changed:  # a library rebuilt or replaced during the run: one verdict must be of one implementation
            raise TokconfError(f"{impl} changed during the run (it became {changed[0]})", "run the check again")
        run = CheckRun(implementation.name, explained=explain)
    else:
        run = CheckRun(implementation.name, maxfail=maxfail, explained=explain)
        stop = Stop(maxfail)
        checked = []
        for path in files:
            if stop.reached:
                run.stopped = True
                break
            checked += _reported([task.check(path, implementation, stop)], progress)
            run.stopped |= stop.reached
    for one in checked:
        session.count(one.results, one.group)
        session.xfails.matched |= one.matched
    replays = [one.replay for one in checked if one.replay is not None] if not run.stopped else []
    return checked + _interleaved(implementation, session, replays, progress), run


def _interleaved(implementation: Implementation, session: CheckSession, replays: list[Replay],
                 progress: Callable[[str], None]) -> list[_Checked]:  # fmt: skip
    """The interleaving check's results, counted, one `_Checked` per vocabulary (the run's results)."""
    results = session.interleave(implementation, replays)
    if results:
        progress(f"interleaved: {len(results)} checked in one process of {implementation.name}")
    replayed = {replay.vocab_name: replay for replay in replays}
    by_vocab: dict[str, list[CaseResult]] = {}
    for result in results:
        by_vocab.setdefault(result.vocab, []).append(result)
    return [_Checked(implementation.name, vocab, replayed[vocab].group, replayed[vocab].vocab.path, found, None,
                     set(), None) for vocab, found in by_vocab.items()]  # fmt: skip


@dataclass
class _Checked:
    """One recording, checked (and explained): what a process that checked it sends back."""

    impl_name: str
    vocab_name: str
    group: VocabGroup
    vocab: Path
    results: list[CaseResult]
    explanation: Explanation | None
    matched: set[str]  # the expected-failure entries its results matched
    replay: Replay | None  # its sample for the interleaving check


@dataclass
class _Task:
    """Checking one recording file, in this process or in a pool's."""

    impl: str | Implementation
    selection: Selection
    xfails: ExpectedFailures
    vocab_dir: Path | None
    running: _Running
    explain: bool
    vocabs: dict[Path, Path]

    def check(self, path: Path, implementation: Implementation, stop: Stop | None = None) -> _Checked:
        checked = check_file(path, implementation, self.selection, self.xfails, self.vocab_dir, stop,
                             vocab=self.vocabs[path])  # fmt: skip
        explanation = explain_file(checked, implementation) if self.explain else None
        recording = checked.recording
        return _Checked(implementation.name, recording.vocab_name, recording.group, checked.vocab, checked.results,
                        explanation, set(self.xfails.matched), _replay(checked))  # fmt: skip

    def __call__(self, path: Path) -> _Checked:
        """In a pool's process: the implementation resolved for this file alone, and closed after it."""
        assert isinstance(self.impl, str)
        implementation = self.running.resolve(self.impl)
        try:
            return self.check(path, implementation)
        finally:
            implementation.close()


@dataclass(frozen=True)
class _Running:
    """How an `--impl` value is run: the per-answer and loading timeouts (and the options that set them
    where the run was started), in tokconf's process or not, and confined how."""

    timeout: float | None
    load_timeout: float | None
    in_process: bool
    options: TimeoutOptions
    sandbox: SandboxPolicy

    def resolve(self, spec: str) -> Implementation:
        return resolve(spec, self.timeout, load_timeout=self.load_timeout, in_process=self.in_process,
                       options=self.options, sandbox=self.sandbox)  # fmt: skip


def _replay(checked: CheckedFile) -> Replay | None:
    return sample(
        checked.recording, checked.vocab, [(str(r.section), r.case) for r in checked.results if replayable(r)]
    )


def _reported(checked: Iterable[_Checked], progress: Callable[[str], None]) -> Iterator[_Checked]:
    for one in checked:
        progress(f"{one.vocab_name}: {len(one.results)} checked")
        yield one
