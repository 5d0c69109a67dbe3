"""Around `--explain`'s causes (issue 48, part 4): a port slow on long inputs keeps its vocabulary (each
timeout that case's error, naming `--timeout`), failed facts reach the terminal whatever the details
budget, and `tokconf vocab list` names every vocabulary with its tokenizer model and pre name."""

from __future__ import annotations

import sys
from pathlib import Path

import checked
import pytest
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.cli.main import main
from tokconf.recording.format import recording_files

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
LONG = ["code/python", "code/python-gguf-reader", "code/cpp", "code/c-header", "code/javascript",
        "code/javascript-minified"]  # fmt: skip  # qwen2's first six cases of 1,024 bytes or more
SHORT = ["contractions/mixed-case", "contractions/alone", "contractions/alone-upper"]


def test_a_port_slow_on_long_inputs_is_not_given_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Six long inputs time out (a WordPiece cubic in a word's length): each is that case's error,
    saying it is slowness and which option gives it longer; the short ones are still answered."""
    program = tmp_path / "slow.py"
    program.write_text(
        "import base64, json, sys, time\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r['op'] == 'hello': out = {'vocab_types': ['bpe']}\n"
        "    elif r['op'] == 'load': out = {'ok': True}\n"
        "    else:\n"
        "        if len(base64.b64decode(r['text_b64'])) >= 1024: time.sleep(60)\n"
        "        out = {'ids': [0]}\n"
        "    print(json.dumps({'id': r['id'], **out}), flush=True)\n"
    )
    cases = [arg for case in [*LONG, *SHORT] for arg in ("--case", case)]
    args = ["--impl", f"cmd:{sys.executable} {program}", "--recordings", str(QWEN2), "--mode", "plain"]
    done = checked.check(capsys, *args, *cases, "--timeout", "2", "--details", "0")
    assert done.status == 1
    results = done.section("plain")
    assert {results[c].verdict for c in SHORT} == {Verdict.FAILED}  # answered: [0] is not qwen2's ids
    for case in LONG:
        assert results[case].verdict is Verdict.ERROR
        assert "slow there, not broken" in results[case].reason and "--timeout" in results[case].reason
    assert not any("given up" in r.reason for r in results.values())


def test_failed_facts_are_shown_whatever_the_details_budget(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--recordings", str(ROOT / "recordings" / "b11192" / "gpt-2.yaml"), "--impl"]
    assert main([*args, "fake_impls:wrong_bos", "--details", "0"]) == 1
    output = capsys.readouterr().out
    assert "[facts]" in output and "bos" in output.split("[facts]", 1)[1].splitlines()[0]


def test_vocab_list_names_every_vocabulary_with_its_model_and_pre(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vocab", "list"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    bundled = recording_files([ROOT / "recordings" / "b11192"])
    assert len(rows) == len(bundled) > 100
    by_name = {row[0]: row[1:] for row in rows}
    assert by_name["gpt-2"] == ["gpt2", "gpt-2"] and by_name["llama-spm"] == ["llama", "default"]
    assert by_name["bert-bge"] == ["bert", "bert-bge"]
