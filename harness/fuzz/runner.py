"""One fuzz run, whichever front end starts it: `tokconf fuzz` in its own process, or the pytest items
(`tokconf.plugin.fuzz`: one per vocabulary and mode, spread over cores by pytest-xdist; `tokconf fuzz
--workers N` runs those). Both read their options from the one option table (`tokconf.options.FUZZ`)
into `Asked`, and run it through a `Runner`: the build, the implementation and the example database
resolved once per process, a vocabulary's modes fuzzed by the engine asked for, each finding written
to the found folder and described as it is found.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..builds.build import Build, require_build
from ..builds.vocabs import resolve_vocabs
from ..core.outcome import MODES, Mode
from ..core.sandbox import DEFAULT_POLICY, SandboxPolicy
from ..core.timeouts import CLI_TIMEOUTS, TimeoutOptions
from ..implementations.base import Implementation
from ..implementations.resolve import resolve
from . import PROFILES, Engine
from .campaign import Campaign, CampaignStats
from .database import ExampleStore, open_database
from .findings import Finding, check_found_files, describe_finding, found_path, write_finding


@dataclass(frozen=True)
class Asked:
    """What a run was asked for (`tokconf fuzz --help`), the defaults each front end chooses applied:
    the seed (random unless given) and the database (the CLI's `--no-db`, pytest's ini key)."""

    impl: str  # the --impl value, as the reproduce and gate commands print it
    build: int
    vocabs: tuple[str, ...]  # names or GGUF paths; none: every shipped vocabulary
    modes: tuple[Mode, ...]
    budget: int  # examples per vocabulary and mode
    seed: int
    database: str
    shared_database: str
    found_dir: Path
    timeout: float | None
    engine: Engine
    load_timeout: float | None = None
    in_process: bool = False
    timeout_options: TimeoutOptions = CLI_TIMEOUTS  # what sets the timeouts, which their messages name
    sandbox: SandboxPolicy = DEFAULT_POLICY

    @classmethod
    def of(cls, value: Callable[[str], Any], seed: int, database: str, engine: Engine) -> Asked:
        """From the option table's values, looked up by option name (`value("max-examples")`)."""
        return cls(
            impl=value("impl"),
            build=value("build"),
            vocabs=tuple(value("vocab")),
            modes=tuple(value("mode") or MODES),
            budget=value("max-examples") or PROFILES[value("profile")],
            seed=seed,
            database=database,
            shared_database=value("shared-database") or "",
            found_dir=value("found-dir"),
            timeout=value("timeout"),
            engine=engine,
            load_timeout=value("load-timeout"),
            in_process=bool(value("in-process")),
            sandbox=SandboxPolicy.of(value("sandbox"), value("sandbox-write"), bool(value("sandbox-network"))),
        )


class Runner:
    """One process's share of a run. `announce` is given each finding's description as it is found
    (before it is written: a finding that cannot be written is still reported); `described` and
    `written` keep them, for the summary and the report."""

    def __init__(
        self,
        asked: Asked,
        announce: Callable[[str], None] = lambda text: None,
        progress: Callable[[CampaignStats], None] = lambda stats: None,
    ) -> None:
        self.asked = asked
        self.announce = announce
        self.progress = progress
        self.described: list[str] = []
        self.written: set[Path] = set()

    @functools.cached_property
    def build(self) -> Build:
        return require_build(self.asked.build)

    @functools.cached_property
    def store(self) -> ExampleStore:
        return open_database(self.asked.database, self.asked.shared_database)

    @functools.cached_property
    def impl(self) -> Implementation:
        asked = self.asked
        return resolve(asked.impl, asked.timeout, load_timeout=asked.load_timeout, in_process=asked.in_process,
                       options=asked.timeout_options, sandbox=asked.sandbox)  # fmt: skip

    def vocabs(self) -> list[Path]:
        return resolve_vocabs(list(self.asked.vocabs), self.build)

    def prepare(self, vocabs: list[Path]) -> None:
        """What can refuse a run, checked before its first example: the found files these vocabularies'
        findings go to must hold this build's answers (`check_found_files`), and the example database
        must answer."""
        check_found_files(self.asked.found_dir, self.build, vocabs)
        _ = self.store

    def fuzz(self, vocab: Path, modes: Sequence[Mode], stats: CampaignStats) -> None:
        """The modes of one vocabulary, counted into `stats`."""
        campaign = Campaign(self.build, self.impl, list(modes), self.asked.budget, self.store, stats, self._keep,
                            self.progress, self.asked.engine)  # fmt: skip
        campaign.fuzz_vocab(vocab)

    def _keep(self, finding: Finding) -> None:
        path = found_path(self.asked.found_dir, finding.vocab)
        text = "\n".join(describe_finding(finding, self.impl.name, self.asked.impl, path))
        self.described.append(text)
        self.announce(text)
        self.written.add(write_finding(self.asked.found_dir, finding, self.build, self.impl.name))

    def close(self) -> None:
        if "impl" in self.__dict__:  # resolved: an implementation may hold a worker process
            self.impl.close()
