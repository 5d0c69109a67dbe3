"""Every `tokconf …` command line in README.md and docs/ci.md runs, and exits as the doc implies.

Which lines are commands. In a fenced code block, a line is read after its indentation and one of the
prefixes `$ `, `- run: ` or `run: ` (a shell prompt, a CI step); a line ending in `\\` goes on with the
next line, and a YAML folded step (`run: >`) is its more-indented lines joined by spaces. If what is
left starts with `tokconf `, it is a command: split as a shell would (`shlex`), a `#` comment dropped.
Anything else (`pytest …`, `go build …`, a Python block) is not run here.

Where a command runs. docs/ci.md is a port's CI, so all its commands run from the wheel installed into
a fresh venv (built once per session, from a copy of this checkout's package files), as do README
blocks marked `<!-- doc-commands: wheel -->` on the line before the fence. Other README commands run
with this checkout's `tokconf` (the environment running the tests), from a folder where `recordings`
and `examples` are this repository's, as "from this repository's folder" says. Each command gets a
folder of its own, with what it names supplied by `SUPPLIED`: the port `mypkg.tok:load` (the reference
tokenizer behind a port's own module, on `PYTHONPATH`), the example adapters built as the docs build
them (`adapter.mjs`, `./tokconf-go-adapter`, `out/` with the Java classes, `./target/release/…`).

What the doc implies: exit status 0 for every command (a check that passes, a diff without
`--exit-code`), unless `STATUS` says otherwise. A command this test cannot run is in `NOT_RUN`, with
why; `REWRITTEN` lists each argument replaced before a run, with why. Both must name only what the
docs hold, so neither can go stale.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from builds import build_go, build_java, build_rust, fresh_venv, once, wheel
from tokconf.builds.build import Build
from tokconf.core.files import cache_root

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs/ci.md")
WHEEL_MARK = "<!-- doc-commands: wheel -->"
CHECKOUT_TOKCONF = Path(sys.executable).parent / "tokconf"  # this checkout, installed editable

NOT_RUN = {
    "tokconf bisect --good 9093 --bad 11192 --vocab bert-bge": (
        "builds and probes about 10 llama.cpp builds (30 minutes on 2 cores); tests/test_bisect.py runs the "
        "same command over fake builds"
    ),
}
# An argument replaced before the run: (the doc's, the run's) -> why.
# `{libllama}` is the pinned build's library.
REWRITTEN = {
    ("llama.cpp@11434", "llama.cpp@11192"): (
        "another build costs a 3-minute compile; the pinned build takes the same path and gives the same "
        "gpt-2 answers (docs/reports/upgrade-b11192-b11434.md: no shipped vocabulary changed)"
    ),
    ("llama.cpp:../llama.cpp/build/bin/libllama.so", "llama.cpp:{libllama}"): (
        "the reader's own build is not here; the pinned build's libllama.so is one, in a cmake build folder as "
        "the doc's is (a source tree would be built again: docs/llama-local.md, tests of tokconf.builds.local)"
    ),
}
# A command the doc says fails, with its exit status.
STATUS = {"tokconf check --impl tiktoken-gguf --vocab gpt-2": 1}

PORT = '''"""A port as its author writes it: here the reference tokenizer, under tokconf's contract."""
from tokconf_reference import Tokenizer
from tokconf_reference.errors import LlamaAborts
from tokconf import Refused


class Port:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, data, add_special, parse_special):
        try:
            return self.tokenizer.encode(data, add_special, parse_special)
        except LlamaAborts as why:  # where llama.cpp refuses (aborts), so does the port
            raise Refused(str(why)) from None

    def __getattr__(self, name):  # facts and decoding: the tokenizer's own
        return getattr(self.tokenizer, name)


def load(path):
    return Port(Tokenizer.from_gguf(path))
'''


@dataclass(frozen=True)
class Command:
    doc: str
    line: int
    text: str  # as the doc has it, continuations joined, without its comment
    wheel: bool  # run from the installed wheel

    def argv(self, libllama: Path | None = None) -> list[str]:
        """The command as run: each `REWRITTEN` argument replaced."""
        args = shlex.split(self.text)
        for old, new in REWRITTEN:
            args = [new.format(libllama=libllama) if a == old else a for a in args]
        return args

    @property
    def needs_llama(self) -> bool:
        """The pinned llama.cpp build: the live oracle, or llama.cpp as the implementation."""
        args = shlex.split(self.text)
        return args[1] in ("record", "fuzz", "bisect") or any(a.startswith("llama.cpp") for a in args)

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def _logical_lines(block: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """(line number, text) of each logical line: `\\` continuations and YAML folded steps joined."""
    i = 0
    while i < len(block):
        number, line = block[i]
        stripped = line.strip()
        if re.fullmatch(r"(- )?run: >-?", stripped):
            indent = len(line) - len(line.lstrip())
            parts = []
            i += 1
            while i < len(block) and (not block[i][1].strip() or len(block[i][1]) - len(block[i][1].lstrip()) > indent):
                parts.append(block[i][1].strip())
                i += 1
            yield number, " ".join(p for p in parts if p)
            continue
        text = stripped
        while text.endswith("\\") and i + 1 < len(block):
            i += 1
            text = text[:-1].rstrip() + " " + block[i][1].strip()
        yield number, text
        i += 1


def doc_commands(doc: str) -> list[Command]:
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    commands: list[Command] = []
    block: list[tuple[int, str]] | None = None
    wheel = False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            if block is None:
                previous = next((lines[n].strip() for n in range(number - 2, -1, -1) if lines[n].strip()), "")
                block, wheel = [], doc == "docs/ci.md" or previous == WHEEL_MARK
                continue
            for start, text in _logical_lines(block):
                for prefix in ("$ ", "- run: ", "run: "):
                    text = text.removeprefix(prefix)
                if text.startswith("tokconf "):
                    words = shlex.split(text, comments=True)
                    commands.append(Command(doc, start, shlex.join(words), wheel))
            block = None
        elif block is not None:
            block.append((number, line))
    return commands


COMMANDS = [command for doc in DOCS for command in doc_commands(doc)]


@pytest.fixture(scope="session")
def wheel_tokconf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into a fresh venv, once per session (the venv shared by every command)."""

    def make(folder: Path) -> None:
        fresh_venv(folder / "venv", str(wheel(tmp_path_factory)))

    return once(tmp_path_factory, "docs-venv", make) / "venv" / "bin" / "tokconf"


# What a command names, and how the test supplies it: (a word of the command, what appears in the
# command's folder, how it is made once per session).
SUPPLIED: list[tuple[str, str, Callable[[Path], None] | None]] = [
    ("mypkg.tok:load", "mypkg", None),
    ("cmd:node adapter.mjs", "adapter.mjs", None),
    ("cmd:./tokconf-go-adapter", "tokconf-go-adapter", build_go),
    ("Gpt2Adapter", "out", build_java),
    ("cmd:./target/release/tokconf-rust-adapter", "target", build_rust),
    ("cmd:port/bin/python", "port", None),  # the port's own venv: the wheel's venv stands in for it
]


def _supply(command: Command, cwd: Path, tmp_path_factory: pytest.TempPathFactory, tokconf: Path) -> None:
    if not command.wheel:  # "from this repository's folder": its recordings and examples
        for name in ("recordings", "examples"):
            (cwd / name).symlink_to(ROOT / name)
    for word, name, make in SUPPLIED:
        if not any(word in arg for arg in command.argv()):
            continue
        if name == "mypkg":
            (cwd / "mypkg").mkdir()
            (cwd / "mypkg" / "__init__.py").write_text("")
            (cwd / "mypkg" / "tok.py").write_text(PORT)
        elif name == "port":
            (cwd / name).symlink_to(tokconf.parent.parent)
        elif name == "adapter.mjs":
            shutil.copy(ROOT / "examples" / "node" / "adapter.mjs", cwd / name)
        else:
            assert make is not None
            built = once(tmp_path_factory, make.__name__.removeprefix("build_"), make)
            (cwd / name).symlink_to(built / name)


def _run(command: Command, tokconf: Path, cwd: Path, libllama: Path | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(cwd), "TOKCONF_CACHE": str(cache_root())}
    env["PATH"] = f"{tokconf.parent}{os.pathsep}{env['PATH']}"
    env.pop("PYTEST_ADDOPTS", None)
    argv = [str(tokconf), *command.argv(libllama)[1:]]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    expected = STATUS.get(command.text, 0)
    output = f"{command}\n$ {shlex.join(argv)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    assert done.returncode == expected, output
    assert "Traceback" not in done.stderr, output


def _params(llama: bool) -> list[object]:
    return [
        pytest.param(c, id=f"{c.doc}:{c.line}") for c in COMMANDS if c.text not in NOT_RUN and c.needs_llama == llama
    ]


@pytest.mark.parametrize("command", _params(llama=False))
def test_a_doc_command_runs_as_documented(
    command: Command, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    tokconf = request.getfixturevalue("wheel_tokconf") if command.wheel else CHECKOUT_TOKCONF
    _supply(command, tmp_path, tmp_path_factory, tokconf)
    _run(command, tokconf, tmp_path)


@pytest.mark.parametrize("command", _params(llama=True))
def test_a_doc_command_with_llama_cpp_runs_as_documented(
    command: Command,
    llama_build: Build,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    tokconf = request.getfixturevalue("wheel_tokconf") if command.wheel else CHECKOUT_TOKCONF
    _supply(command, tmp_path, tmp_path_factory, tokconf)
    _run(command, tokconf, tmp_path, llama_build.libllama)


def test_the_docs_have_commands_and_the_exceptions_are_current() -> None:
    """The reader finds the commands (a doc whose blocks it could not read would pass vacuously), and
    every command not run, rewritten or expected to fail is still in the docs."""
    texts = {c.text for c in COMMANDS}
    assert {c.doc for c in COMMANDS} == set(DOCS)
    assert len([c for c in COMMANDS if c.wheel]) >= 5
    assert set(NOT_RUN) <= texts, set(NOT_RUN) - texts
    assert set(STATUS) <= texts, set(STATUS) - texts
    for old, _new in REWRITTEN:
        assert any(old in shlex.split(text) for text in texts), old


def test_the_reader_joins_continuations_and_drops_comments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "docs" / "ci.md"
    doc.parent.mkdir()
    doc.write_text(
        "```yaml\n"
        "      - run: tokconf check --impl x:y  # a comment\n"
        "      - run: >\n"
        "          tokconf check --impl 'cmd:java -cp out A'\n"
        "          --claim 'gpt-2/*'\n"
        "      - run: pytest --tokconf-impl x:y\n"
        "```\n"
        "```sh\n"
        "$ tokconf diff a \\\n"
        "    b -o 'c d.md'\n"
        "```\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = [(c.line, c.text, c.wheel) for c in doc_commands("docs/ci.md")]
    assert found == [
        (2, "tokconf check --impl x:y", True),
        (3, "tokconf check --impl 'cmd:java -cp out A' --claim 'gpt-2/*'", True),
        (9, "tokconf diff a b -o 'c d.md'", True),
    ]
