"""`tokconf check` run as a port's CI runs it, and read back through what it writes for machines: the
`--json` verdict (every unit's counts, docs/checking.md) and the `--junit` file (every case's verdict
and reason). Tests of the command assert on these public outputs, never on the engine's objects, so
they hold whatever the command is made of; what the command line cannot say (a case's input, its
ids) is asked of `tokconf.check()`, the API."""

from __future__ import annotations

import json
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tokconf.checking.contract import Verdict
from tokconf.cli.main import main

SKIPPED = {Verdict.UNSUPPORTED.value: Verdict.UNSUPPORTED, Verdict.XFAILED.value: Verdict.XFAILED}


@dataclass(frozen=True)
class Case:
    """One case of the JUnit file. An xpassed case is a `failure` there, as a failed one is: read as
    FAILED (the `--json` counts tell the two apart)."""

    vocab: str
    section: str
    case: str
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class Checked:
    """One `tokconf check`: its exit status, what it printed (stdout and stderr), its `--json` verdict
    (None when it ended before any, a usage error), its JUnit cases and, with `--explain`, the causes
    its `--causes` file holds."""

    status: int
    output: str
    verdict: dict[str, Any] | None
    cases: tuple[Case, ...]
    causes: list[dict[str, Any]]  # the `--causes` file's, with `--explain`

    def counts(self, vocab: str, section: str) -> list[int]:
        """A unit's counts, in `Verdict` order: passed, failed, error, unsupported, xfailed, xpassed."""
        assert self.verdict is not None, self.output[-2000:]
        [unit] = [u for u in self.verdict["units"] if (u["vocab"], u["mode"]) == (vocab, section)]
        return [unit["counts"][verdict.value] for verdict in Verdict]

    def unit(self, vocab: str, section: str) -> dict[Verdict, int]:
        """A unit's counts by verdict, zeros left out."""
        return {v: n for v, n in zip(Verdict, self.counts(vocab, section), strict=True) if n}

    def section(self, section: str, vocab: str | None = None) -> dict[str, Case]:
        """The cases of one section (a mode, `facts`, `decode`, `interleave`) by case id."""
        return {c.case: c for c in self.cases if c.section == section and vocab in (None, c.vocab)}

    def failing_units(self) -> set[tuple[str, str]]:
        """The (vocab, mode) units with a problem (failed, error or xpassed), as the `--json` verdict says."""
        assert self.verdict is not None, self.output[-2000:]
        problems = (Verdict.FAILED, Verdict.ERROR, Verdict.XPASSED)
        return {(u["vocab"], u["mode"]) for u in self.verdict["units"] if any(u["counts"][p.value] for p in problems)}

    def verdicts(self) -> dict[Verdict, int]:
        """Every verdict's count over the whole run, zeros left out."""
        assert self.verdict is not None, self.output[-2000:]
        return {v: n for v in Verdict if (n := self.verdict["totals"][v.value])}


def _cases(path: Path) -> tuple[Case, ...]:
    cases = []
    for element in ET.parse(path).getroot().iter("testcase"):
        vocab, section = element.get("classname", "").rsplit(".", 1)
        verdict, reason = Verdict.PASSED, ""
        for child in element:
            message = child.get("message", "")
            if child.tag == "failure":
                verdict, reason = Verdict.FAILED, message
            elif child.tag == "error":
                verdict, reason = Verdict.ERROR, message
            elif child.tag == "skipped":
                said, _, reason = message.partition(": ")
                verdict = SKIPPED[said]
        cases.append(Case(vocab, section, element.get("name", ""), verdict, reason))
    return tuple(cases)


def _given(args: tuple[str, ...], option: str, otherwise: Path) -> tuple[Path, list[str]]:
    """The file `args` give `option` (the last, as argparse takes it), else `otherwise` and the words
    that give it."""
    at = [i for i, word in enumerate(args[:-1]) if word == option]
    return (Path(args[at[-1] + 1]), []) if at else (otherwise, [option, str(otherwise)])


def check(capsys: pytest.CaptureFixture[str], *args: str) -> Checked:
    """`tokconf check ARGS` in this process, with `--json` and `--junit` files (its own, unless ARGS
    give them)."""
    with tempfile.TemporaryDirectory() as folder:
        verdict, json_args = _given(args, "--json", Path(folder) / "verdict.json")
        junit, junit_args = _given(args, "--junit", Path(folder) / "junit.xml")
        causes, causes_args = _given(args, "--causes", Path(folder) / "causes.json")
        explained = "--explain" in args or not causes_args
        status = main(["check", *args, *json_args, *junit_args, *(causes_args if explained else [])])
        captured = capsys.readouterr()
        document = json.loads(verdict.read_text(encoding="utf-8")) if verdict.exists() else None
        cases = _cases(junit) if junit.exists() else ()
        found = json.loads(causes.read_text(encoding="utf-8"))["causes"] if explained and causes.exists() else []
    return Checked(status, captured.out + captured.err, document, cases, found)
