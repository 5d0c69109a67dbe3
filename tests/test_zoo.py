"""Every front end judges alike: one zoo of ports (tests/support/zoo_ports.py) through `tokconf check` (worker
processes), `--jobs 2`, `--in-process`, as a `cmd:` program of protocol 2 and of protocol 1, and
through the pytest plugin without and with xdist. Each port's verdict line, which holds every
count, the coverage and the declines granted, its `--json` verdict and its exit status must be the
same on every front end, and the one the verdict contract gives it.

The recordings are small slices of bundled ones (their cases and llama.cpp's answers as recorded):
gpt-2, and `pre-glm5`, a vocabulary llama.cpp b11192 refuses to load.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

# Imported before pytester snapshots `sys.modules`, which it restores after each test: a module first
# imported inside a test (numpy, if a port's imports bring it) cannot be loaded a second time.
import tokconf
import zoo_ports  # noqa: F401
from tokconf.cli.main import main
from tokconf.core.files import cache_root
from tokconf.core.outcome import MODES
from tokconf.recording.format import Recording, load, write

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = Path(__file__).resolve().parent / "support"  # zoo_ports, protocol1_adapter
B11192 = ROOT / "recordings" / "b11192"
CACHE = cache_root()

# Which cases of gpt-2 the slice keeps: plain text, an "e"-free one, llama.cpp's own refusal (a code
# point above U+10FFFF), invalid UTF-8, the special token's text, and one input over 1,024 bytes (1,062:
# 79% of the slice's bytes).
KEEP = re.compile(
    r"edge/|invalid-utf8/(lone-continuation|above-max-f4-90)$|vocab/50256-(alone|nl-after)$|controls/nul$"
    r"|multilingual/vietnamese$"
)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("zoo")
    gpt2 = load(B11192 / "gpt-2.yaml")
    cases = [c for c in gpt2.cases if KEEP.search(c.id)]
    write(folder / "gpt-2.yaml", Recording(gpt2.provenance, gpt2.facts, cases))
    glm5 = load(B11192 / "synthetic" / "pre-glm5.yaml")
    write(folder / "pre-glm5.yaml", Recording(glm5.provenance, glm5.facts, glm5.cases[:6]))
    return folder


NOT_GRANTED = re.escape(": declines not granted (--allow-decline): ")
# port -> (exit status, what the verdict line must say); the contract, case by case
ZOO: dict[str, tuple[int, str]] = {
    "right": (0, "PASS: "),
    "wrong": (1, "FAIL: .* failed"),
    "raising": (1, "FAIL: .* error"),
    "refuses_everything": (1, "FAIL: .* failed"),
    "declines_every_input": (1, "nothing judged in gpt-2 (bos|plain|special): .*no input at all"),
    "only_the_empty_input": (1, "gpt-2 (bos|plain|special): 1 of \\d+ cases passed"),
    # granted by default: in each mode two inputs are not UTF-8, one holds NUL
    "declines_invalid_utf8": (0, "PASS: .* unsupported; .*; granted declines: invalid-utf8 6, nul 3$"),
    # declines a class no command grants by default: each decline counts against coverage, named with its
    # class (and too-long with its share of the unit's bytes: 1,062 of 1,337)
    "declines_long_inputs": (1, f"gpt-2 (bos|plain|special): 21 of 22 cases passed .*{NOT_GRANTED}too-long 1 \\(79%"),
    "parses_special_everywhere": (1, f"gpt-2 plain: 20 of 22 cases passed .*{NOT_GRANTED}special-text 2$"),
    "declines_digits": (1, "gpt-2 (bos|plain|special): \\d+ of \\d+ cases passed .*below the 100% a claim needs"),
    "declines_newlines": (1, "gpt-2 (bos|plain|special): \\d+ of \\d+ cases passed .*below the 100% a claim needs"),
    "lies_about_its_class": (1, "FAIL: .* error"),
    "declines_parse_special": (1, "nothing judged in gpt-2 (bos|special): .*parse_special is not implemented"),
    "printing": (0, "PASS: "),
    "facts_of_the_wrong_type": (1, "FAIL: \\d+ passed, 6 error"),  # every fact (`Fact`: 6)
    "crashing_at_load": (1, "FAIL: .* error"),
    "declining_every_vocab": (1, "nothing in scope: the implementation declined every vocabulary"),
    "floods": (1, "FAIL: \\d+ passed, 66 error; coverage 0/66 "),  # 200,000 ids an input (22 cases x 3): live.bound
}
# Protocol 1 has no facts, no declared classes and no `fault`: the ports it can carry unchanged.
PROTOCOL_1 = ("right", "wrong", "refuses_everything")
# pytest-xdist costs about 7 s a session on these machines: the ports whose verdict the controller
# makes from several workers' items (coverage, nothing judged, facts, nothing in scope, declines and their
# bytes not granted) and a passing one.
XDIST = ("right", "declines_every_input", "only_the_empty_input", "facts_of_the_wrong_type", "declining_every_vocab",
         "declines_long_inputs", "parses_special_everywhere")  # fmt: skip
# What every front end's `--json` verdict must hold alike (`implementation` names the front end's form of it,
# `contained` is False in process).
SAME = ("passed", "exit_status", "verdict_line", "reasons", "totals", "scope", "grants", "units")

VERDICT_LINE = re.compile(r"^(?:PASS|FAIL): .*$", re.M)
NOT_CONTAINED = "; NOT CONTAINED: the implementation ran in tokconf's process (--in-process)"


def _verdict_line(output: str) -> str:
    lines = VERDICT_LINE.findall(output)
    assert lines, output[-3000:]
    return str(lines[-1])


def _cli(capsys: pytest.CaptureFixture[str], recordings: Path, impl: str, *extra: str) -> tuple[int, str]:
    status = main(["check", "--impl", impl, "--recordings", str(recordings), *extra])
    return status, _verdict_line(capsys.readouterr().out)


Judged = tuple[int, str, dict[str, object]]  # exit status, verdict line, the --json verdict's SAME fields


def _verdict(path: Path) -> dict[str, object]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return {key: document[key] for key in SAME}


def _judged(capsys: pytest.CaptureFixture[str], recordings: Path, impl: str, *extra: str) -> Judged:
    """`tokconf check`, with its `--json` verdict."""
    verdict = recordings.parent / "verdict.json"
    status, line = _cli(capsys, recordings, impl, "--json", str(verdict), *extra)
    return status, line, _verdict(verdict)


def _pytest_judged(pytester: pytest.Pytester, *args: str, inprocess: bool = True) -> Judged:
    """The pytest plugin, with its `--tokconf-json` verdict."""
    verdict = pytester.path / "verdict.json"
    run = pytester.runpytest_inprocess if inprocess else pytester.runpytest_subprocess
    result = run("-p", "no:cacheprovider", "--tokconf-json", str(verdict), *args)
    return result.ret, _verdict_line(result.stdout.str()), _verdict(verdict)


@pytest.fixture
def zoo_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The zoo's module importable here and in every worker or program a front end starts, and
    tokconf's cache where it is (pytester moves HOME)."""
    monkeypatch.setenv("TOKCONF_CACHE", str(CACHE))
    monkeypatch.syspath_prepend(str(SUPPORT))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(SUPPORT), os.environ.get("PYTHONPATH")])))


def _contract_verdict(capsys: pytest.CaptureFixture[str], recordings: Path, port: str) -> Judged:
    """`tokconf check` on a zoo port, held to the verdict the contract gives it (`ZOO`)."""
    status, line, verdict = _judged(capsys, recordings, f"zoo_ports:{port}")
    want_status, pattern = ZOO[port]
    assert status == want_status, line
    assert re.search(pattern, line) or re.search(pattern, capsys.readouterr().out), line
    assert verdict["verdict_line"] == line and verdict["exit_status"] == status
    return status, line, verdict


@pytest.mark.usefixtures("zoo_path")
@pytest.mark.parametrize("port", sorted(ZOO))
def test_each_port_gets_the_verdict_of_the_contract(
    port: str, recordings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tokconf check`: the exit status, the verdict line and its `--json` verdict the contract gives
    the port (every other front end is held to the same in the conformance proof below)."""
    _contract_verdict(capsys, recordings, port)


@pytest.mark.conformance
@pytest.mark.usefixtures("zoo_path")
@pytest.mark.parametrize("port", sorted(ZOO))
def test_every_front_end_gives_a_port_the_same_verdict(
    port: str,
    recordings: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
) -> None:
    impl = f"zoo_ports:{port}"
    status, line, verdict = _contract_verdict(capsys, recordings, port)
    worker = f"cmd:{sys.executable} -m tokconf.implementations.command_worker {impl}"
    front_ends = {
        "--timeout": _judged(capsys, recordings, impl, "--timeout", "30"),
        "--jobs 2": _judged(capsys, recordings, impl, "--jobs", "2"),
        "cmd: protocol 2": _judged(capsys, recordings, worker),
    }
    status_in_process, line_in_process, in_process = _judged(capsys, recordings, impl, "--in-process")
    assert NOT_CONTAINED in line_in_process  # the same verdict, said to be of a run the port could have changed
    assert (status_in_process, line_in_process.replace(NOT_CONTAINED, "")) == (status, line)
    assert in_process | {"verdict_line": line} == verdict
    if port in PROTOCOL_1:  # the same counts in every mode, and the same exit status
        adapter = f"cmd:{sys.executable} {SUPPORT / 'protocol1_adapter.py'} {impl}"
        status_1, _, verdict_1 = _judged(capsys, recordings, adapter)
        assert status_1 == status and _modes(verdict_1) == _modes(verdict)
    args = ["--tokconf-impl", impl, "--tokconf-recordings", str(recordings)]
    front_ends["pytest"] = _pytest_judged(pytester, *args)
    if port in XDIST:
        front_ends["pytest -n 2"] = _pytest_judged(pytester, *args, "-n", "2", "--dist", "loadgroup", inprocess=False)
    assert front_ends == dict.fromkeys(front_ends, (status, line, verdict))


# The two probes of issue 46 and the class each needs granted; which of gpt-2's cases it declines, in which modes.
GRANTED = {
    "declines_long_inputs": ("too-long", lambda data: len(data) > 1024, tuple(MODES)),
    "parses_special_everywhere": ("special-text", lambda data: b"<|endoftext|>" in data, ("plain",)),
}


@pytest.mark.conformance
@pytest.mark.usefixtures("zoo_path")
@pytest.mark.parametrize("port", sorted(GRANTED))
def test_a_probe_passes_only_where_the_command_grants_its_class(
    port: str, recordings: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port declining long inputs (`max_input_bytes = 1024`) or plain-mode special texts fails by
    default (test_every_front_end_gives_a_port_the_same_verdict), through `tokconf.check()` too, and
    under a grant of another class; it passes when the command grants its class: `tokconf check
    --allow-decline` (repeatable, comma lists), `tokconf.check(allow_decline=...)`, pytest's
    `--tokconf-allow-decline` and `tokconf_allow_decline` ini key, every one with the same verdict line
    and JSON, listing the grant with its count (too-long with its share of the recorded bytes)."""
    impl = f"zoo_ports:{port}"
    name, fits, modes = GRANTED[port]
    gpt2 = load(recordings / "gpt-2.yaml").cases
    size = sum(len(case.data) for case in gpt2)  # every mode's unit holds every case
    declined = [len(case.data) for case in gpt2 if fits(case.data)]
    assert declined, "the slice must hold inputs of the class"
    share = sum(declined) / size
    shown = f"{name} {len(declined) * len(modes)}" + f" ({round(100 * share)}% of the bytes)" * (name == "too-long")

    default = tokconf.check(impl, recordings)
    assert not default.decision.passed and "declines not granted (--allow-decline): " + name in default.decision.line()
    assert not tokconf.check(impl, recordings, allow_decline="invalid-utf8,nul").decision.passed
    other = "special-text" if name == "too-long" else "too-long"
    status, line = _cli(capsys, recordings, impl, "--allow-decline", other)
    assert status == 1 and f"declines not granted (--allow-decline): {name}" in line

    grant = ["--allow-decline", "invalid-utf8,nul", "--allow-decline", name]  # repeatable, each a comma list
    status, line, verdict = _judged(capsys, recordings, impl, *grant)
    assert status == 0 and line.startswith("PASS: ") and line.endswith(f"; granted declines: {shown}"), line
    nothing = {"cases": 0, "bytes": 0, "share_of_bytes": 0.0}
    made = {
        "cases": len(declined) * len(modes),
        "bytes": sum(declined) * len(modes),
        "share_of_bytes": sum(declined) * len(modes) / (size * len(MODES)),
    }  # of the scope's bytes: every mode's
    assert verdict["grants"] == {"invalid-utf8": nothing, "nul": nothing, name: made}
    units = {unit["mode"]: unit for unit in verdict["units"] if unit["vocab"] == "gpt-2"}  # type: ignore[attr-defined]
    for mode in MODES:
        unit = units[mode]
        assert unit["bytes"] == size and unit["coverage"] == 1.0
        if mode in modes:
            one = {"cases": len(declined), "bytes": sum(declined), "share_of_bytes": share, "granted": True}
            assert unit["declined"] == {name: one} and unit["granted"] == len(declined)
        else:
            assert unit["declined"] == {} and unit["granted"] == 0

    run = tokconf.check(impl, recordings, allow_decline=[tokconf.InputClass.INVALID_UTF8, "nul", name])
    assert (run.decision.exit_status, run.decision.line()) == (status, line)
    worker = f"cmd:{sys.executable} -m tokconf.implementations.command_worker {impl}"
    args = ["--tokconf-impl", impl, "--tokconf-recordings", str(recordings)]
    front_ends = {
        "--jobs 2": _judged(capsys, recordings, impl, "--allow-decline", f"invalid-utf8,nul,{name}", "--jobs", "2"),
        "cmd: protocol 2": _judged(capsys, recordings, worker, "--allow-decline", f"nul,invalid-utf8,{name}"),
        "pytest": _pytest_judged(pytester, *args, "--tokconf-allow-decline", f"invalid-utf8,nul,{name}"),
    }
    pytester.makeini(f"[pytest]\ntokconf_allow_decline =\n    invalid-utf8,nul\n    {name}\n")
    front_ends["pytest, ini key"] = _pytest_judged(pytester, *args)
    assert front_ends == dict.fromkeys(front_ends, (status, line, verdict))


@pytest.mark.usefixtures("zoo_path")
def test_allow_decline_none_grants_nothing_and_only_grantable_classes_are_granted(
    recordings: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--allow-decline none` counts even the declines of invalid UTF-8 and NUL; a mode class or `other`
    is no grant but a usage error naming the option that does its job, in every front end."""
    impl = "zoo_ports:declines_invalid_utf8"
    status, line = _cli(capsys, recordings, impl, "--allow-decline", "none")
    assert status == 1 and "declines not granted (--allow-decline): invalid-utf8 2, nul 1" in line, line
    assert not tokconf.check(impl, recordings, allow_decline=()).decision.passed
    assert not tokconf.check(impl, recordings, allow_decline="none").decision.passed
    for value, said in [("parse-special", "(--claim)"), ("other", "--min-coverage"), ("utf8", "not a class")]:
        with pytest.raises(SystemExit):
            main(["check", "--impl", impl, "--recordings", str(recordings), "--allow-decline", f"nul,{value}"])
        assert said in capsys.readouterr().err
        with pytest.raises(tokconf.TokconfError, match=re.escape(said)):
            tokconf.check(impl, recordings, allow_decline=["nul", value])
        pytester.makeini(f"[pytest]\ntokconf_allow_decline = {value}\n")
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--tokconf-impl", impl)
        assert result.ret == pytest.ExitCode.USAGE_ERROR and said in result.stderr.str()


def _modes(verdict: dict[str, object]) -> dict[tuple[str, str], dict[str, int]]:
    """Every mode's counts in a `--json` verdict (facts and decode left out)."""
    units = verdict["units"]
    assert isinstance(units, list)
    return {(u["vocab"], u["mode"]): u["counts"] for u in units if u["mode"] in MODES}


@pytest.mark.usefixtures("zoo_path")
def test_a_claim_narrows_the_scope_and_must_be_covered(recordings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impl = "zoo_ports:declines_parse_special"
    assert _cli(capsys, recordings, impl, "--claim", "gpt-2/plain")[0] == 0
    status, line = _cli(capsys, recordings, impl, "--claim", "gpt-2/*")
    assert status == 1 and "nothing judged in gpt-2 bos" in capsys.readouterr().out + line
    status, line = _cli(capsys, recordings, "zoo_ports:declining_every_vocab", "--claim", "gpt-2/plain")
    assert status == 1 and "gpt-2 plain is claimed, but the implementation declined it" in line
    assert main(["check", "--impl", "zoo_ports:right", "--recordings", str(recordings), "--claim", "gtp-2/*"]) == 2
    assert "no recording matches --claim gtp-2/*" in capsys.readouterr().err


@pytest.mark.usefixtures("zoo_path")
def test_the_refused_vocabulary_alone_never_passes(recordings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both sides refusing pre-glm5 is agreement, but not coverage: alone, it is nothing in scope."""
    status, line = _cli(capsys, recordings, "zoo_ports:right", "--vocab", "pre-glm5")
    assert status == 1 and "nothing in scope" in line
    assert re.match(r"FAIL: 18 passed;", line), line


@pytest.mark.usefixtures("zoo_path")
def test_min_coverage_is_the_share_each_unit_must_pass(recordings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Verified declines (not UTF-8, NUL) never count; unverified ones (declines_digits's) do, unless
    `--min-coverage` loosens the share explicitly; `--strict` fails any decline at all."""
    assert _cli(capsys, recordings, "zoo_ports:declines_invalid_utf8")[0] == 0
    assert _cli(capsys, recordings, "zoo_ports:declines_invalid_utf8", "--strict")[0] == 1
    status, line = _cli(capsys, recordings, "zoo_ports:declines_digits")
    assert status == 1 and "below the 100% a claim needs" in capsys.readouterr().out + line
    assert _cli(capsys, recordings, "zoo_ports:declines_digits", "--min-coverage", "50")[0] == 0
    with pytest.raises(SystemExit):
        main(["check", "--min-coverage", "101"])
    assert "must be from 0 to 100" in capsys.readouterr().err


@pytest.fixture(scope="module")
def two_vocabs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Slices of two vocabularies a port loads: gpt-2's and llama-bpe's."""
    folder = tmp_path_factory.mktemp("two-vocabs")
    for name in ("gpt-2", "llama-bpe"):
        whole = load(B11192 / f"{name}.yaml")
        write(
            folder / f"{name}.yaml",
            Recording(whole.provenance, whole.facts, [c for c in whole.cases if KEEP.search(c.id)]),
        )
    return folder


# port -> the vocabularies whose interleaving row fails: the first loaded kept for the process fails the
# second; a module-global of the last loaded fails the first; a cache keyed by the text fails both,
# each asked some shared texts after the other
STATEFUL = {"stateful": {"llama-bpe"}, "module_global": {"gpt-2"}, "text_keyed_cache": {"gpt-2", "llama-bpe"}}


def _stateful_fails(capsys: pytest.CaptureFixture[str], two_vocabs: Path, port: str) -> tuple[int, str]:
    """`tokconf check` on a port with state: FAIL, by the interleaving rows of `STATEFUL` alone."""
    status, line, verdict = _judged(capsys, two_vocabs, f"zoo_ports:{port}")
    assert status == 1 and re.match(r"FAIL: \d+ passed, \d+ failed;", line), line
    units = verdict["units"]
    assert isinstance(units, list)
    failed = {(u["vocab"], u["mode"]) for u in units if u["counts"]["failed"]}
    assert failed == {(vocab, "interleave") for vocab in STATEFUL[port]}
    return status, line


@pytest.mark.usefixtures("zoo_path")
@pytest.mark.parametrize("port", sorted(STATEFUL))
def test_a_port_keeping_state_across_vocabularies_fails_by_the_interleaving_check(
    port: str, two_vocabs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each vocabulary in a fresh process of the port, then the interleaving check in one: a port with
    state across vocabularies fails, by that check's row alone. In tokconf's own process (`--in-process`)
    the vocabularies share it from the start, so the port fails there too, with more. The same check
    is passed by a port without state."""
    _stateful_fails(capsys, two_vocabs, port)
    in_process, line_in_process = _cli(capsys, two_vocabs, f"zoo_ports:{port}", "--in-process")
    assert in_process == 1 and NOT_CONTAINED in line_in_process
    assert _cli(capsys, two_vocabs, "zoo_ports:right")[0] == 0


@pytest.mark.conformance
@pytest.mark.usefixtures("zoo_path")
@pytest.mark.parametrize("port", sorted(STATEFUL))
def test_a_port_keeping_state_across_vocabularies_fails_alike_in_every_front_end(
    port: str,
    two_vocabs: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same counts and exit status whatever the scheduling. A protocol 1 program holds one
    vocabulary at a time: the first-loaded and the cache fail it too; the module-global cannot
    (docs/threat-model.md)."""
    impl = f"zoo_ports:{port}"
    status, line = _stateful_fails(capsys, two_vocabs, port)
    worker = f"cmd:{sys.executable} -m tokconf.implementations.command_worker {impl}"
    args = ["-p", "no:cacheprovider", "--tokconf-impl", impl, "--tokconf-recordings", str(two_vocabs)]
    plain = pytester.runpytest_inprocess(*args)
    distributed = pytester.runpytest_subprocess(*args, "-n", "2", "--dist", "loadgroup")
    front_ends = {
        "--timeout": _cli(capsys, two_vocabs, impl, "--timeout", "30"),
        "--jobs 2": _cli(capsys, two_vocabs, impl, "--jobs", "2"),
        "cmd: protocol 2": _cli(capsys, two_vocabs, worker),
        "pytest": (plain.ret, _verdict_line(plain.stdout.str())),
        "pytest -n 2": (distributed.ret, _verdict_line(distributed.stdout.str())),
    }
    assert front_ends == dict.fromkeys(front_ends, (status, line))
    if port != "module_global":
        adapter = f"cmd:{sys.executable} {SUPPORT / 'protocol1_adapter.py'} {impl}"
        assert _cli(capsys, two_vocabs, adapter)[0] == 1
