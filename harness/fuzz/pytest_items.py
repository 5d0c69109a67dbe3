"""A fuzz campaign as pytest items, so pytest-xdist spreads it over cores (registered by
`tokconf.plugin` when `--tokconf-fuzz IMPL` is given; `tokconf fuzz --workers N` runs it for you).

    pytest --tokconf-fuzz reference --tokconf-fuzz-profile campaign -n auto --dist loadgroup

One item per vocabulary and mode runs `tokconf.fuzz.campaign.Campaign` on that pair; a vocabulary's
items stay on one worker (`xdist_group`), so its found recording is written by one process. Workers
share the example database: a folder on one machine, or `redis://HOST:PORT/N` across machines
(`--tokconf-fuzz-database`, or the `tokconf_fuzz_database` ini key). A campaign run collects only
the campaign.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from ..check.contract import Decision
from ..check.pytest_items import ItemGroup, ReportedFailure, TokconfItem, collect_into
from ..core.outcome import MODES, Mode
from ..implementations.base import Implementation
from ..implementations.resolve import resolve
from ..llama.build import Build, require_build
from ..llama.vocabs import shipped_vocabs, vocab_name
from . import DEFAULT_DATABASE, INI_DATABASE, PROFILES
from .campaign import Campaign, CampaignStats, TargetStats
from .database import ExampleStore, open_database
from .findings import Finding, check_found_files, describe_finding, found_path, write_finding
from .report import summary_lines, write_html

PROPERTY = "tokconf-fuzz"  # each item's target, its counts, oracle and impl seconds, and its findings described


class FuzzItem(TokconfItem):
    def __init__(self, *, vocab: Path, mode: Mode, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.location_path = vocab
        self.mode = mode
        self.label = f"fuzz {vocab_name(vocab)} [{mode}]"
        self.add_marker(pytest.mark.xdist_group(vocab_name(vocab)))

    def runtest(self) -> None:
        plugin = self.config.stash[FuzzPlugin.STASH]
        stats = CampaignStats(seed=plugin.seed)
        described: list[str] = []

        def keep(finding: Finding) -> None:
            path = found_path(plugin.found_dir, finding.vocab)
            described.append("\n".join(describe_finding(finding, plugin.impl.name, plugin.spec, path)))
            write_finding(plugin.found_dir, finding, plugin.build, plugin.impl.name)

        check_found_files(plugin.found_dir, plugin.build, [self.location_path])

        campaign = Campaign(plugin.build, plugin.impl, [self.mode], plugin.budget, plugin.store, stats, keep)
        campaign.fuzz_vocab(self.location_path)
        target = stats.targets.get((vocab_name(self.location_path), self.mode), TargetStats())
        counts = {"target": vars(target), "oracle": stats.oracle_seconds, "impl": stats.impl_seconds}
        counts["declined"] = bool(stats.declined)
        self.user_properties.append((PROPERTY, [vocab_name(self.location_path), self.mode, counts, described]))
        if stats.unsupported:
            pytest.skip(f"unsupported: {stats.unsupported[0]}")
        if described:
            raise ReportedFailure("\n".join(described))
        decision = stats.decide()
        if not decision.passed:  # the contract: e.g. nothing judged, every input declined
            raise ReportedFailure("\n".join(decision.reasons))


class FuzzPlugin:
    """The options, per process the build and the implementation (resolved on first use), and the
    totals over every item's statistics (also those xdist workers send back)."""

    STASH = pytest.StashKey["FuzzPlugin"]()
    NAME = "tokconf-fuzz-campaign"

    def __init__(self, config: pytest.Config) -> None:
        config.stash[self.STASH] = self
        option = config.getoption
        self.spec: str = option("tokconf_fuzz")
        self.build_number: int = option("tokconf_fuzz_build")
        self.budget: int = option("tokconf_fuzz_examples") or PROFILES[option("tokconf_fuzz_profile")]
        # without --seed (tokconf fuzz always passes one), each worker picks its own, which findings name
        seed = option("tokconf_fuzz_seed")
        self.seed: int = random.SystemRandom().randrange(1 << 32) if seed is None else seed
        database = option("tokconf_fuzz_database")
        self.database: str = config.getini(INI_DATABASE) or DEFAULT_DATABASE if database is None else database
        self.shared_database: str = option("tokconf_fuzz_shared_database") or ""
        self.found_dir: Path = option("tokconf_fuzz_found_dir")
        self.report: Path | None = option("tokconf_fuzz_report")
        self.timeout: float | None = option("tokconf_fuzz_timeout")
        self.vocab_names: list[str] = option("tokconf_fuzz_vocab")
        self.modes: list[Mode] = option("tokconf_fuzz_mode") or list(MODES)
        self._build: Build | None = None
        self._impl: Implementation | None = None
        self._store: ExampleStore | None = None
        self.totals = CampaignStats(seed=self.seed)  # every item's counts, also those xdist workers send back
        self.described: list[str] = []
        self.decision: Decision | None = None

    @property
    def build(self) -> Build:
        if self._build is None:
            self._build = require_build(self.build_number)
        return self._build

    @property
    def store(self) -> ExampleStore:
        if self._store is None:
            self._store = open_database(self.database, self.shared_database)
        return self._store

    @property
    def impl(self) -> Implementation:
        if self._impl is None:
            self._impl = resolve(self.spec, self.timeout)
        return self._impl

    def vocabs(self) -> list[Path]:
        shipped = {vocab_name(p): p for p in shipped_vocabs(self.build)}
        unknown = [name for name in self.vocab_names if name not in shipped]
        if unknown:
            raise pytest.UsageError(f"--tokconf-fuzz-vocab: no shipped vocab {unknown}; known: {sorted(shipped)}")
        return [shipped[name] for name in self.vocab_names] if self.vocab_names else list(shipped.values())

    def pytest_ignore_collect(self, collection_path: Path) -> bool:
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        def make(parent: ItemGroup) -> list[pytest.Item]:
            return [
                FuzzItem.from_parent(parent, name=f"{vocab_name(vocab)}-{mode}", vocab=vocab, mode=mode)
                for vocab in self.vocabs()
                for mode in self.modes
            ]

        collect_into(session, items, f"tokconf-fuzz/b{self.build_number}", None, make)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == PROPERTY and isinstance(value, (list, tuple)):  # xdist sends lists back
                vocab, mode, counts, described = value
                self.totals.targets[(vocab, mode)] = TargetStats(**counts["target"])
                if counts["declined"] and vocab not in self.totals.declined:
                    self.totals.declined.append(vocab)
                self.totals.oracle_seconds += counts["oracle"]
                self.totals.impl_seconds += counts["impl"]
                self.described += described
                self.totals.mark()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The contract over every item's target (xdist workers only report; the controller decides):
        a campaign whose every vocabulary was declined, whose items all skipped, fails."""
        if hasattr(session.config, "workerinput") or not self.totals.targets:
            return
        self.decision = self.totals.decide()
        if not self.decision.passed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.section(f"tokconf fuzz campaign: {self.spec}")
        for line in summary_lines(self.totals):
            terminalreporter.write_line(line)
        if self.decision is not None:
            for reason in self.decision.reasons:
                terminalreporter.write_line(f"fail: {reason}")
            terminalreporter.write_line(self.decision.line())
        if self.report:
            write_html(self.report, f"tokconf fuzz: {self.spec}", self.totals, self.described)
            terminalreporter.write_line(f"report written to {self.report}")

    def pytest_unconfigure(self) -> None:
        if self._impl is not None:
            self._impl.close()
