"""The pytest plugin (`pytest11` entry point `tokconf`): one test item per recorded case and mode,
one for the vocab facts, and one per decoding check where the recording has a decoding.

Active when recordings are named (`--tokconf-recordings PATH` or the `tokconf_recordings` ini
option). Items are addressable by stable node ids, `tokconf/b11192::qwen2-special-fuzz-0042`, and
selectable with `-k`. A vocabulary's selected cases are checked in one batch the first time one of
its items runs (`harness.checking`), so each item only looks its verdict up; with pytest-xdist run
`-n auto --dist loadgroup` to keep a vocabulary on one worker. The end-of-run summary prints the
table `tokconf check` prints.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harness.checking import (
    DECODE,
    FACTS_CASE,
    VERDICTS,
    CaseResult,
    ExpectedFailures,
    Selection,
    check_recording,
    vocab_file,
)
from harness.decoding import DETOKENIZE, PIECE_KINDS, load_for
from harness.decoding import path_for as decoding_path
from harness.errors import TokconfError
from harness.impls import Implementation, resolve
from harness.recording import MODES, Recording, load, recording_files
from harness.report import Summary, describe

STASH_ENGINE = pytest.StashKey["Engine"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tokconf", "tokenizer conformance against llama.cpp recordings")
    group.addoption("--tokconf-impl", default="reference", help="reference, module:factory, 'cmd:…', llama.cpp@N")
    group.addoption("--tokconf-recordings", action="append", default=[], help="recording file or folder")
    group.addoption("--tokconf-vocab", action="append", default=[], help="only these vocabs")
    group.addoption(
        "--tokconf-mode",
        action="append",
        default=[],
        choices=[*MODES, DECODE],
        help="only these modes (decode: decoding)",
    )
    group.addoption("--tokconf-xfail", help="expected-failure file")
    group.addoption("--tokconf-vocab-dir", help="folder with the GGUF files")
    group.addoption("--tokconf-timeout", type=float, default=10.0, help="per-case timeout for cmd: programs")
    parser.addini("tokconf_recordings", "recordings checked on every run", type="paths", default=[])


class CaseFailed(Exception):
    """A case whose verdict is failed, error or xpassed; the message is the full report."""


class Engine:
    """Loads recordings, runs the implementation once per vocabulary, hands out verdicts."""

    def __init__(self, config: pytest.Config, paths: list[Path]) -> None:
        self.spec = str(config.getoption("tokconf_impl"))
        self.paths = paths
        self.selection = Selection(
            frozenset(config.getoption("tokconf_vocab")), frozenset(config.getoption("tokconf_mode"))
        )
        xfail = config.getoption("tokconf_xfail")
        self.xfails = ExpectedFailures.load(Path(xfail) if xfail else None)
        vocab_dir = config.getoption("tokconf_vocab_dir")
        self.vocab_dir = Path(vocab_dir) if vocab_dir else None
        self.timeout = float(config.getoption("tokconf_timeout"))
        self._impl: Implementation | None = None
        self._results: dict[str, dict[tuple[str, str], CaseResult]] = {}
        self.vocab_paths: dict[str, Path] = {}

    @property
    def wants_decoding(self) -> bool:
        return not self.selection.modes or DECODE in self.selection.modes

    def recordings(self) -> Iterable[tuple[Path, Recording]]:
        for path in recording_files(self.paths):
            if not self.selection.vocabs or path.stem in self.selection.vocabs:
                yield path, load(path)

    def facts(self, path: Path) -> list[CaseResult]:
        return [r for (mode, _), r in self._checked(path).items() if mode == FACTS_CASE]

    def result(self, path: Path, mode: str, case: str) -> CaseResult:
        """The verdict of one case and mode."""
        return self._checked(path).get((mode, case)) or _MISSING

    def _checked(self, path: Path) -> dict[tuple[str, str], CaseResult]:
        """Every verdict of one recording; the whole vocabulary is checked on first use."""
        key = str(path)
        if key not in self._results:
            recording = load(path)
            if self._impl is None:
                self._impl = resolve(self.spec, self.timeout)
            vocab = vocab_file(recording, self.vocab_dir)
            self.vocab_paths[recording.vocab_name] = vocab
            decoding = load_for(path) if self.wants_decoding else None
            found = check_recording(recording, self._impl, vocab, self.selection, self.xfails, decoding)
            self._results[key] = {(r.mode, r.case): r for r in found}
            gc.freeze()  # these live to the end: keep the cyclic GC from rescanning them (see below)
        return self._results[key]

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()


_MISSING = CaseResult("", "", "", "error", b"", [], None, "no verdict: the case was not checked")


class RecordingFile(pytest.Collector):
    """The items of one recording file."""

    def collect(self) -> list[pytest.Item]:
        return []


class CaseItem(pytest.Item):
    def __init__(self, *, path_: Path, vocab: str, mode: str, case: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recording_path = path_
        self.vocab = vocab
        self.mode = mode
        self.case = case
        self.add_marker(pytest.mark.xdist_group(vocab))

    def runtest(self) -> None:
        engine = self.config.stash[STASH_ENGINE]
        try:
            if self.mode == FACTS_CASE:
                self._check_facts(engine)
                return
            result = engine.result(self.recording_path, self.mode, self.case)
        except TokconfError as error:
            raise CaseFailed(f"tokconf could not check {self.vocab}: {error}") from None
        self.user_properties.append(("tokconf", (result.vocab, result.mode, result.verdict)))
        if result.verdict == "passed":
            return
        if result.verdict == "unsupported":
            pytest.skip(f"unsupported: {result.reason}")
        if result.verdict == "xfailed":
            pytest.xfail(result.reason)
        recordings = " ".join(str(p) for p in engine.paths)
        raise CaseFailed(describe(result, engine.vocab_paths.get(result.vocab), engine.spec, recordings))

    def _check_facts(self, engine: Engine) -> None:
        facts = engine.facts(self.recording_path)
        if not facts:
            pytest.skip("the implementation exposes no vocab facts (add_bos, bos_id, eos_id, eog_ids, ...)")
        for result in facts:
            self.user_properties.append(("tokconf", (result.vocab, FACTS_CASE, result.verdict)))
        wrong = [r.reason for r in facts if r.verdict != "passed"]
        if wrong:
            raise CaseFailed(f"{self.vocab} facts differ from llama.cpp's:\n  " + "\n  ".join(wrong))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.recording_path, None, f"{self.vocab} [{self.mode}] {self.case}"


def _paths(config: pytest.Config) -> list[Path]:
    given = [Path(p) for p in config.getoption("tokconf_recordings")]
    return given or [Path(p) for p in config.getini("tokconf_recordings")]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): pytest-xdist keeps a group on one worker (loadgroup)")
    paths = _paths(config)
    if paths:
        config.stash[STASH_ENGINE] = Engine(config, paths)
        config.pluginmanager.register(Reporter(), "tokconf-reporter")


def pytest_unconfigure(config: pytest.Config) -> None:
    engine = config.stash.get(STASH_ENGINE, None)
    if engine is not None:
        engine.close()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    engine = config.stash.get(STASH_ENGINE, None)
    if engine is None:
        return
    for path, recording in engine.recordings():
        build = recording.provenance["llama_cpp"]["build"]
        nodeid = f"tokconf/b{build}/{recording.vocab_name}"
        parent = RecordingFile.from_parent(session, name=nodeid, path=path, nodeid=nodeid)
        found: list[pytest.Item] = []
        for case in recording.cases:
            for mode in case.outcomes:
                if engine.selection.wants(recording.vocab_name, mode, case.id):
                    name = f"{recording.vocab_name}-{mode}-{case.id.replace('/', '-')}"
                    found.append(_item(parent, name, path, recording.vocab_name, mode, case.id))
        if not engine.selection.modes:
            found.append(_item(parent, f"{recording.vocab_name}-facts", path, recording.vocab_name, FACTS_CASE, "*"))
        if engine.wants_decoding and decoding_path(path).is_file():  # one item per decoding check
            for kind in (*PIECE_KINDS, *DETOKENIZE):
                found.append(
                    _item(parent, f"{recording.vocab_name}-decode-{kind}", path, recording.vocab_name, DECODE, kind)
                )
        # Tell the terminal (and xdist) what was collected, as pytest's own collection does.
        collected: list[pytest.Item | pytest.Collector] = list(found)
        config.hook.pytest_collectreport(report=pytest.CollectReport(nodeid, "passed", None, collected))
        items.extend(found)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built: with 200,000 items the cyclic GC otherwise rescans them all,
    over and over, and a full run spends most of its time in `gc_collect_main`."""
    if STASH_ENGINE in session.config.stash:
        gc.collect()
        gc.freeze()


def _item(parent: RecordingFile, name: str, path: Path, vocab: str, mode: str, case: str) -> CaseItem:
    return CaseItem.from_parent(parent, name=name, path_=path, vocab=vocab, mode=mode, case=case)


class Reporter:
    """Counts verdicts from test reports (also those sent back by xdist workers) and prints the table."""

    def __init__(self) -> None:
        self.summary = Summary()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == "tokconf" and isinstance(value, (list, tuple)):  # xdist sends tuples back as lists
                vocab, mode, verdict = (str(v) for v in value)
                self.summary.counts[(vocab, mode)][verdict] += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.summary.counts:
            return
        terminalreporter.section("tokconf conformance")
        header = ["vocab", "mode", *VERDICTS, "conformance"]
        rows = [header, *self.summary.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            terminalreporter.write_line("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
