"""tokconf as a port author gets it: the wheel installed into a fresh venv outside this checkout,
used from a temporary folder that is the port's own repository."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from builds import fresh_venv, install, wheel
from test_hypothesis_doc import BUG, SEED, SHRUNK, documented_files
from test_hypothesis_doc import PORT as DOC_PORT
from tokconf.builds.build import Build
from tokconf.core.files import cache_root

ROOT = Path(__file__).resolve().parent.parent

PORT = """
from tokconf import Refused
from tokconf_reference import Tokenizer
from tokconf_reference.errors import LlamaAborts


class Port:
    def __init__(self, path):
        self.tok = Tokenizer.from_gguf(path)

    def encode(self, data, add_special, parse_special):
        try:
            ids = self.tok.encode(data, add_special, parse_special)
        except LlamaAborts as why:  # where llama.cpp refuses (aborts), so does the port
            raise Refused(str(why)) from None
        return [198 if i == 220 else i for i in ids] if BROKEN else ids  # the planted bug: " " becomes "\\n"


BROKEN = {broken}


def load(path):
    return Port(path)
"""

# The port's own tests, beside a package of its own named as tokconf's implementation folder is: it
# must be theirs that `import harness` finds, and tokconf must work all the same.
UNRELATED = """
import harness


def test_unrelated():
    assert harness.WHO == "the port's own harness"
"""
OWN_HARNESS = 'WHO = "the port\'s own harness"\n'
API = """
import tokconf, harness
run = tokconf.check("myport:load", vocabs=["gpt-2"], modes=["plain"])
print(harness.WHO, run.decision.passed, tokconf.vocab_path("gpt-2").name)
"""


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd), "TOKCONF_CACHE": str(cache_root())}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file with its size and time, but Python's own bytecode caches (pytest writes those)."""
    files = (p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in files}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this checkout (and pytest, as a port's CI has)."""
    return fresh_venv(tmp_path_factory.mktemp("installed") / "venv", str(wheel(tmp_path_factory)), "pytest")


def test_the_installed_wheel_gates_a_port_from_its_own_folder(venv: Path, tmp_path: Path, llama_build: Build) -> None:
    site = next((venv / "lib").glob("python3*/site-packages"))
    before = _tree(site)
    port = tmp_path / "port"
    port.mkdir()
    (port / "test_unrelated.py").write_text(UNRELATED)
    (port / "harness").mkdir()
    (port / "harness" / "__init__.py").write_text(OWN_HARNESS)
    (port / "myport.py").write_text(PORT.format(broken=False))
    args = ("--impl", "myport:load", "--vocab", "gpt-2", "--mode", "plain")

    good = _run(venv, "tokconf", "check", *args, cwd=port)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "PASS:" in good.stdout and "failed" not in good.stdout.split("PASS:")[1]

    api = _run(venv, "python", "-c", API, cwd=port)
    assert api.stdout.splitlines() == ["the port's own harness True ggml-vocab-gpt-2.gguf"], api.stderr

    unrelated = _run(venv, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=port)
    assert unrelated.returncode == 0 and "1 passed" in unrelated.stdout, unrelated.stdout + unrelated.stderr
    assert "tokconf" not in unrelated.stdout

    gated = _run(venv, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tokconf-impl", "myport:load",
                 "--tokconf-vocab", "gpt-2", "--tokconf-mode", "plain", "-k", "hello", cwd=port)  # fmt: skip
    assert gated.returncode == 0 and "tokconf conformance: myport:load" in gated.stdout, gated.stdout

    (port / "myport.py").write_text(PORT.format(broken=True))
    bad = _run(venv, "tokconf", "check", *args, cwd=port)
    assert bad.returncode == 1
    assert "gpt-2 [plain] edge/single-space: failed — different ids" in bad.stdout  # the shortest first
    assert "\nFAIL: " in bad.stdout

    fuzz = _run(venv, "tokconf", "fuzz", "--impl", "myport:load", cwd=port)  # hypothesis is an extra
    assert fuzz.returncode == 2 and "pip install 'tokconf[fuzz]'" in fuzz.stderr

    assert _tree(site) == before  # nothing written inside the installed package
    assert sorted(p.name for p in port.iterdir() if p.name != "__pycache__") == [
        "harness", "myport.py", "test_unrelated.py"
    ]  # fmt: skip


COUNTS = """
import json, sys
from pathlib import Path
from tokconf.checking.engine import Selection
from tokconf.checking.run import check_paths
from tokconf.checking.xfail import ExpectedFailures
from tokconf.core.files import BUNDLED_RECORDINGS
run = check_paths([BUNDLED_RECORDINGS / "gpt-2.yaml"], "tiktoken-gguf", Selection(), ExpectedFailures(), None, None)
print(json.dumps({mode: {v.value: n for v, n in run.summary.counts[("gpt-2", mode)].items() if n}
                  for mode in ("plain", "special", "bos")}))
"""


def test_a_peer_from_the_installed_wheel_gives_the_matrix_counts(
    venv: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`pip install 'tokconf[peers]'`, then `tokconf check --impl tiktoken-gguf --vocab gpt-2` and the
    same counts through the API, from another folder: docs/reports/ecosystem.json's cells."""
    install(venv, f"{wheel(tmp_path_factory)}[peers]")
    checked = _run(venv, "tokconf", "check", "--impl", "tiktoken-gguf", "--vocab", "gpt-2", cwd=tmp_path)
    verdict = checked.stdout.rsplit("\n", 2)[-2]  # decoding is checked too: the matrix has no column for it
    assert checked.returncode in (0, 1) and verdict.startswith(("PASS: ", "FAIL: ")), checked.stdout + checked.stderr
    counts = json.loads(_run(venv, "python", "-c", COUNTS, cwd=tmp_path).stdout)
    matrix = json.loads((ROOT / "docs" / "reports" / "ecosystem.json").read_text(encoding="utf-8"))
    published = {
        c["mode"]: c["counts"] for c in matrix["cells"] if (c["peer"], c["vocab"]) == ("tiktoken-gguf", "gpt-2")
    }
    assert counts == published


def test_the_documented_hypothesis_test_from_the_wheel_beside_a_ports_own_harness(
    venv: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, llama_build: Build
) -> None:
    """docs/hypothesis.md's test, copied into a port's folder that has a `harness/` package of its own,
    run by the venv's pytest with `tokconf[fuzz]` from the wheel: a port reading U+3000 as a space
    fails, shrunk to U+3000; the reference passes."""
    install(venv, f"{wheel(tmp_path_factory)}[fuzz]")
    for bug, outcome in ((BUG, "1 failed"), ("", "1 passed")):
        port = tmp_path / ("buggy" if bug else "reference")
        (port / "harness").mkdir(parents=True)
        (port / "harness" / "__init__.py").write_text(OWN_HARNESS)
        files = documented_files() | {"tests/mypkg.py": DOC_PORT.format(bug=bug)}
        for name, text in files.items():
            (port / name).parent.mkdir(exist_ok=True)
            (port / name).write_text(text, encoding="utf-8")
        ran = _run(venv, "python", "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", SEED, cwd=port)
        assert outcome in ran.stdout.splitlines()[-1], ran.stdout + ran.stderr
        assert SHRUNK.findall(ran.stdout) == (["b'\\xe3\\x80\\x80'"] if bug else [])
