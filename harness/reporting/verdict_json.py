"""`--json FILE`: a run's verdict as a small JSON document, for CI systems that must not scrape text.

The terminal's last line says PASS or FAIL, but a port under test writes text too (its reasons, its
stderr, in process its own prints): a CI step that greps the output can be fooled, one that reads
this file cannot. The document (docs/checking.md, "--json FILE"), one object:

- `tokconf`: its version (`VERSION`), raised when a field changes meaning;
- `passed`, `exit_status`, `verdict_line`, `reasons`, `warnings`: the `Decision`, as the terminal ends;
- `totals`: every verdict's count; `scope`: the verdict line's figures (units, cases, covered, granted);
- `grants`: every input class the command granted (`--allow-decline`), with the declines in scope
  made under it, their bytes and their share of the scope's recorded bytes;
- `units`: per vocab x mode (facts and decode too) its group, standing, counts, recorded `bytes`,
  `declined` (per input class: cases, bytes, share of the unit's bytes, whether granted), `granted`
  (the declines coverage does not count), coverage, and `aborts`: its passed cases where llama.cpp
  aborts and so did the implementation, by how (`refused`, `died`: its process ended, `aborted`: it
  said it caught the abort);
- `implementation`, and `contained`: whether it ran where it could not change the run; `sandbox`: how
  its processes were held (`tokconf.core.sandbox`): `kind` (`bwrap`, `kept`: not sandboxed, a subreaper
  ended what it started; `in-process`; `none-needed`: tokconf's own reference ran) and `about` (what
  was granted, or why there was no sandbox).

Every string a port or a file wrote (reasons, names) is in its printable form (`core.printable`):
what the terminal shows, one line each.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..checking.contract import Decision, Declines, Unit, Verdict
from ..checking.summary import Summary
from ..core.files import atomic_write, replaceable
from ..core.outcome import MODES
from ..core.printable import printable

VERSION = 2  # 2: `grants`, and per unit `bytes`, `declined` and `granted`, for 1's `verified`; `sandbox`


def _counts(counts: Counter[Verdict]) -> dict[str, int]:
    """Every verdict's count, zeros included: a reader need not know which keys may be missing."""
    return {verdict.value: counts[verdict] for verdict in Verdict}


def verdict_document(decision: Decision, summary: Summary, implementation: str) -> dict[str, Any]:
    """The document of one decided run (the module's docstring). A unit's `coverage` is the contract's
    (`Unit.coverage`: passed of its cases but the declines of a class the command granted); facts and
    decode have none, they never count toward it."""
    granted = frozenset(grant.input_class for grant in decision.grants)
    units = []
    for (vocab, section), counts in sorted(summary.counts.items()):
        unit = Unit(vocab, section, counts, summary.declines.get((vocab, section), Declines()), granted)
        declined = {
            cls.value: {"cases": n, "bytes": unit.declines.bytes[cls], "share_of_bytes": unit.declines.share(cls),
                        "granted": cls in granted}
            for cls, n in sorted(unit.declines.cases.items(), key=lambda item: item[0].value)
        }  # fmt: skip
        units.append({
            "vocab": printable(vocab), "mode": section, "group": summary.groups[vocab].value,
            "standing": summary.standing[vocab].value, "counts": _counts(counts),
            "bytes": unit.declines.recorded_bytes, "declined": declined, "granted": unit.exempt,
            "coverage": unit.coverage() if section in MODES else None,
            "aborts": {kind.value: n for kind, n in sorted(summary.aborts.get((vocab, section), Counter()).items(),
                                                          key=lambda item: item[0].value)},
        })  # fmt: skip
    return {
        "tokconf": VERSION,
        "passed": decision.passed,
        "exit_status": decision.exit_status,
        "verdict_line": decision.line(),
        "reasons": [printable(reason) for reason in decision.reasons],
        "warnings": [printable(warning) for warning in decision.warnings],
        "totals": _counts(decision.totals),
        "scope": {
            "units": decision.units,
            "cases": decision.in_scope,
            "covered": decision.covered,
            "granted": decision.granted,
        },
        "grants": {
            grant.input_class.value: {"cases": grant.cases, "bytes": grant.bytes, "share_of_bytes": grant.share}
            for grant in decision.grants
        },
        "units": units,
        "implementation": printable(implementation),
        "contained": decision.contained,
        "sandbox": {"kind": decision.confiner.confinement.value, "about": decision.confiner.describe()},
    }


def write_unfinished(path: Path, implementation: str) -> None:
    """Before a run: a failing verdict saying it has not ended, so a run that dies without one (a usage
    error, a kill, a crash) never leaves an earlier run's `"passed": true` for a CI step to read. A
    stream (`/dev/stdout`, a pipe) keeps nothing to replace, and gets the one document at the end."""
    if not replaceable(path):
        return
    line = "FAIL: no verdict: the run did not finish"
    document = {"tokconf": VERSION, "passed": False, "exit_status": 2, "verdict_line": line,
                "reasons": ["the run did not finish"], "implementation": printable(implementation)}  # fmt: skip
    atomic_write(path, json.dumps(document, indent=1) + "\n", "verdict file")


def write_verdict(path: Path, decision: Decision, summary: Summary, implementation: str) -> None:
    """The document (`verdict_document`), written atomically: a CI step never reads half of one."""
    text = json.dumps(verdict_document(decision, summary, implementation), ensure_ascii=False, indent=1)
    atomic_write(path, text + "\n", "verdict file")
