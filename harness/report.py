"""Reports a porter can act on: the summary table, mismatch details, JUnit XML, Markdown and HTML.

A mismatch shows the vocab, mode and case, the input with its whitespace made visible and its code
points, the first index where the ids diverge, a window of expected and actual ids each with its
piece (the token's text from the GGUF file), and one command that re-checks that case alone.
"""

from __future__ import annotations

import html
import shlex
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.checking import VERDICTS, CaseResult
from harness.fuzz import WHITESPACE
from harness.outcome import Refusal
from reference_impl.gguf_reader import read_tokenizer_fields

WINDOW = 4

VISIBLE = {" ": "·", "\t": "→", "\n": "↵", "\r": "←", "\x0b": "⇣", "\x0c": "⇟"}
# Shown as <U+XXXX>: every other Unicode whitespace, and the zero-width and format characters.
INVISIBLE = set("".join(WHITESPACE)) - set(VISIBLE) | set("\u200b\u200c\u200d\u2060\ufeff\u00ad")


def visible(data: bytes, limit: int = 200) -> str:
    """The input with whitespace and controls made visible, invalid bytes as \\xNN."""
    text = data.decode("utf-8", errors="backslashreplace")
    shown = []
    for ch in text[:limit]:
        if ch in VISIBLE:
            shown.append(VISIBLE[ch])
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in INVISIBLE:
            shown.append(f"<U+{ord(ch):04X}>")
        else:
            shown.append(ch)
    return "".join(shown) + (f"… ({len(data)} bytes)" if len(text) > limit else "")


def code_points(data: bytes, limit: int = 24) -> str:
    text = data.decode("utf-8", errors="surrogateescape")
    points = [f"\\x{ord(c) - 0xDC00:02X}" if 0xDC80 <= ord(c) <= 0xDCFF else f"U+{ord(c):04X}" for c in text[:limit]]
    return " ".join(points) + (" …" if len(text) > limit else "")


@lru_cache(maxsize=4)
def _token_texts(vocab: Path) -> list[str]:
    """Token texts from the GGUF file (read once per vocab, only when a mismatch is shown)."""
    tokens: list[str] = read_tokenizer_fields(vocab)["tokenizer.ggml.tokens"]
    return tokens


def piece(vocab: Path | None, token: int) -> str:
    """The text of a token in a GGUF vocab, for reports ("" when the file is not at hand)."""
    if vocab is None:
        return ""
    texts = _token_texts(vocab)
    return repr(texts[token]) if 0 <= token < len(texts) else "<out of range>"


def first_divergence(expected: list[int], actual: list[int]) -> int:
    for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
        if a != b:
            return i
    return min(len(expected), len(actual))


def repro_command(result: CaseResult, impl: str, recordings: str) -> str:
    args = ["tokconf", "check", "--impl", impl, "--recordings", recordings, "--vocab", result.vocab]
    args += ["--mode", result.mode, "--case", result.case]
    return shlex.join(args)


def describe(result: CaseResult, vocab: Path | None, impl: str, recordings: str) -> str:
    """The full story of one failed or broken case, as plain text."""
    lines = [f"{result.vocab} [{result.mode}] {result.case}: {result.verdict} — {result.reason}"]
    if result.mode == "facts":
        return lines[0]
    if result.mode == "decode":  # a whole-vocabulary check: the reason lists the first differences
        again = ["tokconf", "check", "--impl", impl, "--recordings", recordings, "--vocab", result.vocab]
        return lines[0] + "\n  reproduce:   " + shlex.join([*again, "--mode", "decode"])
    lines.append(f"  input:       {visible(result.data)}")
    lines.append(f"  code points: {code_points(result.data)}")
    expected, actual = result.expected, result.actual
    if isinstance(expected, list) and isinstance(actual, list):
        at = first_divergence(expected, actual)
        lines.append(f"  first divergence at index {at} (expected {len(expected)} ids, got {len(actual)})")
        for label, ids in (("expected", expected), ("actual", actual)):
            window = range(max(0, at - WINDOW), min(len(ids), at + WINDOW + 1))
            shown = [f"{'>' if i == at else ' '}{ids[i]} {piece(vocab, ids[i])}" for i in window]
            lines.append(f"  {label:9}[{window.start}:]: " + "  ".join(shown))
    else:
        for label, outcome in (("expected", expected), ("actual", actual)):
            text = f"refused: {outcome.reason}" if isinstance(outcome, Refusal) else str(outcome)
            lines.append(f"  {label}: {text}")
    lines.append(f"  reproduce:   {repro_command(result, impl, recordings)}")
    return "\n".join(lines)


class Summary:
    """Counts per vocab x mode, and the failures kept for details."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.problems: list[CaseResult] = []

    def add(self, results: Iterable[CaseResult]) -> None:
        for result in results:
            self.counts[(result.vocab, result.mode)][result.verdict] += 1
            if result.verdict in ("failed", "error", "xpassed"):
                self.problems.append(result)

    @property
    def ok(self) -> bool:
        totals = self.totals()
        return not (totals["failed"] or totals["error"] or totals["xpassed"]) and sum(totals.values()) > 0

    def totals(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for counts in self.counts.values():
            total.update(counts)
        return total

    @staticmethod
    def conformance(counts: Counter[str]) -> str:
        judged = sum(counts[v] for v in VERDICTS if v != "unsupported")
        if not judged:
            return "n/a"
        return f"{100 * (counts['passed'] + counts['xfailed']) / judged:.2f}%"

    def rows(self) -> list[list[str]]:
        rows = []
        for (vocab, mode), counts in sorted(self.counts.items()):
            rows.append([vocab, mode, *(str(counts[v]) for v in VERDICTS), self.conformance(counts)])
        totals = self.totals()
        rows.append(["all", "", *(str(totals[v]) for v in VERDICTS), self.conformance(totals)])
        return rows

    def print_table(self, console: Console, title: str) -> None:
        table = Table(title=title)
        for column in ("vocab", "mode", *VERDICTS, "conformance"):
            table.add_column(column, justify="left" if column in ("vocab", "mode") else "right")
        for row in self.rows():
            table.add_row(*row)
        console.print(table)

    def markdown(self, title: str, details: list[str]) -> str:
        header = ["vocab", "mode", *VERDICTS, "conformance"]
        lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows()]
        if details:
            lines += ["", "## Failures", ""] + [f"```\n{d}\n```" for d in details]
        return "\n".join(lines) + "\n"

    def html(self, title: str, details: list[str]) -> str:
        header = ["vocab", "mode", *VERDICTS, "conformance"]
        head = "".join(f"<th>{h}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self.rows())
        failures = "".join(f"<pre>{html.escape(d)}</pre>" for d in details)
        return (
            f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body><h1>{html.escape(title)}</h1><table border='1'><tr>{head}</tr>{body}</table>"
            f"{'<h2>Failures</h2>' + failures if failures else ''}</body></html>\n"
        )


def write_junit(path: Path, results: list[CaseResult], details: dict[int, str]) -> None:
    """JUnit XML: a testsuite per vocab, a testcase per case and mode."""
    root = ET.Element("testsuites", name="tokconf")
    suites: dict[str, ET.Element] = {}
    for index, result in enumerate(results):
        suite = suites.get(result.vocab)
        if suite is None:
            suite = suites[result.vocab] = ET.SubElement(root, "testsuite", name=result.vocab)
        case = ET.SubElement(suite, "testcase", classname=f"{result.vocab}.{result.mode}", name=result.case)
        if result.verdict in ("failed", "xpassed"):
            ET.SubElement(case, "failure", message=result.reason).text = details.get(index, "")
        elif result.verdict == "error":
            ET.SubElement(case, "error", message=result.reason).text = details.get(index, "")
        elif result.verdict in ("unsupported", "xfailed"):
            ET.SubElement(case, "skipped", message=f"{result.verdict}: {result.reason}")
    for suite in suites.values():
        cases = list(suite)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
