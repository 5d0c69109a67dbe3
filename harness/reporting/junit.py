"""JUnit XML of a check: a testsuite per vocab, a testcase per case and mode, for CI dashboards."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..checking.contract import Verdict
from ..checking.engine import CaseResult
from ..core.files import atomic_output, replaceable
from ..core.printable import printable

# Characters XML 1.0 cannot hold (controls, lone surrogates, U+FFFE, U+FFFF): a report quoting an input
# with one must still parse, so they are written as <U+XXXX>, as the reports show invisible characters.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def write_junit(path: Path, results: list[CaseResult], details: dict[int, str]) -> None:
    """`details` maps an index into `results` to the full story of that problem. What a port or a
    recording wrote (names, case ids, reasons) is written printable (`core.printable`), as a dashboard
    shows an attribute on one line; the stories are printable line by line already."""
    root = ET.Element("testsuites", name="tokconf")
    suites: dict[str, ET.Element] = {}
    for index, result in enumerate(results):
        vocab, reason = printable(result.vocab), printable(result.reason)
        suite = suites.get(result.vocab)
        if suite is None:
            suite = suites[result.vocab] = ET.SubElement(root, "testsuite", name=vocab)
        case = ET.SubElement(suite, "testcase", classname=f"{vocab}.{result.section}", name=printable(result.case))
        story = _xml_text(details.get(index, ""))
        if result.verdict in (Verdict.FAILED, Verdict.XPASSED):
            ET.SubElement(case, "failure", message=reason).text = story
        elif result.verdict is Verdict.ERROR:
            ET.SubElement(case, "error", message=reason).text = story
        elif result.verdict in (Verdict.UNSUPPORTED, Verdict.XFAILED):
            ET.SubElement(case, "skipped", message=f"{result.verdict.value}: {reason}")
    _write(path, root)


def write_unfinished_junit(path: Path, implementation: str) -> None:
    """Before a run (as `verdict_json.write_unfinished`): one error saying the run has not finished, so a
    run that stops early never leaves an earlier run's passing cases on a CI dashboard; a stream gets
    the one document at the end."""
    if not replaceable(path):
        return
    root = ET.Element("testsuites", name="tokconf")
    suite = ET.SubElement(root, "testsuite", name="tokconf")
    case = ET.SubElement(suite, "testcase", classname="tokconf.run", name=printable(implementation))
    ET.SubElement(case, "error", message="no verdict: the run did not finish")
    _write(path, root)


def _write(path: Path, root: ET.Element) -> None:
    """Each suite's counts, then the file, written atomically."""
    for suite in root:
        cases = list(suite)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    with atomic_output(path, "JUnit file") as handle:
        ET.ElementTree(root).write(handle, encoding="unicode", xml_declaration=True)
