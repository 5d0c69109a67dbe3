"""A fuzz campaign as pytest items, so pytest-xdist spreads it over cores (registered by
`harness.plugin` when `--tokconf-fuzz IMPL` is given; `tokconf fuzz --workers N` runs it for you).

    pytest --tokconf-fuzz reference --tokconf-fuzz-profile campaign -n auto --dist loadgroup

One item per vocabulary and mode runs `harness.fuzz.campaign.fuzz_vocab` for that pair; a
vocabulary's items stay on one worker (`xdist_group`), so its found cases are written by one
process. Workers on one machine share the hypothesis example database folder. Across machines, give
each machine a share of `--tokconf-fuzz-vocab` (or the same list and different seeds), then merge
their `corpora/found/` files and database folders. A campaign run collects only the campaign.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harness.check.pytest_items import ItemGroup, ReportedFailure, TokconfItem, collect_into
from harness.core.outcome import MODES, Mode
from harness.fuzz import PROFILES
from harness.fuzz.campaign import CampaignStats, database_at, fuzz_vocab
from harness.fuzz.findings import describe_finding, write_findings
from harness.implementations.base import Implementation
from harness.implementations.resolve import resolve
from harness.llama.build import Build, require_build
from harness.llama.vocabs import shipped_vocabs, vocab_name

PROPERTY = "tokconf-fuzz"  # each item's statistics: examples, seconds, oracle seconds, impl seconds, findings


class FuzzItem(TokconfItem):
    def __init__(self, *, vocab: Path, mode: Mode, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.location_path = vocab
        self.mode = mode
        self.label = f"fuzz {vocab_name(vocab)} [{mode}]"
        self.add_marker(pytest.mark.xdist_group(vocab_name(vocab)))

    def runtest(self) -> None:
        plugin = self.config.stash[FuzzPlugin.STASH]
        stats = CampaignStats()
        fuzz_vocab(
            plugin.build, plugin.impl, self.location_path, [self.mode], plugin.budget, plugin.seed,
            database_at(plugin.db), stats,
        )  # fmt: skip
        counts = [stats.examples, stats.seconds, stats.oracle_seconds, stats.impl_seconds, len(stats.findings)]
        self.user_properties.append((PROPERTY, counts))
        if stats.unsupported:
            pytest.skip(f"unsupported: {stats.unsupported[0]}")
        if stats.findings:
            written = write_findings(plugin.found_dir, stats.findings, plugin.seed, plugin.impl.name)
            lines = [
                line for finding in stats.findings for line in describe_finding(finding, plugin.impl.name, plugin.spec)
            ]
            lines += [f"found cases written to {path}" for path in written]
            raise ReportedFailure("\n".join(lines))


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
        self.seed: int | None = option("tokconf_fuzz_seed")
        self.db = Path(option("tokconf_fuzz_db")) if option("tokconf_fuzz_db") else None
        self.found_dir: Path = option("tokconf_fuzz_found_dir")
        self.timeout: float | None = option("tokconf_fuzz_timeout")
        self.vocab_names: list[str] = option("tokconf_fuzz_vocab")
        self.modes: list[Mode] = option("tokconf_fuzz_mode") or list(MODES)
        self._build: Build | None = None
        self._impl: Implementation | None = None
        self.started = time.monotonic()
        self.totals = [0.0] * 5

    @property
    def build(self) -> Build:
        if self._build is None:
            self._build = require_build(self.build_number)
        return self._build

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
                self.totals = [a + float(b) for a, b in zip(self.totals, value, strict=True)]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        examples, busy, oracle, impl, findings = self.totals
        wall = time.monotonic() - self.started
        share = 100 * oracle / max(oracle + impl, 1e-9)
        terminalreporter.section(f"tokconf fuzz campaign: {self.spec}")
        terminalreporter.write_line(
            f"{int(examples)} examples in {wall:.1f} s wall ({examples / max(wall, 1e-9):.0f}/s over all workers; "
            f"{busy:.1f} s of campaign time, {share:.0f}% of the tokenizing time in llama.cpp), "
            f"{int(findings)} distinct failures"
        )

    def pytest_unconfigure(self) -> None:
        if self._impl is not None:
            self._impl.close()
