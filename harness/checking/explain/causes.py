"""`--causes FILE`: every cause and every case under it, machine-readable (docs/checking.md).

A port author's CI acts on this file (a bot comment per cause, a diff of causes between two runs),
so it carries every case id, not the first few a terminal shows. Errors and unsupported answers are
grouped the same way, by their reason with the parts that vary per case (numbers, quoted text)
masked: a port that words its `Unsupported` reason per input gets one group, not 300, and one that
returns a bad id inside lists of every shape (`[-1]`, `[7, -1, 9]`) one group, not one per shape.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.files import atomic_write
from ...core.outcome import outcome_fields
from ...core.render import code_point_list
from ..contract import Verdict
from ..engine import CaseResult
from .explainer import Cause
from .kinds import Replaced

FORMAT = 1  # the document's "format": raised when a field changes meaning
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone one: a port's exception text may hold it
_VARYING = re.compile(
    r"(?:(?<!\w)|(?<=\bb))(?:'[^']*'|\"[^\"]*\")|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|0x[0-9a-fA-F]+|(?<!\w)\d+(?!\w)"
    r"|\[[-\d,\s]*(?:\]|$)"  # a list of numbers, whatever its length and signs (or cut short: a long answer)
)


def case_id(result: CaseResult) -> str:
    """`vocab/mode/case`: how causes and reports name a failing case."""
    return f"{result.vocab}/{result.section}/{result.case}"


def reason_template(reason: str) -> str:
    """A reason with what varies per case masked: `N` for numbers standing alone (not digits inside a
    word, as in `invalid-utf8`, `utf16` or `x86_64`), `'…'` for quoted text."""
    return _VARYING.sub(lambda m: {"'": "'…'", '"': "'…'", "[": "[…]"}.get(m.group()[0], "N"), reason)[:500]


@dataclass
class ReasonGroup:
    """Errors or unsupported answers of one vocab whose reasons differ only in what varies."""

    vocab: str
    template: str
    example: str  # the first reason, as the port worded it
    cases: list[str] = field(default_factory=list)


def group_reasons(found: Iterable[tuple[str, str, str]]) -> list[ReasonGroup]:
    """(vocab, case id, reason) triples grouped by vocab and reason template, the largest first."""
    groups: dict[tuple[str, str], ReasonGroup] = {}
    for vocab, case, reason in found:
        template = reason_template(reason)
        groups.setdefault((vocab, template), ReasonGroup(vocab, template, reason)).cases.append(case)
    return sorted(groups.values(), key=lambda g: (-len(g.cases), g.vocab, g.template))


def reasons_of(results: Iterable[CaseResult], verdict: Verdict) -> list[ReasonGroup]:
    """The results of one verdict, grouped by reason (`group_reasons`)."""
    return group_reasons((r.vocab, case_id(r), r.reason) for r in results if r.verdict is verdict)


def cause_record(cause: Cause, with_cases: bool = True) -> dict[str, Any]:
    """One cause as the document holds it, every case id included (or none: the pytest plugin's
    items each report their own case)."""
    modes: dict[str, int] = {}
    for result in cause.cases:
        modes[result.section] = modes.get(result.section, 0) + 1
    record: dict[str, Any] = {
        "kind": cause.kind.value,
        "label": cause.label,
        "vocab": cause.vocab,
        "minimal_input_b64": base64.b64encode(cause.minimal).decode(),
        "codepoints": code_point_list(cause.minimal),
        "mode": cause.mode,
        "expected": outcome_fields(cause.expected),
        "actual": outcome_fields(cause.actual),
        "shrunk": cause.shrunk,
        "cases_per_mode": dict(sorted(modes.items())),
    }
    if with_cases:
        record["cases"] = [case_id(r) for r in cause.cases]
    if cause.actual_pieces is not None:
        record["actual_pieces_b64"] = [base64.b64encode(p).decode() for p in cause.actual_pieces]
    return record


@dataclass
class Fault:
    """One fault of the port across the vocabularies and modes of a run: the causes (one per
    vocabulary) whose mechanism is the same switch, said the same way."""

    kind: str
    label: str
    causes: list[int] = field(default_factory=list)  # indexes into the run's causes
    cases: dict[str, dict[str, int]] = field(default_factory=dict)  # vocab -> mode -> cases


def faults(causes: list[Cause]) -> list[Fault]:
    """The run's causes folded across vocabularies: causes of one kind and label are one fault (the
    same switch on two SentencePiece vocabularies, a space prefix missing on both); an invalid-UTF-8
    replacement whose policy one vocabulary cannot tell (WordPiece makes any U+FFFD `[UNK]`) joins
    the one fault of its kind whose policy another vocabulary told. `character` causes fold only on
    the same label. Most cases first."""
    found: dict[tuple[str, str], Fault] = {}
    undetermined: list[int] = []
    for index, cause in enumerate(causes):
        if isinstance(cause.mechanism, Replaced) and cause.mechanism.per_byte is None:
            undetermined.append(index)
            continue
        _fault_of(found, cause, index, cause.label)
    for index in undetermined:
        cause = causes[index]
        told = [f for f in found.values() if f.kind == cause.kind.value]
        _fault_of(found, cause, index, told[0].label if len(told) == 1 else cause.label)
    return sorted(found.values(), key=lambda f: (-sum(sum(m.values()) for m in f.cases.values()), f.kind, f.label))


def _fault_of(found: dict[tuple[str, str], Fault], cause: Cause, index: int, label: str) -> None:
    fault = found.setdefault((cause.kind.value, label), Fault(cause.kind.value, label))
    fault.causes.append(index)
    modes = fault.cases.setdefault(cause.vocab, {})
    for result in cause.cases:
        modes[result.section] = modes.get(result.section, 0) + 1


def fault_record(fault: Fault) -> dict[str, Any]:
    """A fault as the causes document holds it: the causes it folds (their indexes) and its cases per
    vocabulary and mode."""
    return {"kind": fault.kind, "label": fault.label, "causes": fault.causes, "cases": fault.cases}


def other_failure(case: str, verdict: Verdict, reason: str) -> dict[str, str]:
    """A failed or unexpectedly passing fact or decoding check: no cause explains those."""
    return {"case": case, "verdict": verdict.value, "reason": reason}


def document(
    causes: list[dict[str, Any]],
    unexplained: list[str],
    errors: list[ReasonGroup],
    unsupported: list[ReasonGroup],
    others: list[dict[str, str]],
    folded: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The whole file: causes (records from `cause_record`), the faults they fold into across
    vocabularies (`fault_record`), unexplained failed cases, grouped errors and unsupported answers,
    and the failed facts and decoding checks (`other_failure`)."""

    def groups(found: list[ReasonGroup]) -> list[dict[str, Any]]:
        return [{"vocab": g.vocab, "reason": g.template, "example": g.example, "cases": g.cases} for g in found]

    return {
        "format": FORMAT,
        "causes": causes,
        "faults": folded or [],
        "unexplained": unexplained,
        "errors": groups(errors),
        "unsupported": groups(unsupported),
        "other_failures": others,
    }


def write_causes(path: Path, doc: dict[str, Any]) -> None:
    """The document as UTF-8 JSON. A lone surrogate cannot be encoded as UTF-8 (writing it raw would
    end the run with a traceback): it is written as JSON's escape of it, `\\ud800`, which reads back
    as the same string."""
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    atomic_write(path, _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n", "causes file")
