"""A fuzz campaign as pytest items, so pytest-xdist spreads it over cores (registered by
`tokconf.plugin` when `--tokconf-fuzz IMPL` is given; `tokconf fuzz --workers N` runs it for you).

    pytest --tokconf-fuzz reference --tokconf-fuzz-profile campaign -n auto --dist loadgroup

One item per vocabulary and mode runs that pair through the `tokconf.fuzz.runner.Runner` that
`tokconf fuzz` runs; a vocabulary's items stay on one worker (`xdist_group`), so its found recording
is written by one process. Workers share the example database: a folder on one machine, or
`redis://HOST:PORT/N` across machines (`--tokconf-fuzz-database`, or the `tokconf_fuzz_database` ini
key). A campaign run collects only the campaign.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from ..builds.vocabs import vocab_name
from ..checking.contract import Decision
from ..core.errors import TokconfError
from ..core.outcome import Mode
from ..core.timeouts import TimeoutOptions
from ..fuzz import DEFAULT_DATABASE, INI_DATABASE, Engine
from ..fuzz.campaign import CampaignStats, TargetStats
from ..fuzz.report import summary_lines, write_html
from ..fuzz.runner import Asked, Runner
from ..options import FUZZ, LOAD_TIMEOUT, TIMEOUT, pytest_flag
from .items import ItemGroup, ReportedFailure, TokconfItem, collect_into

PROPERTY = "tokconf-fuzz"  # each item's target, its counts, oracle and impl seconds, and its findings described


class FuzzItem(TokconfItem):
    def __init__(self, *, vocab: Path, mode: Mode, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.location_path = vocab
        self.mode = mode
        self.label = f"fuzz {vocab_name(vocab)} [{mode}]"
        self.add_marker(pytest.mark.xdist_group(vocab_name(vocab)))

    def runtest(self) -> None:
        runner = self.config.stash[FuzzPlugin.STASH].runner
        stats = CampaignStats(seed=runner.asked.seed)
        before = len(runner.described)
        runner.prepare([self.location_path])
        runner.fuzz(self.location_path, [self.mode], stats)
        described = runner.described[before:]
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
    """The options as the runner's (in each process; the implementation resolved on first use), and the
    totals over every item's statistics (also those xdist workers send back)."""

    STASH = pytest.StashKey["FuzzPlugin"]()
    NAME = "tokconf-fuzz-campaign"

    def __init__(self, config: pytest.Config) -> None:
        config.stash[self.STASH] = self
        dest = {option.name: pytest_flag("tokconf-fuzz", option)[2:].replace("-", "_") for option in FUZZ}
        option = config.getoption
        # without --seed (tokconf fuzz always passes one), each worker picks its own, which findings name
        seed = option("tokconf_fuzz_seed")
        database = option("tokconf_fuzz_database")
        asked = Asked.of(
            lambda name: option(dest[name]),
            random.SystemRandom().randrange(1 << 32) if seed is None else seed,
            config.getini(INI_DATABASE) or DEFAULT_DATABASE if database is None else database,
            Engine(option("tokconf_fuzz_engine")),
        )
        named = TimeoutOptions(pytest_flag("tokconf-fuzz", TIMEOUT), pytest_flag("tokconf-fuzz", LOAD_TIMEOUT))
        self.runner = Runner(dataclasses.replace(asked, timeout_options=named))
        self.report: Path | None = option("tokconf_fuzz_report")
        self.totals = CampaignStats(seed=asked.seed)  # every item's counts, also those xdist workers send back
        self.described: list[str] = []
        self.decision: Decision | None = None

    def pytest_ignore_collect(self, collection_path: Path) -> bool:
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        try:
            vocabs = self.runner.vocabs()
        except TokconfError as error:
            raise pytest.UsageError(f"--tokconf-fuzz-vocab: {error}") from None

        def make(parent: ItemGroup) -> list[pytest.Item]:
            return [
                FuzzItem.from_parent(parent, name=f"{vocab_name(vocab)}-{mode}", vocab=vocab, mode=mode)
                for vocab in vocabs
                for mode in self.runner.asked.modes
            ]

        collect_into(session, items, f"tokconf-fuzz/b{self.runner.asked.build}", None, make)

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
        spec = self.runner.asked.impl
        terminalreporter.section(f"tokconf fuzz campaign: {spec}")
        for line in summary_lines(self.totals):
            terminalreporter.write_line(line)
        if self.decision is not None:
            for reason in self.decision.reasons:
                terminalreporter.write_line(f"fail: {reason}")
            terminalreporter.write_line(self.decision.line())
        if self.report:
            write_html(self.report, f"tokconf fuzz: {spec}", self.totals, self.described)
            terminalreporter.write_line(f"report written to {self.report}")

    def pytest_unconfigure(self) -> None:
        self.runner.close()
