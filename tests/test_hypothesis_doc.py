"""docs/hypothesis.md's property test, run as a port author runs it: its files copied, as the doc has
them, into a test folder, beside a `mypkg` port. A port reading U+3000 as a space fails it, shrunk to
U+3000 within 1,000 examples (under a fixed seed: an unseeded run can miss it), and the shared Redis
database the doc's conftest names replays a failure first on the next run (a bug every input reaches:
hypothesis uses no database under a seed); the reference tokenizer passes it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_fuzz_redis import RedisServer
from tokconf.builds.build import Build

DOC = Path(__file__).resolve().parent.parent / "docs" / "hypothesis.md"
BUG = 'data = data.replace("\\u3000".encode(), b" ")  # reads U+3000 as an ASCII space'
PORT = '''"""A port: the reference tokenizer, its refusals as tokconf's."""
import tokconf
from tokconf_reference import Tokenizer
from tokconf_reference.errors import LlamaAborts


class Port:
    def __init__(self, path):
        self.tokenizer = Tokenizer.from_gguf(path)

    def encode(self, data, add_special, parse_special):
        {bug}
        try:
            return self.tokenizer.encode(data, add_special, parse_special)
        except LlamaAborts as why:
            raise tokconf.Refused(str(why)) from None


load = Port
'''
# hypothesis's report of the shrunk input (pytest prefixes each line with "E")
SHRUNK = re.compile(r"Failing test case: test_port_matches_llama_cpp\(\n.*\n.*\bdata=(b'.*?'),")  # a comment may follow
CASES = re.compile(r"during (\w+) phase .*?\n.*?\n\s+- (\d+) passing, (\d+) failing, and (\d+) invalid", re.S)


def documented_files() -> dict[str, str]:
    """The doc's Python blocks that open with a `# path` comment, by that path."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return {block.split("\n", 1)[0].removeprefix("# "): block for block in blocks if block.startswith("# tests/")}


def suite(sandbox: pytest.Pytester, bug: str = "") -> None:
    """The doc's files, and `mypkg`: the reference, with `bug` as the first line of its `encode`."""
    files = documented_files()
    assert sorted(files) == ["tests/conftest.py", "tests/test_matches_llama_cpp.py"]
    files["tests/mypkg.py"] = PORT.format(bug=bug)
    for name, text in files.items():
        (sandbox.path / name).parent.mkdir(exist_ok=True)
        (sandbox.path / name).write_text(text, encoding="utf-8")


# The run's seed: under hypothesis's default random seed the planted bug is found within the doc's 500
# examples almost every time, not every time (seeds 0-33 all found it, one after 378 examples; a
# fresh-clone CI run missed it once). With this seed it is found at the 16th example: the doc's claim is
# about a typical run, a test's about this one.
SEED = "--hypothesis-seed=1"
# A seeded run uses no example database, so the database is tested with a bug every input reaches (a
# port that tokenizes a space before every input): found at the first example whatever hypothesis draws.
EVERY_INPUT = 'data = b" " + data  # a space before every input'


def run(sandbox: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, tuple[int, int, int]]]:
    """One run of the copied suite: the result, and hypothesis's test cases per phase."""
    result = sandbox.runpytest_subprocess("tests", "-p", "no:cacheprovider", "--hypothesis-show-statistics", *args)
    phases = {phase: (int(p), int(f), int(i)) for phase, p, f, i in CASES.findall(result.stdout.str())}
    return result, phases


def test_a_port_reading_u3000_as_a_space_fails_shrunk_to_it(sandbox: pytest.Pytester, llama_build: Build) -> None:
    suite(sandbox, BUG)
    result, phases = run(sandbox, SEED)
    result.assert_outcomes(failed=1)
    assert SHRUNK.findall(result.stdout.str()) == ["b'\\xe3\\x80\\x80'"]  # shrunk to U+3000 alone
    assert sum(phases["generate"]) <= 1000 and phases["generate"][1] >= 1  # found while generating


def test_a_failure_is_kept_in_the_shared_redis_database_and_replayed_first(
    sandbox: pytest.Pytester, llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The doc's conftest names the database `TOKCONF_FUZZ_DATABASE` says: the next run anywhere that
    shares it replays the failure before drawing anything new."""
    suite(sandbox, EVERY_INPUT)
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis")
    monkeypatch.setenv("TOKCONF_FUZZ_DATABASE", server.url)
    try:
        result, phases = run(sandbox)
        result.assert_outcomes(failed=1)
        assert phases["generate"][1] >= 1  # found while generating
        found = SHRUNK.findall(result.stdout.str())
        assert found == ["b''"]  # every input fails: shrunk to the empty one
        assert any(key.startswith(b"hypothesis-example:") for key in server.stored())  # kept in Redis
        result, phases = run(sandbox)  # the next run, anywhere that shares the server
        result.assert_outcomes(failed=1)
        assert phases["reuse"] == (0, 1, 0) and "generate" not in phases  # replayed first, nothing new drawn
        assert SHRUNK.findall(result.stdout.str()) == found  # the shrunk failure itself
    finally:
        server.kill()


def test_the_reference_passes(sandbox: pytest.Pytester, llama_build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCONF_FUZZ_DATABASE", raising=False)
    suite(sandbox)
    result, phases = run(sandbox, SEED)
    result.assert_outcomes(passed=1)
    assert phases["generate"][:2] == (500, 0)  # the doc's max_examples, every one judged
