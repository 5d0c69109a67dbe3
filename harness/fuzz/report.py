"""Watching a campaign: a live progress line, the summary at the end, and an HTML report whose plot
shows examples and findings over time (an inline SVG: a plotting library would be the heaviest
dependency tokconf has, for two lines on a chart).
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..core.files import atomic_write
from ..core.outcome import Mode
from .campaign import CampaignStats, TargetStats
from .database import MAX_ENTRY

HEADER = ["vocab", "mode", "examples", "replayed", "new", "failing", "findings", "unsupported", "skipped"]


class Progress:
    """One status line: examples/s, the current vocab × mode counts and findings so far. On a terminal
    it is redrawn in place every `every` seconds; in a log (CI) it is a new line every ten times that."""

    def __init__(self, stream: TextIO | None = None, every: float = 1.0) -> None:
        self.stream = stream or sys.stderr  # looked up now: pytest's capture replaces it
        self.live = self.stream.isatty()
        self.every = every if self.live else 10 * every
        self.last = time.monotonic()

    def __call__(self, stats: CampaignStats) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        line = status_line(stats)
        if self.live:
            self.stream.write(f"\r\x1b[K{line}")
        else:
            self.stream.write(f"{line}\n")
        self.stream.flush()

    def done(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def status_line(stats: CampaignStats) -> str:
    rate = stats.examples / max(stats.seconds, 1e-9)
    (vocab, mode), target = list(stats.targets.items())[-1] if stats.targets else (("-", "-"), TargetStats())
    return (
        f"[{stats.seconds:6.1f} s] {stats.examples:,} examples ({rate:,.0f}/s) | {vocab} [{mode}] "
        f"{target.examples:,} | findings {stats.found}"
    )


def rows(targets: dict[tuple[str, Mode], TargetStats]) -> list[list[str]]:
    """One row per vocabulary and mode, in the order they ran; `skipped`: database entries not replayed."""
    return [
        [
            vocab,
            mode,
            *(f"{n:,}" for n in (t.examples, t.replayed, t.new, t.failing, t.findings, t.unsupported, t.skipped)),
        ]
        for (vocab, mode), t in targets.items()
    ]


def summary_lines(stats: CampaignStats) -> list[str]:
    """The table and the totals, as `tokconf fuzz` prints them at the end."""
    table = [HEADER, *rows(stats.targets)]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    lines = []
    for row in table:  # names left-aligned, counts right-aligned
        cells = [cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    busy = stats.oracle_seconds + stats.impl_seconds
    share = 100 * stats.oracle_seconds / max(busy, 1e-9)
    total = stats.total
    lines.append(
        f"{total.examples} examples ({total.replayed} replayed, {total.new} new) in {stats.seconds:.1f} s "
        f"({total.examples / max(stats.seconds, 1e-9):.0f}/s; {share:.0f}% of the tokenizing time in llama.cpp), "
        f"{total.findings} distinct failures, {len(stats.unsupported)} unsupported vocabs, {total.skipped} database "
        f"entries skipped ({total.too_large} over {MAX_ENTRY >> 10} KiB, {total.beyond_share} beyond the replay "
        f"share), seed {stats.seed}"
    )
    return lines


def _plot(timeline: Sequence[tuple[float, int, int]]) -> str:
    """Examples (left axis) and findings (right axis) over time, as SVG polylines."""
    width, height, pad = 640, 240, 40
    seconds = max((t for t, _, _ in timeline), default=0.0) or 1.0
    examples = max((e for _, e, _ in timeline), default=0) or 1
    findings = max((f for _, _, f in timeline), default=0) or 1

    def points(column: int, top: int) -> str:
        x_scale, y_scale = (width - 2 * pad) / seconds, (height - 2 * pad) / top
        return " ".join(f"{pad + x_scale * row[0]:.1f},{height - pad - y_scale * row[column]:.1f}" for row in timeline)

    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img'>"
        f"<rect x='{pad}' y='{pad}' width='{width - 2 * pad}' height='{height - 2 * pad}' fill='none' stroke='#999'/>"
        f"<polyline points='{points(1, examples)}' fill='none' stroke='#1f77b4' stroke-width='2'/>"
        f"<polyline points='{points(2, findings)}' fill='none' stroke='#d62728' stroke-width='2'/>"
        f"<text x='{pad}' y='{pad - 8}' fill='#1f77b4'>examples (0 to {examples:,})</text>"
        f"<text x='{width - pad}' y='{pad - 8}' fill='#d62728' text-anchor='end'>findings (0 to {findings})</text>"
        f"<text x='{width / 2}' y='{height - 8}' text-anchor='middle'>seconds (0 to {seconds:.1f})</text></svg>"
    )


def write_html(path: Path, title: str, stats: CampaignStats, findings: list[str]) -> None:
    """The report: totals, the plot, the table, and each finding's description."""
    cells = "".join(f"<th>{html.escape(c)}</th>" for c in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows(stats.targets))
    found = "".join(f"<pre>{html.escape(text)}</pre>" for text in findings) or "<p>none</p>"
    atomic_write(
        path,
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(summary_lines(stats)[-1])}</p>{_plot(stats.timeline)}"
        f"<table border='1'><tr>{cells}</tr>{body}</table><h2>Findings</h2>{found}</body></html>\n",
        "fuzz report",
    )
