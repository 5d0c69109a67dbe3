"""Implementations that try to end the run green: every way ends in a failing verdict or an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.main import main
from harness.llama.build import Build

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
FEW = ["--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "edge/empty"]

EXITING = """
import sys
from reference_impl import Tokenizer

WHERE = {where!r}
if WHERE == "import":
    sys.exit(0)


class Port:
    def __init__(self, path):
        self.tok = Tokenizer.from_gguf(path)

    def encode(self, data, add_special, parse_special):
        if WHERE == "encode":
            sys.exit(0)
        return self.tok.encode(data, add_special, parse_special)


def load(path):
    if WHERE == "factory":
        sys.exit(0)
    return Port(path)
"""


@pytest.mark.parametrize(
    ("where", "status", "message"),
    [
        ("import", 2, "importing exiting_import failed: SystemExit: 0"),
        ("factory", 1, "error — tokconf-test called sys.exit(0) loading ggml-vocab-qwen2.gguf"),
        ("encode", 1, "error — encode called sys.exit(0)"),
    ],
)
def test_an_implementation_calling_sys_exit_never_passes(
    where: str, status: int, message: str, llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    (tmp_path / f"exiting_{where}.py").write_text(EXITING.format(where=where))
    monkeypatch.syspath_prepend(str(tmp_path))
    impl = f"exiting_{where}:load"
    assert main(["check", "--impl", impl, *FEW]) == status
    output = capsys.readouterr()
    assert message.replace("tokconf-test", impl) in output.out + output.err
    assert "PASS" not in output.out


def test_ids_that_are_not_ints_are_errors(llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    (tmp_path / "floats.py").write_text(
        "from reference_impl import Tokenizer\n"
        "class Port:\n"
        "    def __init__(self, path):\n        self.tok = Tokenizer.from_gguf(path)\n"
        "    def encode(self, data, a, p):\n        return [float(i) for i in self.tok.encode(data, a, p)]\n"
        "def load(path):\n    return Port(path)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "--impl", "floats:load", *FEW, "--mode", "plain"]) == 1
    assert "error — encode returned something other than ints: [9707.0, 1879.0]" in capsys.readouterr().out
