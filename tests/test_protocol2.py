"""Line protocol 2 from the program's side: declared unsupported input classes, `--strict`, and a
program that loaded another vocabulary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.check.engine import Verdict
from harness.check.run import CheckRun
from harness.cli.main import main
from harness.llama.build import Build

QWEN2 = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "qwen2.yaml"
FEW = ["--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "invalid-utf8/lone-continuation"]
FEW += ["--case", "invalid-utf8/truncated-3"]

PROGRAM = """
import base64, json, sys
from reference_impl import Tokenizer

DECLARED = {declared}
SKIP = {skip!r}  # the class this program answers for invalid UTF-8
LOADED = {loaded}  # extra fields of its load answer
tok = None
for line in sys.stdin:
    request = json.loads(line)
    answer = {{"id": request["id"]}}
    if request["op"] == "hello":
        answer.update(protocol=2, name="strings-port", vocab_types=["bpe"], unsupported=DECLARED)
    elif request["op"] == "load":
        tok = Tokenizer.from_gguf(request["path"])
        answer.update(ok=True, **LOADED)
    else:
        data = base64.b64decode(request["text_b64"])
        try:
            data.decode("utf-8")
            answer["ids"] = tok.encode(data, request["add_special"], request["parse_special"])
        except UnicodeDecodeError:
            answer["unsupported"] = SKIP
        except ValueError as error:
            answer["error"] = str(error)
    print(json.dumps(answer), flush=True)
"""


def _program(tmp_path: Path, declared: list[str], skip: str = "invalid-utf8", **loaded: object) -> str:
    path = tmp_path / "port.py"
    path.write_text(PROGRAM.format(declared=json.dumps(declared), skip=skip, loaded=json.dumps(loaded)))
    return f"cmd:{sys.executable} {path}"


def _verdicts(run: CheckRun) -> dict[Verdict, int]:
    totals = run.summary.totals()
    return {v: n for v, n in totals.items() if n}


def test_declared_unsupported_inputs_are_counted_by_class_and_never_passed(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    assert main(["check", "--impl", _program(tmp_path, ["invalid-utf8"]), *FEW]) == 0
    assert _verdicts(check_runs[-1]) == {Verdict.PASSED: 3, Verdict.UNSUPPORTED: 6}
    assert "unsupported: 6 of qwen2: invalid-utf8 (declared unsupported)" in capsys.readouterr().out
    assert main(["check", "--impl", _program(tmp_path, ["invalid-utf8"]), *FEW, "--strict"]) == 1
    assert "FAIL (--strict: 6 unsupported)" in capsys.readouterr().out


def test_an_undeclared_or_ill_fitting_unsupported_answer_fails_the_gate(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    assert main(["check", "--impl", _program(tmp_path, []), *FEW]) == 1
    assert _verdicts(check_runs[-1]) == {Verdict.PASSED: 3, Verdict.ERROR: 6}
    assert "answered unsupported ('invalid-utf8') without declaring it in the handshake (declared: none)" in (
        capsys.readouterr().out
    )
    assert main(["check", "--impl", _program(tmp_path, ["nul"], skip="nul"), *FEW]) == 1
    assert "answered unsupported (nul) for an input that is not nul" in capsys.readouterr().out


def test_a_program_that_loaded_another_vocabulary_is_one_error(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], check_runs: list[CheckRun]
) -> None:
    impl = _program(tmp_path, ["invalid-utf8"], n_tokens=32000, special_ids={"bos": 1, "eos": 151645})
    assert main(["check", "--impl", impl, "--recordings", str(QWEN2), "--mode", "plain"]) == 1
    output = capsys.readouterr().out
    assert set(_verdicts(check_runs[-1])) == {Verdict.ERROR}
    mismatch = "vocabulary mismatch: the program loaded another vocabulary than ggml-vocab-qwen2.gguf: "
    mismatch += "n_tokens 32000 (llama.cpp: 151936), bos 1 (llama.cpp: 151643)"
    assert output.count(mismatch) == 1  # told once, not once per case
    assert "errors (plain 4236), one reason: vocabulary mismatch" in output


def test_a_hello_declaring_an_unknown_class_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--impl", _program(tmp_path, ["emoji"]), *FEW]) == 2
    assert "the hello answer's `unsupported` must list input classes" in capsys.readouterr().err


def test_a_case_that_matches_nothing_fails_the_run(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped `--case` beside a right one must not leave a green gate that checked less."""
    args = ["check", "--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "edge/hello-wrold"]
    assert main(args) == 1
    assert "error: --case edge/hello-wrold matched no case of the checked recordings" in capsys.readouterr().out
