"""A binding that wraps llama.cpp aborts where llama.cpp aborts (issue 34, part 5): a `cmd:` program or a
Python port's worker that dies exactly where the recording holds llama.cpp's abort agrees with it (a
passed case, said so, restarted, not counted toward the give-up); one that caught the abort says so
(`{"aborted": reason}`); a death or an abort anywhere else stays an error, or is a failure named as an
abort. On the synthetic SPM vocabulary without byte fallback, where b11192 aborts on 606 of 847 inputs."""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path

import pytest
from tokconf.checking.contract import Verdict, judge
from tokconf.checking.run import CheckRun
from tokconf.cli.main import main
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.implementations.command import GIVE_UP_BROKEN
from tokconf.reporting.report import abort_lines

ROOT = Path(__file__).resolve().parent.parent
RECORDING = "bundled/synthetic/variant-spm-no-byte-fallback.yaml"
VOCAB = "variant-spm-no-byte-fallback"
PORT = ROOT / "tests" / "support" / "aborting_port.py"
ABORTING = ["controls/noncharacters", "controls/specials-block", "digits/arabic-indic-run",
            "digits/arabic-indic-in-word"]  # fmt: skip
QUOTED = ["contractions/mixed-case", "contractions/alone-upper"]  # llama.cpp gives ids; they hold `'`
PLAIN = ["controls/c0-all", "controls/nul"]  # llama.cpp gives ids
CASES = [arg for case in ABORTING + QUOTED + PLAIN for arg in ("--case", case)]
ABORTS = len(ABORTING) * 3  # every mode: more than the give-up allows, were they counted
assert ABORTS > GIVE_UP_BROKEN


def _port(behaviour: str, starts: Path, *flags: str) -> str:
    return "cmd:" + shlex.join([sys.executable, str(PORT), behaviour, "--starts", str(starts), *flags])


def _verdicts(run: CheckRun, cases: list[str]) -> Counter[Verdict]:
    return Counter(r.verdict for r in run.results if r.case in cases)


def _check(
    impl: str, tmp_path: Path, check_runs: list[CheckRun], *more: str, options: tuple[str, ...] = ()
) -> tuple[int, CheckRun, dict[str, object]]:
    verdict = tmp_path / "verdict.json"
    recordings = [arg for path in (RECORDING, *more) for arg in ("--recordings", path)]
    (tmp_path / "port").mkdir(exist_ok=True)
    writes = ("--sandbox-write", str(tmp_path / "port"))  # the port counts its starts in a file there
    status = main(["check", "--impl", impl, *recordings, *CASES, "--json", str(verdict), *writes, *options])
    return status, check_runs[-1], json.loads(verdict.read_text())


@pytest.mark.parametrize("batch", [False, True], ids=["one-at-a-time", "batches"])
def test_a_program_that_dies_where_llama_cpp_aborts_passes_those_cases(
    batch: bool, tmp_path: Path, check_runs: list[CheckRun]
) -> None:
    """Every death agrees, is restarted (one start per death, but the first), and costs no give-up: all
    cases pass and the run passes; the report and the verdict file say how many aborted so. With a
    second vocabulary (gpt-2, where the same inputs give ids), the interleaving check asks the aborting
    cases again in one process, where their deaths agree too."""
    starts = tmp_path / "port" / "starts"
    impl = _port("die", starts, *["--batch"] * batch)
    status, run, document = _check(impl, tmp_path, check_runs, "bundled/gpt-2.yaml")
    interleaved = [r for r in run.results if r.section == "interleave"]
    assert interleaved and {r.verdict for r in interleaved} == {Verdict.PASSED}
    assert any(isinstance(r.actual, Refusal) and r.actual.kind is RefusalKind.DIED for r in interleaved)
    run.results[:] = [r for r in run.results if r.vocab == VOCAB and r.section != "interleave"]
    assert _verdicts(run, ABORTING) == Counter({Verdict.PASSED: ABORTS})
    assert _verdicts(run, QUOTED + PLAIN) == Counter({Verdict.PASSED: 3 * len(QUOTED + PLAIN)})
    died = [r for r in run.results if isinstance(r.actual, Refusal)]
    assert {r.actual.kind for r in died if isinstance(r.actual, Refusal)} == {RefusalKind.DIED}
    assert len(died) == ABORTS and status == 0 and run.decision.passed
    assert sum(run.summary.aborts[(VOCAB, mode)][RefusalKind.DIED] for mode in ("plain", "special", "bos")) == ABORTS
    assert len(starts.read_text().splitlines()) >= 1 + ABORTS  # batches: a start more per batch it died in
    assert abort_lines(run.summary) == [
        f"{ABORTS} cases of {VOCAB} abort as llama.cpp does (its process ended (restarted each time): {ABORTS})"
    ]
    units = document["units"]
    assert isinstance(units, list)
    assert sum(unit["aborts"].get("died", 0) for unit in units) == ABORTS


def test_a_program_that_says_it_caught_the_abort_passes_without_a_restart(
    tmp_path: Path, check_runs: list[CheckRun]
) -> None:
    starts = tmp_path / "port" / "starts"
    page = tmp_path / "report.html"
    status, run, _ = _check(_port("say", starts), tmp_path, check_runs, options=("--report", str(page)))
    assert status == 0 and _verdicts(run, ABORTING) == Counter({Verdict.PASSED: ABORTS})
    said = f"{ABORTS} cases of {VOCAB} abort as llama.cpp does (it said it caught the abort: {ABORTS})"
    assert abort_lines(run.summary) == [said]
    assert f"<li>{said}</li>" in page.read_text(encoding="utf-8")  # the HTML report's verdict says it too
    assert {r.actual.kind for r in run.results if isinstance(r.actual, Refusal)} == {RefusalKind.ABORTED}
    assert len(starts.read_text().splitlines()) == 1


def test_a_death_where_llama_cpp_gives_ids_is_an_error_and_counts_toward_the_give_up(
    tmp_path: Path, check_runs: list[CheckRun]
) -> None:
    """Its own bug (it dies on every input holding `'`, the recording's first cases): those cases are
    errors, never passes, and their 6 deaths give the vocabulary up, so the cases after them are
    errors too (where llama.cpp aborts as well: they were never asked)."""
    status, run, _ = _check(_port("die-on-quote", tmp_path / "port" / "starts"), tmp_path, check_runs)
    assert status == 1 and {r.verdict for r in run.results} == {Verdict.ERROR}
    reasons = Counter(r.reason.split(",")[0] for r in run.results)
    assert reasons == Counter({"the program exited with status -6": GIVE_UP_BROKEN,
                               "given up after 5 failures in a row": 3 * len(CASES) // 2 - GIVE_UP_BROKEN})  # fmt: skip


def test_an_abort_said_where_llama_cpp_gives_ids_is_a_failure_named_as_an_abort(
    tmp_path: Path, check_runs: list[CheckRun]
) -> None:
    status, run, _ = _check(_port("say-on-quote", tmp_path / "port" / "starts"), tmp_path, check_runs)
    quoted = [r for r in run.results if r.case in QUOTED]
    assert status == 1 and quoted and {r.verdict for r in quoted} == {Verdict.FAILED}
    assert quoted[0].reason == "the implementation aborted (llama.cpp aborted: a quote (the port's own bug)) " \
                               "where llama.cpp gave ids"  # fmt: skip
    assert _verdicts(run, ABORTING + PLAIN) == Counter({Verdict.PASSED: 3 * len(ABORTING + PLAIN)})


def test_a_python_port_whose_worker_dies_where_llama_cpp_aborts_passes(
    tmp_path: Path, check_runs: list[CheckRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a Python port: its worker process (batches) dies, and is restarted."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "support"))
    status, run, _ = _check("fake_impls:aborting_reference", tmp_path, check_runs)
    assert status == 0 and _verdicts(run, ABORTING) == Counter({Verdict.PASSED: ABORTS})
    assert sum(n[RefusalKind.DIED] for n in run.summary.aborts.values()) == ABORTS


@pytest.mark.parametrize(
    ("actual", "verdict"),
    [
        (Refusal("exited", RefusalKind.DIED), Verdict.ERROR),
        (Refusal("caught", RefusalKind.ABORTED), Verdict.FAILED),
        (Refusal("hung", RefusalKind.BROKEN), Verdict.ERROR),
    ],
)
def test_where_llama_cpp_gives_ids_no_abort_passes(actual: Refusal, verdict: Verdict) -> None:
    assert judge([1, 2], actual)[0] is verdict
    assert judge(Refusal("abort: uncaught std::out_of_range: unordered_map::at"), actual)[0] is (
        Verdict.ERROR if actual.kind is RefusalKind.BROKEN else Verdict.PASSED
    )
