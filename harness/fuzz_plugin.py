"""A fuzz campaign as pytest items, so pytest-xdist spreads it over cores (`pytest11` entry point
`tokconf-fuzz`; `tokconf fuzz --workers N` runs it for you).

    pytest --tokconf-fuzz reference --tokconf-fuzz-profile campaign -n auto --dist loadgroup

One item per vocabulary and mode runs `fuzz_campaign.fuzz_vocab` for that pair; a vocabulary's
items stay on one worker (`xdist_group`), so its found cases are written by one process. Workers
on one machine share the hypothesis example database folder. Across machines, give each machine
a share of `--tokconf-fuzz-vocab` (or the same list and different seeds), then merge their
`corpora/found/` files and database folders. When fuzz options are given, test files are not
collected: the run is the campaign.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harness.cmake_build import Build, require_build
from harness.fuzz_campaign import PROFILES, CampaignStats, database_at, describe_finding, fuzz_vocab, write_findings
from harness.impls import Implementation, resolve
from harness.paths import REPO_ROOT
from harness.pins import DEFAULT_BUILD
from harness.recorder import shipped_vocabs, vocab_name
from harness.recording import MODES

STASH = pytest.StashKey["Campaign"]()
STATS_KEY = "tokconf-fuzz"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tokconf-fuzz", "differential fuzz campaign against the live llama.cpp")
    group.addoption("--tokconf-fuzz", metavar="IMPL", help="fuzz this implementation (same forms as --tokconf-impl)")
    group.addoption("--tokconf-fuzz-build", type=int, default=DEFAULT_BUILD, help="llama.cpp build (tag bN)")
    group.addoption("--tokconf-fuzz-vocab", action="append", default=[], help="vocab names (default: all shipped)")
    group.addoption("--tokconf-fuzz-mode", action="append", default=[], choices=list(MODES), help="modes")
    group.addoption("--tokconf-fuzz-profile", choices=list(PROFILES), default="dev", help="examples per vocab+mode")
    group.addoption("--tokconf-fuzz-examples", type=int, help="override the profile's budget")
    group.addoption("--tokconf-fuzz-seed", type=int, help="a reproducible run")
    group.addoption("--tokconf-fuzz-db", default=".tokconf-fuzz-db", help="example database folder ('' for none)")
    group.addoption("--tokconf-fuzz-found-dir", help="where found cases go (default: corpora/found)")
    group.addoption("--tokconf-fuzz-timeout", type=float, default=10.0, help="per-case timeout for cmd: programs")


class Campaign:
    """The options, and per process the build and the implementation (resolved on first use)."""

    def __init__(self, config: pytest.Config) -> None:
        option = config.getoption
        self.spec: str = option("tokconf_fuzz")
        self.build_number: int = option("tokconf_fuzz_build")
        self.budget: int = option("tokconf_fuzz_examples") or PROFILES[option("tokconf_fuzz_profile")]
        self.seed: int | None = option("tokconf_fuzz_seed")
        self.db = Path(option("tokconf_fuzz_db")) if option("tokconf_fuzz_db") else None
        found = option("tokconf_fuzz_found_dir")
        self.found_dir = Path(found) if found else REPO_ROOT / "corpora" / "found"
        self.timeout: float = option("tokconf_fuzz_timeout")
        self.vocab_names: list[str] = option("tokconf_fuzz_vocab")
        self.modes: list[str] = option("tokconf_fuzz_mode") or list(MODES)
        self._build: Build | None = None
        self._impl: Implementation | None = None

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

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()


class FuzzFailed(Exception):
    """The implementation diverged from llama.cpp (message: the shrunk inputs)."""


class CampaignRoot(pytest.Collector):
    def collect(self) -> list[pytest.Item]:
        return []


class FuzzItem(pytest.Item):
    def __init__(self, *, vocab: Path, mode: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vocab = vocab
        self.mode = mode
        self.add_marker(pytest.mark.xdist_group(vocab_name(vocab)))

    def runtest(self) -> None:
        campaign = self.config.stash[STASH]
        stats = CampaignStats()
        database = database_at(campaign.db)
        fuzz_vocab(
            campaign.build, campaign.impl, self.vocab, [self.mode], campaign.budget, campaign.seed, database, stats
        )
        counts = [stats.examples, stats.seconds, stats.oracle_seconds, stats.impl_seconds, len(stats.findings)]
        self.user_properties.append((STATS_KEY, counts))
        if stats.unsupported:
            pytest.skip(f"unsupported: {stats.unsupported[0]}")
        if stats.findings:
            written = write_findings(campaign.found_dir, stats.findings, campaign.seed, campaign.impl.name)
            lines = [line for finding in stats.findings for line in describe_finding(finding, campaign.impl.name)]
            lines += [f"found cases written to {path}" for path in written]
            raise FuzzFailed("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, FuzzFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.vocab, None, f"fuzz {vocab_name(self.vocab)} [{self.mode}]"


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("tokconf_fuzz"):
        config.stash[STASH] = Campaign(config)
        config.pluginmanager.register(CampaignReporter(), "tokconf-fuzz-reporter")


def pytest_unconfigure(config: pytest.Config) -> None:
    campaign = config.stash.get(STASH, None)
    if campaign is not None:
        campaign.close()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A campaign run collects only the campaign."""
    return True if STASH in config.stash else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    campaign = config.stash.get(STASH, None)
    if campaign is None:
        return
    nodeid = f"tokconf-fuzz/b{campaign.build_number}"
    root = CampaignRoot.from_parent(session, name=nodeid, nodeid=nodeid)
    found: list[pytest.Item] = [
        FuzzItem.from_parent(root, name=f"{vocab_name(vocab)}-{mode}", vocab=vocab, mode=mode)
        for vocab in campaign.vocabs()
        for mode in campaign.modes
    ]
    collected: list[pytest.Item | pytest.Collector] = list(found)
    config.hook.pytest_collectreport(report=pytest.CollectReport(nodeid, "passed", None, collected))
    items.extend(found)


class CampaignReporter:
    """Totals over every item's statistics (also those xdist workers send back)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.totals = [0.0] * 5

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == STATS_KEY and isinstance(value, (list, tuple)):  # xdist sends lists back
                self.totals = [a + float(b) for a, b in zip(self.totals, value, strict=True)]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        examples, busy, oracle, impl, findings = self.totals
        wall = time.monotonic() - self.started
        share = 100 * oracle / max(oracle + impl, 1e-9)
        terminalreporter.section("tokconf fuzz campaign")
        terminalreporter.write_line(
            f"{int(examples)} examples in {wall:.1f} s wall ({examples / max(wall, 1e-9):.0f}/s over all workers; "
            f"{busy:.1f} s of campaign time, {share:.0f}% of the tokenizing time in llama.cpp), "
            f"{int(findings)} distinct failures"
        )
