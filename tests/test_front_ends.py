"""Every front end of a check is an adapter to one `CheckSession` (`tokconf.checking.session`), which
decides: one failing port through `tokconf check --json`, `tokconf.check()` and the pytest plugin over
two xdist workers (`--tokconf-json`, the controller deciding on what the workers reported) gets one
verdict document, counts, interleaving check and reasons included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tokconf
import tokconf_reference.tokenizer  # noqa: F401  # loaded before pytester's first in-process run (see `sandbox`)
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.reporting.verdict_json import verdict_document

SYNTHETIC = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "synthetic"
RECORDINGS = [SYNTHETIC / "pre-qwen2.yaml", SYNTHETIC / "pre-falcon.yaml"]
PORT = "fake_impls:normalizes_nfc"  # NFC before tokenizing: wrong on text NFC changes


def test_one_failing_port_gets_one_verdict_from_the_cli_the_api_and_the_plugin(
    sandbox: pytest.Pytester, llama_build: Build, tmp_path: Path
) -> None:
    given = [arg for path in RECORDINGS for arg in ("--recordings", str(path))]
    status = main(["check", "--impl", PORT, *given, "--mode", "plain", "--json", str(tmp_path / "cli.json")])
    cli = json.loads((tmp_path / "cli.json").read_text())

    run = tokconf.check(PORT, recordings=RECORDINGS, modes=["plain"])
    api = json.loads(json.dumps(verdict_document(run.decision, run.summary, run.impl_name)))

    result = sandbox.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tokconf-impl", PORT, *[f"--tokconf-recordings={path}" for path in RECORDINGS],
        "--tokconf-mode", "plain", "-n", "2", "--dist", "loadgroup", "--tokconf-json", str(tmp_path / "plugin.json"),
    )  # fmt: skip
    plugin = json.loads((tmp_path / "plugin.json").read_text())

    assert cli == api == plugin
    assert status == cli["exit_status"] == result.ret == 1 and not cli["passed"]
    failed = {unit["vocab"]: unit["counts"]["failed"] for unit in cli["units"] if unit["mode"] == "plain"}
    assert failed == {"pre-qwen2": 159, "pre-falcon": 159}  # as tests/test_plugin.py's explain test counts
    assert {unit["mode"] for unit in cli["units"]} == {"plain", "facts", "interleave"}  # facts with a mode too
    interleaved = [unit for unit in cli["units"] if unit["mode"] == "interleave"]
    assert len(interleaved) == 2 and all(unit["counts"]["passed"] for unit in interleaved)
    assert cli["verdict_line"].startswith("FAIL")
