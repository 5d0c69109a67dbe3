"""The HTML report of `tokconf check --report x.html`: one page a port author opens from CI to learn
what their port does wrong and how to re-check it.

It shows, top to bottom: the verdict line with each reason the run fails; per vocab x mode a bar of
passed / failed / error / unsupported / xfailed / xpassed cases and the conformance figure; each
cause `--explain` found (its kind, its label, its cases per mode, the minimal input with its
whitespace made visible and its code points, llama.cpp's and the port's tokens side by side as
pieces with the first divergence marked, every case it covers, and the command that re-checks
one); the failed cases no cause explains; the story of every problem no cause covers (errors,
unexpected passes, failures of a run without `--explain`); and why cases were unsupported.

The page is one self-contained file, readable without JavaScript and with none: inline CSS, no
fonts, images or scripts to fetch, and a Content-Security-Policy that forbids them. Everything a
port or a recording wrote (inputs, reasons, case ids, pieces) is escaped, its controls shown as
code points and every other character a browser would not show as itself (a bidi control that
would reorder the page, a lone surrogate) as its escape (`core.printable`), and long inputs are cut.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from ..checking.contract import Decision, Verdict
from ..checking.engine import CaseResult
from ..checking.explain import Cause
from ..checking.explain.causes import ReasonGroup, case_id
from ..checking.run import CheckRun
from ..checking.summary import Summary
from ..core.outcome import Outcome, Refusal, render_outcome
from ..core.printable import escape_unprintable, printable
from ..core.render import code_points, first_divergence, visible
from ..recording.pieces import pieces_of
from .report import Invocation, RunReport, abort_lines, decline_lines, describe_group, group_problems, table_rows

INPUT_SHOWN = 160  # characters of a minimal input shown (one not fully shrunk may be huge)
POINTS_SHOWN = 64  # its code points shown
TOKENS_SHOWN = 48  # tokens of an answer shown, starting a few before the first divergence
BEFORE = 8  # tokens shown before the first divergence
REASONS_SHOWN = 20  # unsupported reasons listed; the rest are counted
REASON_CHARS = 500  # characters of one unsupported reason shown (a port writes them)
SEVERITY = (Verdict.ERROR, Verdict.FAILED, Verdict.XPASSED)  # a problem group's badge: its worst verdict

# C0 controls and DEL as `<U+XXXX>` text (a NUL or a form feed from a port's reason stays readable);
# newlines stay, inside <pre> they lay out the stories.
_CONTROLS = {c: f"<U+{c:04X}>" for c in (*range(0x20), 0x7F) if chr(c) != "\n"}

CSS = """
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa;
  --passed: #2da44e; --failed: #cf222e; --error: #e16f24; --unsupported: #8c959f; --xfailed: #f0a6ab;
  --xpassed: #8250df; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 0; display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 13px; }
pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.meta, .muted { color: var(--muted); }
.meta { margin: 0 0 12px; }
nav { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 12px 0 0; font-size: 14px; }
.verdict { border-radius: 8px; padding: 14px 18px; margin: 20px 0 0; border: 1px solid; }
.verdict.fail { background: #ffebe9; border-color: #ff8182; }
.verdict.pass { background: #dafbe1; border-color: #4ac26b; }
.verdict .word { font-weight: 700; font-size: 20px; margin-right: 10px; }
.verdict.fail .word { color: var(--failed); }
.verdict.pass .word { color: #1a7f37; }
.verdict .line { margin: 6px 0 0; }
.verdict ul { margin: 8px 0 0; padding-left: 20px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: middle; }
th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.zero { color: #c4cad1; }
tr.total td { font-weight: 600; background: var(--soft); }
td.bar-cell { width: 32%; min-width: 140px; }
td.key { white-space: nowrap; }
.bar { display: flex; height: 14px; border-radius: 3px; overflow: hidden; background: var(--soft); }
.bar span { display: block; min-width: 2px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 13px; color: var(--muted); margin: 0 0 8px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; }
.passed { background: var(--passed); } .failed { background: var(--failed); } .error { background: var(--error); }
.unsupported { background: var(--unsupported); } .xfailed { background: var(--xfailed); }
.xpassed { background: var(--xpassed); }
.cause { border: 1px solid var(--line); border-radius: 8px; padding: 16px 18px; margin: 0 0 18px; }
.num { color: var(--muted); font-weight: 600; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #ddf4ff; color: #0550ae;
  border: 1px solid #b6e3ff; }
.badge.v-failed { background: #ffebe9; color: var(--failed); border-color: #ffcecb; }
.badge.v-error { background: #fff1e5; color: #bc4c00; border-color: #ffd8b5; }
.badge.v-xpassed { background: #fbefff; color: var(--xpassed); border-color: #ecd8ff; }
.vocab { font-weight: 400; color: var(--muted); }
.label { font-size: 16px; margin: 8px 0 10px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 0 0 12px; }
dt { color: var(--muted); font-size: 13px; padding-top: 1px; }
dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.chips span { display: inline-block; background: var(--soft); border: 1px solid var(--line); border-radius: 4px;
  padding: 0 6px; margin: 0 4px 2px 0; font-size: 13px; }
.input { background: #fff8c5; border: 1px solid #eed888; border-radius: 4px; padding: 1px 6px; }
.note { color: #9a6700; font-size: 13px; }
.answers { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin: 4px 0 12px; }
.answer { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  min-width: 0; }
.answer h4 { margin: 0 0 8px; font-size: 13px; font-weight: 600; }
.answer h4 small { font-weight: 400; color: var(--muted); }
.tokens { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 6px; }
.tok { display: flex; flex-direction: column; align-items: center; background: #fff; border: 1px solid var(--line);
  border-radius: 4px; padding: 2px 7px; min-width: 34px; }
.tok .piece { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 14px;
  white-space: pre; }
.tok .id { font-size: 11px; color: var(--muted); font-variant-numeric: tabular-nums; }
.tok.at { background: #ffebe9; border: 2px solid var(--failed); }
.tok.after { opacity: .6; }
.none { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; margin: 0;
  color: var(--muted); }
.diverge { font-size: 13px; margin: 0 0 10px; }
.diverge b { color: var(--failed); }
details { margin: 6px 0; }
summary { cursor: pointer; color: var(--accent); font-size: 14px; }
ul.ids { margin: 8px 0 0; padding: 8px 12px 8px 28px; columns: 2 340px; column-gap: 28px; background: var(--soft);
  border-radius: 6px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px;
  max-height: 480px; overflow: auto; }
ul.ids li { overflow-wrap: anywhere; break-inside: avoid; }
.repro { margin: 10px 0 0; }
.repro .title { font-size: 13px; color: var(--muted); }
pre.cmd { background: #0d1117; color: #e6edf3; border-radius: 6px; padding: 9px 12px; margin: 3px 0 0;
  user-select: all; -webkit-user-select: all; cursor: text; }
.story { border: 1px solid var(--line); border-radius: 6px; padding: 4px 12px; margin: 0 0 8px; }
.story summary { color: var(--fg); font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 13px; overflow-wrap: anywhere; }
.story pre { padding: 8px 0 6px; border-top: 1px solid var(--line); margin-top: 6px; }
td.reason { overflow-wrap: anywhere; }
footer { margin-top: 48px; font-size: 12px; color: var(--muted); }
@media (max-width: 760px) { .answers { grid-template-columns: 1fr; } td.bar-cell { min-width: 90px; } }
"""


def render_html(report: RunReport) -> str:
    """The whole report page."""
    run, decision, title, how = report.run, report.decision, report.title, report.how
    explained = {case_id(r) for cause in run.causes for r in cause.cases}
    rest = [r for r in run.summary.problems if case_id(r) not in explained]
    unsupported = report.unsupported
    parts = [
        ("summary", "Summary", _summary(run.summary)),
        ("causes", f"Causes ({len(run.causes)})", _causes(run, how)),
        ("unexplained", f"Failed cases no cause explains ({len(run.unexplained)})", _unexplained(run.unexplained)),
        ("problems", f"Problems no cause covers ({len(rest)})", _stories(rest, run.vocabs, how)),
        ("unsupported", f"Unsupported ({len(unsupported)} reasons)", _unsupported(unsupported)),
    ]
    shown = [(anchor, heading, body) for anchor, heading, body in parts if body]
    nav = "".join(f'<a href="#{anchor}">{_e(heading)}</a>' for anchor, heading, _ in shown)
    sections = "".join(
        f'<section id="{anchor}"><h2>{_e(heading)}</h2>{body}</section>' for anchor, heading, body in shown
    )
    page = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body><main>"
        f"<h1>{_e(title)}</h1>"
        f"<p class='meta'>implementation <b>{_e(run.impl_name)}</b> · {len(run.results)} checks · "
        f"{len(run.vocabs)} vocab(s){' · stopped early by --maxfail' if run.stopped else ''}</p>"
        f"{_verdict(decision, run.summary)}<nav>{nav}</nav>{sections}"
        "<footer>Written by tokconf check. No scripts: every section works in any browser, offline.</footer>"
        "</main></body></html>\n"
    )
    return page.encode("utf-8", "backslashreplace").decode("utf-8")  # a port's lone surrogates, made text


def _e(text: str) -> str:
    """Text made safe inside an element or a quoted attribute, and printable: C0 controls as
    `<U+XXXX>`, each line's other unprintable characters as escapes (`escape_unprintable`)."""
    lines = text.translate(_CONTROLS).split("\n")
    return html.escape("\n".join(map(escape_unprintable, lines)))


def _verdict(decision: Decision, summary: Summary) -> str:
    state, word = ("pass", "PASS") if decision.passed else ("fail", "FAIL")
    reasons = "".join(f"<li>fail: {_e(printable(reason))}</li>" for reason in decision.reasons)
    reasons += "".join(f"<li>warning: {_e(printable(warning))}</li>" for warning in decision.warnings)
    reasons += "".join(f"<li>{_e(line)}</li>" for line in abort_lines(summary) + decline_lines(summary, decision))
    return (
        f"<div class='verdict {state}'><span class='word'>{word}</span>"
        f"<p class='line mono'>{_e(decision.line())}</p>{f'<ul>{reasons}</ul>' if reasons else ''}</div>"
    )


def _summary(summary: Summary) -> str:
    legend = "".join(f"<span><span class='swatch {v.value}'></span>{v.value}</span>" for v in Verdict)
    head = "<tr><th>vocab</th><th>mode</th><th>cases</th>" + "".join(f"<th class='n'>{v.value}</th>" for v in Verdict)
    rows = [head + "<th class='n'>conformance</th></tr>"]
    for row in table_rows(summary):  # [vocab, section, one count per verdict, conformance]
        vocab, section, *counts, conformance = row
        tally = dict(zip(Verdict, map(int, counts), strict=True))
        cells = "".join(f"<td class='n{' zero' if not n else ''}'>{n}</td>" for n in tally.values())
        total = " class='total'" if not section else ""
        rows.append(
            f"<tr{total}><td class='key'>{_e(vocab)}</td><td>{_e(section)}</td><td class='bar-cell'>{_bar(tally)}</td>"
            f"{cells}<td class='n'>{_e(conformance)}</td></tr>"
        )
    note = (
        "<p class='muted'>conformance: passed of judged cases (unsupported ones are not judged; "
        "an xfailed case never conforms)</p>"
    )
    return f"<div class='legend'>{legend}</div><table>{''.join(rows)}</table>{note}"


def _bar(tally: dict[Verdict, int]) -> str:
    total = sum(tally.values())
    segments = "".join(
        f"<span class='{v.value}' style='width:{100 * n / total:.3f}%' title='{n} {v.value}'></span>"
        for v, n in tally.items()
        if n
    )
    return f"<div class='bar'>{segments}</div>"


def _causes(run: CheckRun, how: Invocation) -> str:
    if not run.causes:
        return ""
    intro = (
        "<p class='muted'>Each cause is one thing the port does differently from llama.cpp, replayed to confirm "
        "every case under it. Fix them in order: the first covers the most cases.</p>"
    )
    return intro + "".join(_cause(n, cause, run.vocabs.get(cause.vocab), how) for n, cause in enumerate(run.causes, 1))


def _cause(number: int, cause: Cause, vocab: Path | None, how: Invocation) -> str:
    modes = "".join(f"<span>{_e(m)} {n}</span>" for m, n in sorted(Counter(r.section for r in cause.cases).items()))
    shown = (
        f"<code class='input'>{_e(visible(cause.minimal, INPUT_SHOWN))}</code>"
        if cause.minimal
        else "(the empty input)"
    )
    note = "" if cause.shrunk else " <span class='note'>not fully shrunk: the shrinking budget ran out</span>"
    points = code_points(cause.minimal, POINTS_SHOWN) or "(none)"
    expected, actual = cause.expected, cause.actual
    at, diverge = None, ""
    if isinstance(expected, list) and isinstance(actual, list):
        at = first_divergence(expected, actual)
        diverge = (
            f"<p class='diverge'>first divergence at index <b>{at}</b> "
            f"(llama.cpp {len(expected)} ids, the port {len(actual)})</p>"
        )
    whose, port_piece = _port_pieces(cause, vocab)
    ids = [case_id(r) for r in cause.cases]
    return (
        f"<section class='cause' id='cause-{number}'>"
        f"<h3><span class='num'>Cause {number}</span><span class='badge'>{_e(cause.kind.value)}</span>"
        f"<span class='vocab'>{_e(cause.vocab)}</span></h3>"
        f"<p class='label'>{_e(cause.label)}</p>"
        f"<dl><dt>cases</dt><dd><b>{len(cause.cases)}</b> <span class='chips'>{modes}</span></dd>"
        f"<dt>minimal input</dt><dd>{shown}{note}</dd>"
        f"<dt>code points</dt><dd class='mono'>{_e(points)}</dd>"
        f"<dt>mode</dt><dd>{_e(cause.mode)}</dd></dl>"
        f"{diverge}<div class='answers'>"
        f"{_answer(f'llama.cpp [{cause.mode}]', '', expected, at, lambda _, token: pieces_of(vocab)(token))}"
        f"{_answer(f'the port [{cause.mode}]', whose, actual, at, port_piece)}</div>"
        f"<details><summary>case ids ({len(ids)})</summary>{_id_list(ids)}</details>"
        f"{_reproduce(how.command(cause.cases[0]))}</section>"
    )


def _port_pieces(cause: Cause, vocab: Path | None) -> tuple[str, Callable[[int, int], str]]:
    """How the port's tokens are shown: its own pieces where it decodes, else the GGUF's, said to be
    the GGUF's (they mislead when the port's vocabulary differs)."""
    own = cause.actual_pieces
    if own is not None:
        return "its own pieces", lambda i, _: f"'{visible(own[i], 40)}'" if i < len(own) else ""
    return ("pieces: the GGUF's" if vocab is not None else ""), lambda _, token: pieces_of(vocab)(token)


def _answer(heading: str, whose: str, outcome: Outcome, at: int | None, piece_of: Callable[[int, int], str]) -> str:
    """One side's answer as token chips (id and piece), the first divergence marked; a window of
    them when the answer is long."""
    head = f"<h4>{_e(heading)} <small>{_e(whose)}</small></h4>"
    if isinstance(outcome, Refusal) or not outcome:
        return f"<div class='answer'>{head}<p class='none'>{_e(render_outcome(outcome))}</p></div>"
    start = max(0, (at or 0) - BEFORE)
    window = range(start, min(len(outcome), start + TOKENS_SHOWN))
    chips = []
    if start:
        chips.append(f"<li class='none'>… {start} before</li>")
    for i in window:
        state = " at" if i == at else " after" if at is not None and i > at else ""
        chips.append(
            f"<li class='tok{state}' title='index {i}'><span class='piece'>{_e(piece_of(i, outcome[i]))}</span>"
            f"<span class='id'>{outcome[i]}</span></li>"
        )
    if window.stop < len(outcome):
        chips.append(f"<li class='none'>… {len(outcome) - window.stop} more</li>")
    return f"<div class='answer'>{head}<ul class='tokens'>{''.join(chips)}</ul></div>"


def _id_list(ids: Sequence[str]) -> str:
    return "<ul class='ids'>" + "".join(f"<li>{_e(i)}</li>" for i in ids) + "</ul>"


def _reproduce(command: str) -> str:
    return (
        "<div class='repro'><span class='title'>reproduce (click to select the whole command)</span>"
        f"<pre class='cmd'><code>{_e(command)}</code></pre></div>"
    )


def _unexplained(unexplained: list[CaseResult]) -> str:
    if not unexplained:
        return ""
    modes = ", ".join(f"{m} {n}" for m, n in sorted(Counter(r.section for r in unexplained).items()))
    ids = [case_id(r) for r in unexplained]
    return (
        f"<p>{len(unexplained)} failed case(s) ({_e(modes)}) that no cause's mechanism reproduces; "
        "each one's story is under <a href='#problems'>Problems no cause covers</a>.</p>"
        f"<details open><summary>case ids ({len(unexplained)})</summary>{_id_list(ids)}</details>"
    )


def _stories(problems: list[CaseResult], vocabs: dict[str, Path], how: Invocation) -> str:
    """Each problem group's story, as the terminal tells it, folded under its first line."""
    if not problems:
        return ""
    stories = []
    for group in group_problems(problems):
        worst = next(v for v in SEVERITY if any(r.verdict is v for r in group))
        first, _, rest = describe_group(group, vocabs.get(group[0].vocab), how).partition("\n")
        stories.append(
            f"<details class='story'><summary><span class='badge v-{worst.value}'>{worst.value}</span> "
            f"{_e(first)}</summary><pre>{_e(rest)}</pre></details>"
        )
    return (
        "<p class='muted'>Errors, unexpected passes, and failures no cause covers (all failures, in a run without "
        "--explain), errors first, then shortest input first.</p>" + "".join(stories)
    )


def _unsupported(groups: list[ReasonGroup]) -> str:
    """The declined checks by reason (reasons differing only in numbers and quoted text are one)."""
    if not groups:
        return ""
    rows = "".join(
        f"<tr><td>{_e(g.vocab)}</td><td class='reason'>{_e(_cut(g.example))}</td><td class='n'>{len(g.cases)}</td></tr>"
        for g in groups[:REASONS_SHOWN]
    )
    rest = groups[REASONS_SHOWN:]
    more = f"<p class='muted'>… and {len(rest)} other reason(s), {sum(len(g.cases) for g in rest)} case(s).</p>"
    return (
        "<p class='muted'>Checks the implementation declined: counted, never judged.</p>"
        f"<table><tr><th>vocab</th><th>reason</th><th class='n'>cases</th></tr>{rows}</table>{more if rest else ''}"
    )


def _cut(reason: str) -> str:
    return reason if len(reason) <= REASON_CHARS else f"{reason[:REASON_CHARS]}… ({len(reason)} characters)"
