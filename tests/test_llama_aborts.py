"""A binding that wraps llama.cpp aborts where llama.cpp aborts (issue 34, part 5): a `cmd:` program or a
Python port's worker that dies exactly where the recording holds llama.cpp's abort agrees with it (a
passed case, said so, restarted, not counted toward the give-up); one that caught the abort says so
(`{"aborted": reason}`); a death or an abort anywhere else stays an error, or is a failure named as an
abort. On the synthetic SPM vocabulary without byte fallback, where b11192 aborts on 606 of 847 inputs."""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from pathlib import Path

import checked
import pytest
from checked import Checked
from tokconf.checking.contract import Verdict, judge
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.implementations.command import GIVE_UP_BROKEN

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


def _verdicts(done: Checked, cases: list[str], vocab: str = VOCAB) -> Counter[Verdict]:
    """The verdicts of these cases in the vocabulary's modes, as the JUnit file has them."""
    return Counter(c.verdict for c in done.cases if c.case in cases and c.vocab == vocab and c.section != "interleave")


def _check(impl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> Checked:
    """`tokconf check` of the port on the cases (and `more`: recordings, then options)."""
    recordings = [
        arg for path in (RECORDING, *(m for m in more if m.endswith(".yaml"))) for arg in ("--recordings", path)
    ]
    options = [m for m in more if not m.endswith(".yaml")]
    (tmp_path / "port").mkdir(exist_ok=True)
    writes = ("--sandbox-write", str(tmp_path / "port"))  # the port counts its starts in a file there
    return checked.check(capsys, "--impl", impl, *recordings, *CASES, *writes, *options)


def _aborts(done: Checked, vocab: str = VOCAB) -> Counter[str]:
    """The vocabulary's passed cases that abort as llama.cpp does, by how (its --json units' `aborts`)."""
    assert done.verdict is not None
    return sum((Counter(u["aborts"]) for u in done.verdict["units"] if u["vocab"] == vocab), Counter())


@pytest.mark.parametrize("batch", [False, True], ids=["one-at-a-time", "batches"])
def test_a_program_that_dies_where_llama_cpp_aborts_passes_those_cases(
    batch: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every death agrees, is restarted (one start per death, but the first), and costs no give-up: all
    cases pass and the run passes; the report and the verdict file say how many aborted so. With a
    second vocabulary (gpt-2, where the same inputs give ids), the interleaving check asks the aborting
    cases again in one process, where their deaths agree too."""
    starts = tmp_path / "port" / "starts"
    impl = _port("die", starts, *["--batch"] * batch)
    done = _check(impl, tmp_path, capsys, "bundled/gpt-2.yaml")
    interleaved = [c for c in done.cases if c.section == "interleave"]
    assert interleaved and {c.verdict for c in interleaved} == {Verdict.PASSED}
    # replays of cases where llama.cpp aborts, passed in the shared process: its deaths there agreed too
    assert {c.case.split("/", 1)[1] for c in interleaved if c.vocab == VOCAB} & set(ABORTING)  # "again: MODE/ID"
    assert _verdicts(done, ABORTING) == Counter({Verdict.PASSED: ABORTS})
    assert _verdicts(done, QUOTED + PLAIN) == Counter({Verdict.PASSED: 3 * len(QUOTED + PLAIN)})
    modes = [u for u in done.verdict["units"] if u["vocab"] == VOCAB and u["mode"] in ("plain", "special", "bos")]
    assert sum((Counter(u["aborts"]) for u in modes), Counter()) == Counter({"died": ABORTS})  # died, every one
    assert done.status == 0 and done.verdict["passed"]
    assert len(starts.read_text().splitlines()) >= 1 + ABORTS  # batches: a start more per batch it died in
    said = f"{ABORTS} cases of {VOCAB} abort as llama.cpp does (its process ended (restarted each time): {ABORTS})"
    assert said in done.output


def test_a_program_that_says_it_caught_the_abort_passes_without_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    starts = tmp_path / "port" / "starts"
    page = tmp_path / "report.html"
    done = _check(_port("say", starts), tmp_path, capsys, "--report", str(page))
    assert done.status == 0 and _verdicts(done, ABORTING) == Counter({Verdict.PASSED: ABORTS})
    said = f"{ABORTS} cases of {VOCAB} abort as llama.cpp does (it said it caught the abort: {ABORTS})"
    assert said in done.output
    assert f"<li>{said}</li>" in page.read_text(encoding="utf-8")  # the HTML report's verdict says it too
    assert _aborts(done) == Counter({"aborted": ABORTS})
    assert len(starts.read_text().splitlines()) == 1


def test_a_death_where_llama_cpp_gives_ids_is_an_error_and_counts_toward_the_give_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its own bug (it dies on every input holding `'`, the recording's first cases): those cases are
    errors, never passes, and their 6 deaths give the vocabulary up, so the cases after them are
    errors too (where llama.cpp aborts as well: they were never asked)."""
    done = _check(_port("die-on-quote", tmp_path / "port" / "starts"), tmp_path, capsys)
    assert done.status == 1 and {c.verdict for c in done.cases} == {Verdict.ERROR}
    reasons = Counter(c.reason.split(",")[0] for c in done.cases)
    assert reasons == Counter({"the program exited with status -6": GIVE_UP_BROKEN,
                               "given up after 5 failures in a row": 3 * len(CASES) // 2 - GIVE_UP_BROKEN})  # fmt: skip


def test_an_abort_said_where_llama_cpp_gives_ids_is_a_failure_named_as_an_abort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _check(_port("say-on-quote", tmp_path / "port" / "starts"), tmp_path, capsys)
    quoted = [c for c in done.cases if c.case in QUOTED]
    assert done.status == 1 and quoted and {c.verdict for c in quoted} == {Verdict.FAILED}
    assert quoted[0].reason == "the implementation aborted (llama.cpp aborted: a quote (the port's own bug)) " \
                               "where llama.cpp gave ids"  # fmt: skip
    assert _verdicts(done, ABORTING + PLAIN) == Counter({Verdict.PASSED: 3 * len(ABORTING + PLAIN)})


def test_a_python_port_whose_worker_dies_where_llama_cpp_aborts_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a Python port: its worker process (batches) dies, and is restarted."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "support"))
    done = _check("fake_impls:aborting_reference", tmp_path, capsys)
    assert done.status == 0 and _verdicts(done, ABORTING) == Counter({Verdict.PASSED: ABORTS})
    assert _aborts(done) == Counter({"died": ABORTS})


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
