"""The check as pytest items: one per recorded case and mode, one for the vocab facts, and one per
decoding check where the recording has a decoding (registered by `tokconf.plugin` when a run names an
implementation).

Items are addressable by stable node ids, `tokconf/b11192/qwen2::qwen2-special-fuzz-0042`, and
selectable with `-k`. A vocabulary's items that the run kept (after `-k`, `--deselect`, `--lf`) are
checked in one batch the first time one of them runs (`tokconf.checking.engine`), so each item only
looks its verdict up; with pytest-xdist run `-n auto --dist loadgroup` to keep a vocabulary on one
worker. The end-of-run summary prints the table `tokconf check` prints.
"""

from __future__ import annotations

import dataclasses
import gc
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..checking.contract import DECODE, FACTS, Claim, Decision, Gate, Section, Standing, Verdict
from ..checking.engine import ALL_FACTS, CaseResult, CheckedFile, Selection, check_file
from ..checking.explain import explain_file
from ..checking.explain.causes import case_id, cause_record, document, group_reasons, other_failure, write_causes
from ..checking.interleave import sample
from ..checking.session import INTERRUPTED, CheckSession
from ..checking.summary import agreed_abort
from ..checking.xfail import ExpectedFailures
from ..core.errors import TokconfError
from ..core.outcome import MODES, InputClass, Mode, RefusalKind
from ..core.printable import printable
from ..core.sandbox import SandboxPolicy
from ..core.timeouts import TimeoutOptions
from ..implementations.base import Implementation
from ..implementations.resolve import confiner_of, resolve
from ..options import LOAD_TIMEOUT, TIMEOUT, pytest_flag
from ..recording.decoding import DETOKENIZE, PIECE_KINDS
from ..recording.decoding import path_for as decoding_path
from ..recording.format import Recording, VocabGroup, load, recording_files
from ..reporting.report import (
    Invocation,
    abort_lines,
    closing_lines,
    decline_lines,
    describe,
    describe_cause,
    text_table,
)
from ..reporting.verdict_json import write_unfinished, write_verdict
from .items import ItemGroup, ReportedFailure, TokconfItem, collect_into

PROPERTY = "tokconf"  # the user property each item reports its verdict under: a `Reported`, as JSON
XFAIL_PROPERTY = "tokconf-xfail"  # the expected-failure entry an xfailed or xpassed item matched
CAUSE_PROPERTY = "tokconf-cause"  # with --tokconf-explain: the cause a failed item is counted under
# The options that set the timeouts in pytest, which their messages name (not `tokconf check`'s).
TIMEOUTS = TimeoutOptions(pytest_flag("tokconf", TIMEOUT), pytest_flag("tokconf", LOAD_TIMEOUT))


@dataclass(frozen=True)
class Reported:
    """One verdict as an item reports it: a JSON object in the item's user properties (what xdist
    workers send and JUnit files show), counted once in the process that prints the table and applies
    the contract."""

    vocab: str
    section: Section
    verdict: Verdict
    group: VocabGroup
    standing: Standing
    case: str = ""
    reason: str = ""  # kept for unsupported results, errors and failed facts or decoding: `--causes` lists them
    recording: str = ""  # its recording file: the interleaving check replays what passed in each
    declined: InputClass | None = None  # an unsupported case's input class
    aborted: RefusalKind | None = None  # how a passed case aborted where llama.cpp aborts (`agreed_abort`)
    size: int = 0  # the input's bytes: a grant's share of the recorded bytes

    @classmethod
    def of(cls, result: CaseResult, group: VocabGroup, recording: Path) -> Reported:
        other = result.section not in MODES and result.verdict in (Verdict.FAILED, Verdict.XPASSED)
        kept = result.verdict in (Verdict.UNSUPPORTED, Verdict.ERROR) or other
        return cls(
            result.vocab, result.section, result.verdict, group, result.standing, result.case,
            result.reason if kept else "", str(recording), result.declined, agreed_abort(result), len(result.data),
        )  # fmt: skip

    def to_property(self) -> str:
        fields: dict[str, str | int | None] = {"vocab": self.vocab, "section": self.section}
        fields |= {"verdict": self.verdict.value, "case": self.case}
        fields |= {"group": self.group.value, "standing": self.standing.value, "reason": self.reason}
        fields |= {"recording": self.recording, "declined": self.declined.value if self.declined else None}
        fields |= {"aborted": self.aborted.value if self.aborted else None, "size": self.size}
        return json.dumps(fields)  # ASCII: a port's lone surrogate in a reason is an escape, not an encoding error

    @classmethod
    def from_property(cls, text: str) -> Reported:
        value = json.loads(text)
        section: Section = value["section"]  # written by `to_property`
        declined = InputClass.named(value["declined"]) if value["declined"] else None
        aborted = RefusalKind(value["aborted"]) if value["aborted"] else None
        return cls(value["vocab"], section, Verdict(value["verdict"]), VocabGroup(value["group"]),
                   Standing(value["standing"]), value["case"], value["reason"], value["recording"],
                   declined, aborted, value["size"])  # fmt: skip

    @property
    def case_id(self) -> str:
        return f"{self.vocab}/{self.section}/{self.case}"


class CaseItem(TokconfItem):
    def __init__(self, *, recording: Path, vocab: str, section: Section, case: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.location_path = recording
        self.vocab = vocab
        self.section = section
        self.case = case
        self.label = f"{vocab} [{section}] {case}"
        self.add_marker(pytest.mark.xdist_group(vocab))

    def runtest(self) -> None:
        plugin = self.config.stash[CheckPlugin.STASH]
        try:
            results = plugin.facts(self.location_path) if self.section == FACTS else [plugin.result(self)]
        except TokconfError as error:
            raise ReportedFailure(f"tokconf could not check {printable(self.vocab)}: {printable(str(error))}") from None
        for result in results:
            reported = Reported.of(result, plugin.group(self.location_path), self.location_path)
            self.user_properties.append((PROPERTY, reported.to_property()))
            for cause in plugin.causes.get((self.location_path, result.section, result.case), ()):
                self.user_properties.append((CAUSE_PROPERTY, cause))
        if self.section == FACTS:
            problems = [r for r in results if r.verdict.is_problem]
            if problems:
                said = "\n  ".join(printable(r.reason) for r in problems)
                raise ReportedFailure(
                    f"{printable(self.vocab)} facts differ from llama.cpp's (or could not be asked):\n  {said}"
                )
            unsupported = [printable(r.reason) for r in results if r.verdict is Verdict.UNSUPPORTED]
            if unsupported and plugin.strict:
                raise ReportedFailure(
                    f"{printable(self.vocab)} facts unsupported (--tokconf-strict):\n  " + "\n  ".join(unsupported)
                )
            if unsupported and len(unsupported) == len(results):
                pytest.skip("the implementation exposes no vocab facts (add_bos, bos_id, eos_id, eog_ids, ...)")
            return
        problems = [r for r in results if r.verdict is not Verdict.PASSED]
        if not problems:
            return
        result = problems[0]
        if result.verdict is Verdict.UNSUPPORTED:
            if plugin.strict:
                raise ReportedFailure(f"unsupported (--tokconf-strict): {printable(result.reason)}")
            pytest.skip(f"unsupported: {printable(result.reason)}")
        if result.verdict in (Verdict.XFAILED, Verdict.XPASSED):
            entry = plugin.xfails.lookup(result.vocab, result.section, result.case)
            self.user_properties.append((XFAIL_PROPERTY, entry.pattern if entry else ""))
        if result.verdict is Verdict.XFAILED:
            pytest.xfail(printable(result.reason))
        raise ReportedFailure(describe(result, plugin.vocab_paths.get(result.vocab), plugin.how))


class CheckPlugin:
    """Collects the items, runs the implementation once per vocabulary, hands out verdicts, and prints
    the table at the end (counting verdicts from reports, so xdist workers' results count too)."""

    STASH = pytest.StashKey["CheckPlugin"]()
    NAME = "tokconf-check"

    def __init__(
        self,
        config: pytest.Config,
        spec: str,
        paths: list[Path],
        given: list[Path],
        claims: tuple[str, ...],
        granted: frozenset[InputClass],
    ) -> None:
        """`paths`: the recordings checked; `given`: as named (none for the bundled default); `granted`:
        the input classes the run grants (`--tokconf-allow-decline`)."""
        config.stash[self.STASH] = self
        self.spec = spec
        self.paths = paths
        claim = Claim(claims, config.getoption("tokconf_min_coverage"))
        gate = Gate(
            claim,
            bool(config.getoption("tokconf_strict")),
            bool(config.getoption("tokconf_strict_xfail")),
            claimable=True,
            granted=granted,
        )
        selection = Selection(
            frozenset(config.getoption("tokconf_vocab")),
            frozenset(config.getoption("tokconf_mode")),
            frozenset(config.getoption("tokconf_case")),
            claim=claim,
        )
        xfails = ExpectedFailures.load(config.getoption("tokconf_xfail"))
        vocab_dir: Path | None = config.getoption("tokconf_vocab_dir")
        # the run's recordings, counts and verdict: workers only count what they report in it
        self.session = CheckSession(paths, selection, xfails, gate, vocab_dir, "--tokconf-vocab")
        self.selection = selection
        self.xfails = xfails
        self.strict = gate.strict
        self.timeout: float | None = config.getoption("tokconf_timeout")
        self.load_timeout: float | None = config.getoption("tokconf_load_timeout")
        self.in_process = bool(config.getoption("tokconf_in_process"))
        self.sandbox = SandboxPolicy.of(config.getoption("tokconf_sandbox"), config.getoption("tokconf_sandbox_write"),
                                      bool(config.getoption("tokconf_sandbox_network")))  # fmt: skip
        # given on the command line (not only in an ini file): a run that then judges nothing must fail
        self.asked_for = bool(config.getoption("tokconf_impl"))
        self.collect_only = bool(config.getoption("collectonly"))
        self.json: Path | None = config.getoption("tokconf_json")
        self.table: str = config.getoption("tokconf_table")  # `--tokconf-table`: summary or full, as `--table`
        if self.json is not None and not hasattr(config, "workerinput"):
            write_unfinished(self.json, spec)
        self.passed: dict[str, set[tuple[str, str]]] = {}  # recording -> (mode, case) that passed: interleave
        self.interleaved: list[CaseResult] = []
        xfail = config.getoption("tokconf_xfail")
        self.how = Invocation.of(spec, given, self.timeout, xfail, vocab_dir, self.load_timeout)
        self.collected_cases: set[str] = set()  # every case id collected, for a --tokconf-case typo
        self.decision: Decision | None = None
        self._impl: Implementation | None = None
        self._unresolved: Exception | None = None
        self._results: dict[Path, dict[tuple[Section, str], CaseResult]] = {}
        self._collected: dict[Path, Recording] = {}
        self._groups: dict[Path, VocabGroup] = {}  # each collected recording's table group
        self._kept: dict[Path, frozenset[tuple[Section, str]]] = {}  # the items the run kept, by recording
        self.vocab_paths: dict[str, Path] = {}
        self.summary = self.session.summary
        self.explain = bool(config.getoption("tokconf_explain"))
        self.causes_file: Path | None = config.getoption("tokconf_causes")
        self.explain = self.explain or self.causes_file is not None
        # with --tokconf-explain: (recording, section, case) -> the causes it is counted under, each
        # a `CauseNote` as JSON (or one naming it unexplained)
        self.causes: dict[tuple[Path, Section, str], list[str]] = {}
        # what the items reported (xdist included), in order: each cause's story and record, its cases
        self.cause_stories: dict[str, None] = {}
        self.cause_records: dict[str, dict[str, Any]] = {}
        self.unexplained: list[str] = []
        self.reported: list[Reported] = []  # errors and unsupported answers, for --tokconf-causes

    def group(self, path: Path) -> VocabGroup:
        """The table group of a collected recording (shipped, synthetic, user)."""
        return self._groups[path]

    def facts(self, path: Path) -> list[CaseResult]:
        return [r for (section, _), r in self._checked(path).items() if section == FACTS]

    def result(self, item: CaseItem) -> CaseResult:
        """The verdict of one case and mode."""
        found = self._checked(item.location_path).get((item.section, item.case))
        return found or CaseResult(item.vocab, item.section, item.case, Verdict.ERROR, reason="no verdict: not checked")

    def _resolve(self) -> Implementation:
        """The implementation, resolved once: when that fails, every item fails with the same error
        at once, not after trying again (an import of numpy, say, that fails takes a while)."""
        if self._unresolved is not None:
            raise self._unresolved
        try:
            return resolve(self.spec, self.timeout, load_timeout=self.load_timeout, in_process=self.in_process,
                           options=TIMEOUTS, sandbox=self.sandbox)  # fmt: skip
        except Exception as error:
            self._unresolved = error
            raise

    def _checked(self, path: Path) -> dict[tuple[Section, str], CaseResult]:
        """Every verdict of one recording; the whole vocabulary is checked on first use."""
        if path not in self._results:
            if self._impl is None:
                self._impl = self._resolve()
            loaded = self._collected.pop(path, None)  # read once, at collection
            selection = dataclasses.replace(self.selection, only=self._kept.get(path))
            checked = check_file(path, self._impl, selection, self.xfails, self.session.vocab_dir, recording=loaded)
            self.vocab_paths[checked.recording.vocab_name] = checked.vocab
            self._results[path] = {(r.section, r.case): r for r in checked.results}
            if self.explain:
                self._explain(path, checked)
            gc.freeze()  # these live to the end: keep the cyclic GC from rescanning them (see below)
        return self._results[path]

    def _explain(self, path: Path, checked: CheckedFile) -> None:
        """Each failed case's causes (a vocab's items run in one worker, so its causes are whole):
        every item reports its own, and the process that prints the table puts them together."""
        assert self._impl is not None
        explanation = explain_file(checked, self._impl)
        for number, cause in enumerate(explanation.causes, 1):
            key = f"{path}#{number}"  # two recordings may share a vocab name (two builds' qwen2)
            story = describe_cause(number, cause, checked.vocab, self.how)
            for index, result in enumerate(cause.cases):
                note: dict[str, Any] = {"key": key, "case": case_id(result)}
                if index == 0:  # the cause itself travels once, with its first case (a cause may have 8,000)
                    note |= {"story": story, "record": cause_record(cause, with_cases=False)}
                reported = json.dumps(note, ensure_ascii=False)
                self.causes.setdefault((path, result.section, result.case), []).append(reported)
        for result in explanation.unexplained:
            unexplained = json.dumps({"unexplained": case_id(result), "why": explanation.error}, ensure_ascii=False)
            self.causes.setdefault((path, result.section, result.case), []).append(unexplained)

    def _make_items(self, parent: ItemGroup, path: Path, recording: Recording) -> list[pytest.Item]:
        name = recording.vocab_name
        wanted: list[tuple[Section, str]] = []
        for case in recording.cases:
            modes: list[Mode] = list(case.outcomes)
            wanted += [(mode, case.id) for mode in modes if self.selection.wants(name, mode, case.id)]
        if self.selection.wants_facts:  # with every mode selection, as `check_file` checks them
            wanted.append((FACTS, ALL_FACTS))
        if self.selection.wants_decoding and decoding_path(path).is_file():
            wanted += [
                (DECODE, kind) for kind in (*PIECE_KINDS, *DETOKENIZE) if self.selection.wants(name, DECODE, kind)
            ]
        return [
            CaseItem.from_parent(
                parent,
                name=f"{name}-{section}" if section == FACTS else f"{name}-{section}-{case.replace('/', '-')}",
                recording=path,
                vocab=name,
                section=section,
                case=case,
            )
            for section, case in wanted
        ]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The process that decides (xdist's controller, or the only one) pins what the run judges
        before any worker or port process starts: its interleaving check reads the recordings too, and
        a controller that collects nothing would otherwise read them unpinned."""
        if hasattr(session.config, "workerinput"):
            return
        try:
            self.session.pin(self.session.recordings())
        except TokconfError as error:
            raise pytest.UsageError(str(error)) from None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        try:
            wanted = self.session.recordings()
            self.session.pin(wanted)  # before any port process starts
        except TokconfError as error:
            raise pytest.UsageError(str(error)) from None
        for path in wanted:
            try:
                recording = load(path)
            except TokconfError as error:
                raise pytest.UsageError(str(error)) from None
            self._collected[path] = recording
            self._groups[path] = recording.group
            self.collected_cases.update(case.id for case in recording.cases)
            nodeid = f"tokconf/b{recording.build}/{recording.vocab_name}"
            collect_into(
                session, items, nodeid, path, lambda parent, p=path, r=recording: self._make_items(parent, p, r)
            )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Note which items of each recording the run kept (after `-k`, `--deselect`, `--lf`): only
        those are checked. Then freeze what collection built: with 200,000 items the cyclic GC
        otherwise rescans them all, over and over, and a full run spends most of its time in
        `gc_collect_main`."""
        kept: dict[Path, set[tuple[Section, str]]] = {}
        for item in session.items:
            if isinstance(item, CaseItem):
                kept.setdefault(item.location_path, set()).add((item.section, item.case))
        self._kept = {path: frozenset(pairs) for path, pairs in kept.items()}
        gc.collect()
        gc.freeze()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == PROPERTY and isinstance(value, str):
                got = Reported.from_property(value)
                self.summary.count(got.vocab, got.section, got.verdict, got.group, got.standing, got.reason,
                                   got.declined, got.aborted, got.size)  # fmt: skip
                if got.reason:
                    self.reported.append(got)
                if got.verdict is Verdict.PASSED and got.section in (*MODES, FACTS) and got.standing is Standing.LOADED:
                    self.passed.setdefault(got.recording, set()).add((str(got.section), got.case))
            elif key == XFAIL_PROPERTY and isinstance(value, str):
                self.xfails.matched.add(value)
            elif key == CAUSE_PROPERTY and isinstance(value, str):
                self._note_cause(json.loads(value))

    def _note_cause(self, note: dict[str, Any]) -> None:
        if "unexplained" in note:
            self.unexplained.append(note["unexplained"])
            if note["why"]:
                self.cause_stories[f"explain: {printable(note['why'])}"] = None
            return
        entry = self.cause_records.setdefault(note["key"], {"cases": []})
        entry["cases"].append(note["case"])
        if "record" in note:
            self.cause_stories[note["story"]] = None
            entry.update(note["record"])

    def _interleave(self, session: pytest.Session) -> None:
        """The interleaving check (`tokconf.checking.interleave`), as `tokconf check` makes it, here in
        the process that counts every worker's items; not after `-x` or an interrupted run."""
        if session.shouldstop or session.shouldfail or self._interrupted(session) or not self.passed:
            return
        replays = []
        for path in recording_files(self.session.paths):
            if str(path) in self.passed:
                recording = load(path)
                vocab = self.session.vocab(recording.provenance)
                if (replay := sample(recording, vocab, self.passed[str(path)])) is not None:
                    replays.append(replay)
        if len(replays) < 2:
            return
        impl = self._impl or self._resolve()
        self._impl = impl
        self.interleaved = self.session.interleave(impl, replays)

    @staticmethod
    def _interrupted(session: pytest.Session) -> bool:
        return session.exitstatus == pytest.ExitCode.INTERRUPTED

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The verdict contract over every item's verdict: a run whose items all passed still fails
        when it judged nothing of what it claims (a port declining every input, say). xdist workers
        only report; the controller, which counts every worker's items, decides. A run that was given
        `--tokconf-impl` on its command line and judged nothing of it (every item deselected by `-k`,
        `-m` or a conftest) fails: the check asked for did not happen. The verdict is written once every
        port process of this process has ended."""
        if hasattr(session.config, "workerinput") or self.collect_only:
            self._end()
            return
        if not self.summary.counts:
            self._end()
            if self.asked_for:
                why = f"--tokconf-impl {self.spec} was given, but none of its checks ran (all deselected?)"
                self.decision = Decision(False, (why,), Counter(), 0, 0, 0)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
                self._write_json(self.decision)
            return
        cut_short = [INTERRUPTED] if self._interrupted(session) else []
        try:
            self._interleave(session)
        except TokconfError as error:  # a judged file changed, a vocabulary gone: no verdict on that
            said = f"{error.problem} ({error.fix})" if error.fix else error.problem
            cut_short.append(f"the interleaving check could not run: {printable(said)}")
        finally:
            self._end()
        confiner = confiner_of(self.spec, self.in_process, self.sandbox)
        self.decision = self.session.decide(self.collected_cases, confiner, cut_short)
        self._write_json(self.decision)
        if self.causes_file is not None:
            errors, unsupported = (
                group_reasons((r.vocab, r.case_id, r.reason) for r in self.reported if r.verdict is verdict)
                for verdict in (Verdict.ERROR, Verdict.UNSUPPORTED)
            )
            causes = sorted((c for c in self.cause_records.values() if "kind" in c), key=lambda c: -len(c["cases"]))
            # a cause whose first case did not run (-x, an interrupted run) was never described
            unheard = [case for c in self.cause_records.values() if "kind" not in c for case in c["cases"]]
            others = [
                other_failure(r.case_id, r.verdict, r.reason)
                for r in self.reported
                if r.verdict in (Verdict.FAILED, Verdict.XPASSED)
            ]
            unexplained = self.unexplained + unheard
            write_causes(self.causes_file, document(causes, unexplained, errors, unsupported, others))
        if not self.decision.passed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write_json(self, decision: Decision) -> None:
        """`--tokconf-json FILE`: the verdict for a CI system, as `tokconf check --json` writes it."""
        if self.json is not None:
            write_verdict(self.json, decision, self.summary, self._impl.name if self._impl else self.spec)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.decision is None:
            return
        terminalreporter.section(f"tokconf conformance: {self.spec} against {' '.join(map(str, self.paths))}")
        for result in self.interleaved:
            if result.verdict.is_problem:
                terminalreporter.write_line(describe(result, self.vocab_paths.get(result.vocab), self.how))
                terminalreporter.write_line("")
        for story in self.cause_stories:
            terminalreporter.write_line(story)
            terminalreporter.write_line("")
        full = self.table == "full"
        notes = abort_lines(self.summary, each=full) + decline_lines(self.summary, self.decision)
        table = text_table(self.summary, full) + notes if self.summary.counts else []
        for line in table + closing_lines(self.decision):
            terminalreporter.write_line(line)

    def _end(self) -> None:
        """Every port process of this process ended, and the judged files no longer pinned."""
        if self._impl is not None:
            self._impl.close()
        self.session.close()

    def pytest_unconfigure(self) -> None:
        self._end()
