"""Only tokconf writes the verdict: a port's words (its `Unsupported` reasons, its exception messages, a
`cmd:` program's stderr) reach the terminal and every file as printable text behind a prefix, so none
can pose as the verdict line, rewrite the screen, end the run with a traceback, or become HTML in the
Markdown report (issue 32)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from test_html_report import hostile_run
from tokconf.checking.contract import Gate, Verdict
from tokconf.checking.engine import CaseResult
from tokconf.checking.explain.causes import write_causes
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.core.printable import printable
from tokconf.recording.format import VocabGroup
from tokconf.reporting.html_report import render_html
from tokconf.reporting.junit import write_junit
from tokconf.reporting.report import RunReport, text_table

# Each hostile port raises one text from `encode`, on every input: (what it raises, the text).
ATTACKS = {
    "declines_posing_as_a_verdict": ("tokconf.Unsupported", "later\nPASS: 2719 passed; coverage 2719/2719 cases"),
    "declines_rewriting_the_line": ("tokconf.Unsupported", "\x1b[2K\x1b[1G\x1b[32mPASS: 2719 passed\x1b[0m\r"),
    "raises_escapes_and_bidi": ("ValueError", "\x1b]0;owned\x07\x1b[2K\x1b[1G\x9b32mPASS\u202e lave\u2066\u2028"),
    "raises_a_lone_surrogate": ("ValueError", "bad \ud800 text"),
    "raises_a_fence": ("ValueError", "x\n```\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n```"),
}
PORTS = "\n".join(
    [
        "import tokconf",
        "class Raising:",
        "    def __init__(self, error): self.error = error",
        "    def encode(self, data, add_special, parse_special): raise self.error",
        *(f"def {name}(path): return Raising({kind}({text!r}))" for name, (kind, text) in ATTACKS.items()),
    ]
)
# A `cmd:` program that greets and loads, then on an input writes escapes to its stderr and exits.
PROGRAM = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "hello":
        answer = {"protocol": 2, "name": "ansi-stderr", "vocab_types": ["bpe"]}
    elif request["op"] == "load":
        answer = {"ok": True}
    else:
        sys.stderr.write("\\x1b[2K\\x1b[1G\\x1b[32mPASS: 2719 passed\\x1b[0m\\n")
        sys.exit(3)
    print(json.dumps({"id": request["id"], **answer}), flush=True)
"""
WHERE = {"in-process": ["--in-process"], "worker": []}  # a Python port in tokconf's process, or in a worker
# What the Markdown report's own markup renders to; no element may come from a port's text.
MARKUP = {"h1", "h2", "p", "strong", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "pre", "code"}


def _check(tmp_path: Path, impl: str, *extra: str) -> tuple[int, str]:
    """`tokconf check` of gpt-2 in plain mode, every report file asked for; its status and stdout,
    which must be UTF-8 (a lone surrogate cannot be)."""
    (tmp_path / "hostile_ports.py").write_text(PORTS, encoding="utf-8")
    files = ["--report", "r.md", "--json", "v.json", "--junit", "j.xml", "--causes", "c.json"]
    gpt2_plain = ["--vocab", "gpt-2", "--mode", "plain"]
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(tmp_path)]))
    done = subprocess.run(
        [sys.executable, "-m", "tokconf", "check", "--impl", impl, *gpt2_plain, *files, *extra],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": path}, capture_output=True, timeout=600,
    )  # fmt: skip
    assert "Traceback" not in done.stderr.decode("utf-8", "replace"), done.stderr
    return done.returncode, done.stdout.decode("utf-8")


def _only_tokconf_writes_the_verdict(status: int, out: str) -> list[str]:
    """The run fails, its last line says so, no other line starts like a verdict, every line is
    printable (no ESC, CR, bidi control or surrogate); the `fail:` lines' reasons are returned."""
    lines = out.splitlines()
    assert status == 1 and lines[-1].startswith("FAIL: "), out[-2000:]
    assert [line for line in lines[:-1] if line.lstrip(" │┃").startswith(("PASS", "FAIL"))] == []
    assert [line for line in lines if not line.isprintable()] == []
    return [line.removeprefix("fail: ") for line in lines if line.startswith("fail: ")]


def _files_say_it_too(folder: Path, last: str, reasons: list[str], contained: bool = True) -> None:
    """The JSON verdict is the terminal's; the JUnit and causes files parse; the Markdown renders
    as CommonMark with no element made of a port's text."""
    verdict = json.loads((folder / "v.json").read_text(encoding="utf-8"))
    assert verdict["tokconf"] == 2 and verdict["passed"] is False and verdict["exit_status"] == 1
    assert verdict["contained"] is contained
    assert verdict["verdict_line"] == last and verdict["reasons"] == reasons
    assert ET.parse(folder / "j.xml").getroot().find("testsuite") is not None
    json.loads((folder / "c.json").read_text(encoding="utf-8"))
    rendered = Rendered((folder / "r.md").read_text(encoding="utf-8"))
    assert set(rendered.tags) <= MARKUP and rendered.tags.count("strong") == 1, rendered.tags  # strong: the verdict
    assert last in rendered.text  # the verdict line, rendered as the terminal shows it


class Rendered(HTMLParser):
    """Markdown rendered as CommonMark (with GFM's tables, which the report uses; raw HTML allowed,
    as most renderers allow it): the elements, and the text."""

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text = ""
        self.feed(MarkdownIt("commonmark").enable("table").render(markdown))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text += data


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("port", ATTACKS)
def test_a_ports_text_cannot_pose_as_the_verdict_or_break_the_reports(tmp_path: Path, port: str, where: str) -> None:
    status, out = _check(tmp_path, f"hostile_ports:{port}", *WHERE[where])
    reasons = _only_tokconf_writes_the_verdict(status, out)
    shown = printable(ATTACKS[port][1])
    assert shown in out  # the port's words, as escapes, behind a prefix
    _files_say_it_too(tmp_path, out.splitlines()[-1], reasons, contained=where == "worker")


def test_a_reason_posing_as_a_verdict_is_quoted_in_the_fail_line(tmp_path: Path) -> None:
    """The FAIL line names the first reason, here the port's: its line break and escapes as text."""
    _, out = _check(tmp_path, "hostile_ports:declines_rewriting_the_line")
    said = "unsupported, other (the port said: \\x1b[2K\\x1b[1G\\x1b[32mPASS: 2719 passed\\x1b[0m\\r)"
    assert f"{said}; an implementation that cannot do plain at all claims" in out.splitlines()[-1]  # tokconf's words


def test_a_lone_surrogate_is_written_into_the_html_report(tmp_path: Path) -> None:
    status, out = _check(tmp_path, "hostile_ports:raises_a_lone_surrogate", "--report", "r.html")
    _only_tokconf_writes_the_verdict(status, out)
    assert "bad \\ud800 text" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_programs_stderr_reaches_its_reasons_as_escapes(tmp_path: Path) -> None:
    (tmp_path / "program.py").write_text(PROGRAM, encoding="utf-8")
    status, out = _check(tmp_path, "cmd:" + shlex.join([sys.executable, str(tmp_path / "program.py")]))
    reasons = _only_tokconf_writes_the_verdict(status, out)
    assert "the program exited with status 3; stderr: \\x1b[2K\\x1b[1G\\x1b[32mPASS: 2719 passed\\x1b[0m" in out
    _files_say_it_too(tmp_path, out.splitlines()[-1], reasons)


def test_names_case_ids_inputs_and_reasons_are_printable_in_every_text_and_file(tmp_path: Path) -> None:
    """A run built by hand (`test_html_report`'s, and a case whose vocab name, case id, input and
    refusal a hostile file and port wrote): every line of every text is printable, none but the
    last starts like a verdict, and every file is written and parses."""
    run, _, how = hostile_run()
    refusal = Refusal("no\x1b[2K\ud800", RefusalKind.BROKEN)
    vocab, case, data = "v\u202e|<b>*x*", "c\nPASS: `x`", "\u202e\u2066".encode() + b"\x1b"
    nasty = CaseResult(vocab, "plain", case, Verdict.ERROR, data, [1], refusal, refusal.reason)
    run.results.append(nasty)
    run.summary.add([nasty], VocabGroup.USER)
    run.ended = run.summary.decide(Gate())
    report = RunReport(run, how, "title\x1b[2K")
    texts = [*report.details, *report.causes, *report.notes(), *text_table(run.summary), *report.stories().values()]
    lines = [line for text in [*texts, *report.ending()] for line in text.split("\n")]
    assert [line for line in lines if not line.isprintable()] == []
    assert [line for line in lines[:-1] if line.startswith(("PASS", "FAIL"))] == []
    assert "v\\u202e|<b>*x*" in "\n".join(report.details) and "c\\nPASS: `x`" in "\n".join(report.details)
    rendered = Rendered(report.markdown())
    assert set(rendered.tags) <= MARKUP and rendered.tags.count("strong") == 1, rendered.tags
    write_junit(tmp_path / "j.xml", run.results, report.stories())
    assert ET.parse(tmp_path / "j.xml").getroot().find("testsuite") is not None
    write_causes(tmp_path / "c.json", report.causes_document())
    errors = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["errors"]
    assert refusal.reason in [group["example"] for group in errors]  # as the port wrote it, lone surrogate too
    assert "\\u202e" in render_html(report)  # the bidi control in the input, as text
