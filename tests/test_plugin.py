"""The pytest plugin, run in a pytester sandbox as a port's own test suite would run it."""

from __future__ import annotations

import json
import shlex
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
import tokconf_reference.tokenizer  # noqa: F401  # loaded before pytester's first in-process run (see `sandbox`)
from tokconf.builds.build import Build
from tokconf.core.outcome import MODES
from tokconf.recording.format import load

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
SUPPORT = ROOT / "tests" / "support"  # the ports and programs the tests run


def _verdicts(sandbox: pytest.Pytester, group: str = "shipped") -> Counter[str]:
    """The verdicts the last run reported, from its JUnit file: `vocab section verdict` -> items (every
    vocabulary of a run is of one group, which each item's property names)."""
    root = ET.parse(sandbox.path / "report.xml").getroot()
    values = [json.loads(p.get("value", "")) for p in root.iter("property") if p.get("name") == "tokconf"]
    assert {value["group"] for value in values} == {group}
    return Counter(f"{value['vocab']} {value['section']} {value['verdict']}" for value in values)


JUNIT = "--junitxml=report.xml"


def test_every_case_and_mode_is_an_addressable_item(sandbox: pytest.Pytester) -> None:
    result = sandbox.runpytest(
        "--tokconf-recordings", str(QWEN2), "--tokconf-impl", "reference", "--collect-only", "-q"
    )
    lines = result.outlines
    cases = len(load(QWEN2).cases)
    assert f"{3 * cases + 1 + 4} tests collected" in "\n".join(lines)  # the facts, and 4 decoding checks
    assert "tokconf/b11192/qwen2::qwen2-special-fuzz-0042" in lines
    assert "tokconf/b11192/qwen2::qwen2-plain-edge-hello-world" in lines
    assert "tokconf/b11192/qwen2::qwen2-facts" in lines


def test_llama_cpp_passes_and_the_table_is_printed(sandbox: pytest.Pytester, llama_build: Build) -> None:
    result = sandbox.runpytest(
        "--tokconf-recordings", str(QWEN2), "--tokconf-impl", "llama.cpp@11192", "-k", "hello or facts", JUNIT
    )
    result.assert_outcomes(passed=10)
    assert _verdicts(sandbox) == {"qwen2 plain passed": 3, "qwen2 special passed": 3, "qwen2 bos passed": 3,
                                  "qwen2 facts passed": 6}  # fmt: skip
    result.stdout.fnmatch_lines(["*tokconf conformance: llama.cpp@11192 against*qwen2.yaml*"])


def test_a_broken_implementation_fails_exactly_the_broken_cases(sandbox: pytest.Pytester, llama_build: Build) -> None:
    result = sandbox.runpytest(
        "--tokconf-recordings", str(QWEN2), "--tokconf-impl", "fake_impls:one_id_changed", "-k", "hello"
    )
    selected = [c for c in load(QWEN2).cases if "hello" in c.id]
    broken = sum(1 for c in selected if c.data == b"Hello world")
    assert broken == 1
    result.assert_outcomes(passed=3 * (len(selected) - broken), failed=3 * broken)
    result.stdout.fnmatch_lines(
        [
            "*qwen2 ?plain? edge/hello-world: failed — different ids",  # fnmatch: [..] is a class
            "*first divergence at index 1*",
            "*reproduce:*tokconf check --impl fake_impls:one_id_changed*--case edge/hello-world",
        ]
    )


def test_only_the_items_the_run_kept_are_asked(sandbox: pytest.Pytester, llama_build: Build) -> None:
    """`-k` (or --deselect, --lf) narrows what the implementation is asked, not only what is shown (the
    port in this process, where the test can count what it was asked)."""
    import fake_impls

    fake_impls.ASKED.clear()
    counting = ["--tokconf-impl", "fake_impls:counting", "--tokconf-in-process"]
    result = sandbox.runpytest("--tokconf-recordings", str(QWEN2), *counting, "-k", "hello or facts")
    result.assert_outcomes(passed=10)
    hello = [c.data for c in load(QWEN2).cases if "hello" in c.id]
    asked = [a for a in fake_impls.ASKED if isinstance(a, tuple)]
    assert len(asked) == len(fake_impls.ASKED)  # no decoding
    assert sorted(asked) == sorted((d, *flags) for d in hello for flags in MODES.values())
    fake_impls.ASKED.clear()
    result = sandbox.runpytest("--tokconf-recordings", str(QWEN2), *counting, "-k", "pieces-plain")
    result.assert_outcomes(passed=1)
    assert set(fake_impls.ASKED) == {"token_to_piece"}  # the pieces, no case, no detokenization


def test_facts_unsupported_and_modes(sandbox: pytest.Pytester, llama_build: Build) -> None:
    result = sandbox.runpytest(
        "--tokconf-recordings", str(QWEN2), "--tokconf-impl", "fake_impls:wrong_bos", "-k", "facts"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*bos: the implementation says 151644, llama.cpp says 151643*"])
    # an SPM vocabulary (a synthetic one: 847 cases to collect and skip, llama-spm has 2,747)
    spm = ROOT / "recordings" / "b11192" / "synthetic" / "variant-spm-eos-only.yaml"
    result = sandbox.runpytest(
        "--tokconf-recordings", str(spm), "--tokconf-impl", "fake_impls:bpe_only", "--tokconf-mode", "plain", JUNIT
    )
    cases = len(load(spm).cases)
    result.assert_outcomes(skipped=cases + 1)  # and the facts, checked with any mode as `tokconf check` checks them
    verdicts = _verdicts(sandbox, "synthetic")
    assert verdicts.pop("variant-spm-eos-only plain unsupported") == cases
    assert set(verdicts) == {"variant-spm-eos-only facts unsupported"}


def test_xdist_spreads_vocabs_over_workers(sandbox: pytest.Pytester, llama_build: Build) -> None:
    spm = ROOT / "recordings" / "b11192" / "llama-spm.yaml"
    result = sandbox.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "--tokconf-recordings", str(QWEN2), "--tokconf-recordings", str(spm),
        "--tokconf-impl", "llama.cpp@11192", "--tokconf-mode", "special", "-k", "edge", JUNIT,
    )  # fmt: skip
    edge = sum(1 for c in load(QWEN2).cases if "edge" in c.id.lower())  # as `-k edge` picks items
    result.assert_outcomes(passed=2 * edge)
    assert _verdicts(sandbox) == {"qwen2 special passed": edge, "llama-spm special passed": edge}
    result.stdout.fnmatch_lines(["*tokconf conformance*"])


def test_without_recordings_the_plugin_adds_nothing(sandbox: pytest.Pytester) -> None:
    sandbox.makepyfile("def test_x():\n    pass\n")
    result = sandbox.runpytest()
    result.assert_outcomes(passed=1)
    assert "tokconf conformance" not in result.stdout.str()


def test_the_reference_passes_a_whole_recording_through_the_plugin(
    sandbox: pytest.Pytester, llama_build: Build
) -> None:
    """gpt-2's vocabulary adding BOS and EOS (a synthetic recording: a third of gpt-2's cases, so a
    third of the items; the reference against every shipped recording: test_reference_conformance)."""
    name = "variant-bpe-bos-eos"
    recording = ROOT / "recordings" / "b11192" / "synthetic" / f"{name}.yaml"
    result = sandbox.runpytest("--tokconf-recordings", str(recording), "--tokconf-impl", "reference", "-q", JUNIT)
    cases = len(load(recording).cases)
    result.assert_outcomes(passed=3 * cases + 1 + 4)  # every case and mode, facts, decoding
    expected = {f"{name} {mode} passed": cases for mode in ("plain", "special", "bos")}
    assert _verdicts(sandbox, "synthetic") == {**expected, f"{name} facts passed": 6, f"{name} decode passed": 4}


@pytest.mark.conformance
@pytest.mark.parametrize("engine", ["tokconf", "hypothesis"])
def test_a_fuzz_campaign_spread_by_xdist_finds_and_shrinks_a_bug(
    sandbox: pytest.Pytester, llama_build: Build, tmp_path: Path, engine: str
) -> None:
    found = tmp_path / "found"
    result = sandbox.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "--tokconf-fuzz", "fake_impls:ideographic_space_is_space",
        "--tokconf-fuzz-engine", engine,
        "--tokconf-fuzz-vocab", "qwen2", "--tokconf-fuzz-vocab", "gpt-2", "--tokconf-fuzz-mode", "plain",
        "--tokconf-fuzz-examples", "1000", "--tokconf-fuzz-seed", "0", "--tokconf-fuzz-database", "",
        "--tokconf-fuzz-found-dir", str(found), "--tokconf-fuzz-report", str(tmp_path / "report.html"),
    )  # fmt: skip
    result.assert_outcomes(failed=2)  # one item per vocab and mode, on two workers
    output = result.stdout.str()  # (fnmatch would read "[plain]" as a character class)
    for line in ("qwen2 [plain] different ids", "gpt-2 [plain] different ids", "(U+3000)", "2 distinct failures"):
        assert line in output
    for vocab in ("qwen2", "gpt-2"):
        assert [c.data for c in load(found / f"found-{vocab}.yaml").cases] == ["\u3000".encode()]
    report = (tmp_path / "report.html").read_text(encoding="utf-8")  # both workers' items, one report
    assert (
        "<polyline" in report and report.count("<td>plain</td>") == 2 and report.count("input:     &lt;U+3000&gt;") == 2
    )


def test_the_fuzz_database_ini_key_names_the_shared_database(sandbox: pytest.Pytester, llama_build: Build) -> None:
    sandbox.makeini("[pytest]\ntokconf_fuzz_database = from-ini\n")
    args = ["--tokconf-fuzz", "fake_impls:ideographic_space_is_space", "--tokconf-fuzz-vocab", "gpt-2"]
    args += ["--tokconf-fuzz-mode", "plain", "--tokconf-fuzz-examples", "300", "--tokconf-fuzz-found-dir", "found"]
    sandbox.runpytest_subprocess(*args).assert_outcomes(failed=1)
    assert any((sandbox.path / "from-ini").rglob("*"))  # the finding went to the database the ini names
    result = sandbox.runpytest_subprocess(*args, "--tokconf-fuzz-database", "")  # the option wins over the ini
    result.assert_outcomes(failed=1)
    assert "replayed from the example database" not in result.stdout.str()
    result = sandbox.runpytest_subprocess(*args)
    assert "(replayed from the example database as example 1" in result.stdout.str()


def test_a_fuzz_campaign_collects_only_the_campaign(sandbox: pytest.Pytester) -> None:
    sandbox.makepyfile("def test_x():\n    pass\n")
    result = sandbox.runpytest("--tokconf-fuzz", "reference", "--tokconf-fuzz-vocab", "qwen2", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*qwen2-plain*", "*qwen2-special*", "*qwen2-bos*", "3 tests collected*"])


def test_recordings_without_an_implementation_are_a_usage_error(sandbox: pytest.Pytester) -> None:
    sandbox.makepyprojecttoml(f'[tool.pytest.ini_options]\ntokconf_recordings = ["{QWEN2}"]\n')
    sandbox.makepyfile("def test_x():\n    pass\n")
    result = sandbox.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*recordings are named but no implementation: add --tokconf-impl*"])


def test_a_mistyped_vocab_is_a_usage_error(sandbox: pytest.Pytester) -> None:
    """`--tokconf-vocab gtp-2` beside a right one would leave it unchecked in a passing run."""
    sandbox.makepyfile("def test_x():\n    pass\n")
    result = sandbox.runpytest("--tokconf-impl", "reference", "--tokconf-vocab", "gpt-2", "--tokconf-vocab", "gtp-2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tokconf-vocab gtp-2: no recording of it in*", "*did you mean 'gpt-2'?*"])


def test_the_ini_implementation_gates_the_bundled_recordings(sandbox: pytest.Pytester) -> None:
    sandbox.makepyprojecttoml('[tool.pytest.ini_options]\ntokconf_impl = "reference"\n')
    result = sandbox.runpytest("--collect-only", "-q", "--tokconf-vocab", "qwen2", "-k", "hello-world")
    result.stdout.fnmatch_lines(["tokconf/b11192/qwen2::qwen2-plain-edge-hello-world"])


def test_an_expected_failure_entry_matching_nothing_fails_a_strict_run(
    sandbox: pytest.Pytester, llama_build: Build
) -> None:
    xfail = sandbox.path / "xfail.yaml"
    xfail.write_text("expected_failures:\n  - {case: 'qwen2/plain/edge/no-such-case', reason: a typo}\n")
    args = ["--tokconf-recordings", str(QWEN2), "--tokconf-impl", "llama.cpp@11192", "-k", "hello-world"]
    result = sandbox.runpytest(*args, "--tokconf-xfail", str(xfail))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["warning: expected-failure entry 'qwen2/plain/edge/no-such-case' matched no*"])
    result = sandbox.runpytest(*args, "--tokconf-xfail", str(xfail), "--tokconf-strict-xfail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # though every item passed:
    result.assert_outcomes(passed=3 * sum(1 for c in load(QWEN2).cases if "hello-world" in c.id))


@pytest.mark.conformance
def test_explained_causes_reach_the_summary_from_xdist_workers(sandbox: pytest.Pytester) -> None:
    """Each failed item carries its cause (JUnit property `tokconf-cause`: the cause's key, story and
    record, and the item's case id); the summary prints each cause once.
    On gpt-2's vocabulary under qwen2's pre name (a synthetic recording, a fifth of qwen2's plain items;
    qwen2's own 618 NFC failures are one cause in tests/test_explain.py)."""
    recording = ROOT / "recordings" / "b11192" / "synthetic" / "pre-qwen2.yaml"
    result = sandbox.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tokconf-impl", "fake_impls:normalizes_nfc", "--tokconf-recordings",
        str(recording), "--tokconf-mode", "plain", "--tokconf-explain", "-n", "2", "--dist", "loadgroup", JUNIT,
    )  # fmt: skip
    result.assert_outcomes(failed=159, passed=675)  # 674 cases and the facts
    root = ET.parse(sandbox.path / "report.xml").getroot()
    notes = [json.loads(p.get("value", "")) for p in root.iter("property") if p.get("name") == "tokconf-cause"]
    assert len(notes) == 159 and len({n["key"] for n in notes}) == 1 and len({n["case"] for n in notes}) == 159
    (first,) = [n for n in notes if "record" in n]  # the cause travels once
    assert first["record"]["kind"] == "normalized-nfc" and first["record"]["cases_per_mode"] == {"plain": 159}
    assert result.stdout.str().count("cause 1: pre-qwen2, normalized-nfc — normalizes its input to NFC") == 1


def test_the_contract_decides_a_plugin_run_and_a_claim_scopes_it(sandbox: pytest.Pytester, llama_build: Build) -> None:
    """Items that all pass or skip do not make a green run when a claimed mode judged nothing; the
    `tokconf_claim` ini key (or --tokconf-claim) narrows the scope to what the port supports."""
    # one token, so that pytest does not take the recording's folder for the root that holds the ini file
    args = [f"--tokconf-recordings={QWEN2}", "--tokconf-impl", "zoo_ports:declines_parse_special", "-k", "hello"]
    result = sandbox.runpytest(*args)
    hello = sum(1 for c in load(QWEN2).cases if "hello" in c.id)
    result.assert_outcomes(passed=hello, skipped=2 * hello)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["fail: nothing judged in qwen2 bos: * unsupported, other (the port said: parse_special*"]
    )
    sandbox.makeini("[pytest]\ntokconf_claim =\n    qwen2/plain\n")
    result = sandbox.runpytest(*args)
    result.assert_outcomes(passed=hello)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["PASS: * passed; coverage * cases in scope (100.00%), 1 vocab x mode"])


@pytest.mark.parametrize(
    ("behaviour", "option"), [("hang", "--tokconf-timeout"), ("hang-on-load", "--tokconf-load-timeout")]
)
def test_a_timeout_names_the_pytest_option_that_sets_it(sandbox: pytest.Pytester, behaviour: str, option: str) -> None:
    """In pytest the options are pytest's: a message naming `tokconf check`'s `--timeout` would send a
    reader to an option this run does not have."""
    program = "cmd:" + shlex.join([sys.executable, str(SUPPORT / "cmd_programs.py"), behaviour])
    args = [f"--tokconf-recordings={QWEN2}", "--tokconf-impl", program, "-k", "plain-edge-hello-world"]
    result = sandbox.runpytest(*args, option, "1")
    result.stdout.fnmatch_lines([f"*no answer within 1 s (the {option} option)*"])


def test_a_binding_dying_where_llama_cpp_aborts_passes_its_items(sandbox: pytest.Pytester) -> None:
    """In pytest as in `tokconf check`: each death where the recording holds llama.cpp's abort is a
    passed item, restarted, never a give-up (6 deaths, more than 5), and the summary says so."""
    program = "cmd:" + shlex.join([sys.executable, str(SUPPORT / "aborting_port.py"), "die"])
    recording = ROOT / "recordings" / "b11192" / "synthetic" / "variant-spm-no-byte-fallback.yaml"
    result = sandbox.runpytest(
        f"--tokconf-recordings={recording}", "--tokconf-impl", program, "-k", "noncharacters or specials", JUNIT
    )
    result.assert_outcomes(passed=6)
    assert _verdicts(sandbox, "synthetic") == {
        f"variant-spm-no-byte-fallback {mode} passed": 2 for mode in ("plain", "special", "bos")
    }
    result.stdout.fnmatch_lines(
        ["6 cases of variant-spm-no-byte-fallback abort as llama.cpp does (its process ended (restarted each time): 6)"]
    )


def test_a_fuzz_timeout_names_its_pytest_option(sandbox: pytest.Pytester, llama_build: Build, tmp_path: Path) -> None:
    program = "cmd:" + shlex.join([sys.executable, str(SUPPORT / "cmd_programs.py"), "hang"])
    result = sandbox.runpytest(
        "--tokconf-fuzz", program, "--tokconf-fuzz-vocab", "gpt-2", "--tokconf-fuzz-mode", "plain",
        "--tokconf-fuzz-examples", "2", "--tokconf-fuzz-seed", "0", "--tokconf-fuzz-database", "",
        "--tokconf-fuzz-found-dir", str(tmp_path / "found"), "--tokconf-fuzz-timeout", "1",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*no answer within 1 s (the --tokconf-fuzz-timeout option)*"])


RECORDINGS = ROOT / "recordings" / "b11192"


INTERRUPTING = """
def pytest_runtest_call(item):
    if "{victim}" in item.name:
        raise KeyboardInterrupt
"""


def test_an_interrupted_pytest_run_fails_and_skips_the_interleaving_check(sandbox: pytest.Pytester) -> None:
    """Ctrl-C (a cancelled CI job) after some items: what did not run was not judged, so the run fails,
    says why, and does not go on to the interleaving check. Not interrupted, the same run interleaves."""
    recordings = [f"--tokconf-recordings={RECORDINGS / name}.yaml" for name in ("qwen2", "gpt-2")]
    args = [*recordings, "--tokconf-impl", "zoo_ports:right", "-k", "hello", "-p", "no:randomly"]
    result = sandbox.runpytest(*args, "--tokconf-json=whole.json")
    assert result.ret == pytest.ExitCode.OK
    whole = json.loads((sandbox.path / "whole.json").read_text())
    assert "interleave" in {unit["mode"] for unit in whole["units"]}
    sandbox.makepyfile(interrupting=INTERRUPTING.format(victim="gpt-2-special"))  # `python -m pytest` finds it
    result = sandbox.runpytest_subprocess(*args, "-p", "interrupting", "--tokconf-json=cut.json")  # Ctrl-C is its own
    assert result.ret == pytest.ExitCode.INTERRUPTED
    cut = json.loads((sandbox.path / "cut.json").read_text())
    assert cut["passed"] is False and cut["reasons"][0] == "the run was interrupted"
    assert "interleave" not in {unit["mode"] for unit in cut["units"]}
