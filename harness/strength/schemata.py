"""Every mutant compiled into one tokenizer-only libllama, the one that runs chosen when it loads.

Mutant schemata, as Mull builds them: each mutated file holds all of its mutants at once, each as a
branch taken only when the library's mutant number is its own, so one compile of three files serves
thousands of mutants. The number comes from `TOKCONF_MUTANT` in the environment, read by a
constructor that runs before any of the files' static initialisers (priority 101), so the Unicode
tables of unicode-data.cpp are built mutated too; unset or 0 is llama.cpp unchanged. An expression
mutant is `(TOKCONF_M(n) ? (mutated) : (original))`, a deleted statement `{ if (!TOKCONF_M(n)) {
original } }`; the mutated text is one line, so every original line keeps its number (`#line 1` after
the prelude), and a crash or a coverage line names the file's own line.

A mutant that does not compile (a literal where C++ wants a constant, a `?:` whose branches have no
common type) is found by the compiler itself: the files are checked with `-fsyntax-only`, every error
is placed in the innermost mutant written where it points, and those mutants are dropped and counted
(`stillborn`), until the files compile. The library is then built by tokconf.builds.tokenizer_only
from a tree that links every other file of the pinned tree, in a work folder of the user's (never in
tokconf's cache: the campaign's builds are its own), with ccache keyed to that folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..builds.tokenizer_only import LIBRARY, ShimFailed, compile_commands, compile_library
from ..core.errors import TokconfError
from ..core.files import atomic_write
from .mutants import Mutant, Shape

ENVIRONMENT = "TOKCONF_MUTANT"
PRELUDE = f"""#include <cstdlib>
static int tokconf_mutant_ = 0;
__attribute__((constructor(101))) static void tokconf_mutant_init_() {{
    const char * chosen = std::getenv("{ENVIRONMENT}");
    tokconf_mutant_ = chosen ? std::atoi(chosen) : 0;
}}
#define TOKCONF_M(n) __builtin_expect(tokconf_mutant_ == (n), 0)
#line 1
"""
TREE_LINKED = (
    "CMakeLists.txt",
    "LICENSE",
    "include",
    "ggml",
    "cmake",
)  # besides src/, whose files are linked one by one
BUILD_FOLDER = "build"  # in the tree: a library whose folder's parent has include/llama.h is bound with it
ROUNDS = 30  # syntax checks before giving up on making a file compile
DIAGNOSTIC = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<column>\d+):\s+(?:error|required from here)", re.M)


@dataclass
class _Group:
    """Mutants of one span and shape: written as one chain of branches."""

    start: int
    end: int
    shape: Shape
    members: list[tuple[int, Mutant]]
    children: list[_Group] = field(default_factory=list)
    written: tuple[int, int] = (0, 0)  # where it went in the output


def _nested(numbered: list[tuple[int, Mutant]]) -> tuple[list[_Group], list[int]]:
    """The mutants as a forest of groups nested by span, and the numbers of those whose span crosses
    another's edge (none from a syntax tree; dropped if ever)."""
    spans: dict[tuple[int, int, Shape], list[tuple[int, Mutant]]] = {}
    for number, mutant in numbered:
        spans.setdefault((mutant.start, mutant.end, mutant.shape), []).append((number, mutant))
    # a statement holds the expressions of its own span: the statement group is the outer one
    order = sorted(spans, key=lambda k: (k[0], -k[1], k[2] is not Shape.STATEMENT))
    roots: list[_Group] = []
    stack: list[_Group] = []
    crossing: list[int] = []
    for start, end, shape in order:
        group = _Group(start, end, shape, spans[(start, end, shape)])
        while stack and stack[-1].end <= start:
            stack.pop()
        if stack and end > stack[-1].end:
            crossing += [number for number, _ in group.members]
            continue
        (stack[-1].children if stack else roots).append(group)
        stack.append(group)
    return roots, crossing


class _Writer:
    def __init__(self, source: bytes) -> None:
        self.source = source
        self.parts: list[bytes] = []
        self.size = 0

    def put(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)

    def span(self, start: int, end: int, groups: list[_Group]) -> None:
        position = start
        for group in groups:
            self.put(self.source[position : group.start])
            self.group(group)
            position = group.end
        self.put(self.source[position:end])

    def group(self, group: _Group) -> None:
        begin = self.size
        if group.shape is Shape.STATEMENT:
            guard = " && ".join(f"!TOKCONF_M({number})" for number, _ in group.members)
            self.put(f"{{ if ({guard}) {{ ".encode())
            self.span(group.start, group.end, group.children)
            self.put(b" } }")
        else:
            self.put(b"(")
            for number, mutant in group.members:
                self.put(f"TOKCONF_M({number}) ? ({mutant.mutated}) : ".encode())
            self.put(b"(")
            self.span(group.start, group.end, group.children)
            self.put(b"))")
        group.written = (begin, self.size)


def schemata_text(source: bytes, numbered: list[tuple[int, Mutant]]) -> tuple[bytes, list[_Group], list[int]]:
    """The file with every mutant written in (the prelude first), its groups (where each went, as
    offsets after the prelude) and the numbers of mutants left out for crossing another's span."""
    roots, crossing = _nested(numbered)
    writer = _Writer(source)
    writer.span(0, len(source), roots)
    return PRELUDE.encode() + b"".join(writer.parts), roots, crossing


def _flatten(groups: list[_Group]) -> list[_Group]:
    return [g for group in groups for g in (group, *_flatten(group.children))]


def _culprits(body: bytes, groups: list[_Group], said: str, path: Path) -> set[int]:
    """The numbers of the mutants of the innermost group at each place the compiler's errors point."""
    starts = [0] + [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    flat = _flatten(groups)
    culprits: set[int] = set()
    for found in DIAGNOSTIC.finditer(said):
        if Path(found["path"]).name != path.name:
            continue
        line = int(found["line"])
        if line > len(starts):
            continue
        offset = starts[line - 1] + int(found["column"]) - 1
        holding = [g for g in flat if g.written[0] <= offset < g.written[1]]
        if holding:
            culprits.update(number for number, _ in min(holding, key=lambda g: g.written[1] - g.written[0]).members)
    return culprits


@dataclass(frozen=True)
class Schemata:
    """A built schemata library: the mutants it holds by number, and those that did not compile."""

    library: Path
    mutants: dict[int, Mutant]
    stillborn: tuple[str, ...]


def link_tree(pinned: Path, tree: Path, mutated: tuple[str, ...]) -> None:
    """A tree in `tree` whose files are links to the pinned tree's, but the `mutated` ones of src/, which
    stay as the caller wrote them when they are files already (a resumed build)."""
    tree.mkdir(parents=True, exist_ok=True)
    for name in TREE_LINKED:
        link = tree / name
        if (pinned / name).exists() and not link.is_symlink():
            link.symlink_to(pinned / name)
    (tree / "src").mkdir(exist_ok=True)
    for path in (pinned / "src").iterdir():
        link = tree / "src" / path.name
        if link.is_symlink() or (link.exists() and f"src/{path.name}" in mutated):
            continue
        if link.exists():  # a file mutated by an earlier build, not by this one
            link.unlink()
        link.symlink_to(path)


def ccache_env(work: Path) -> dict[str, str]:
    """The environment the campaign's compiles run in: ccache keyed to the work folder."""
    env = dict(os.environ)
    if shutil.which("ccache"):
        env.update({"CCACHE_DIR": str(work / "ccache"), "CCACHE_BASEDIR": str(work), "CCACHE_NOHASHDIR": "1"})
    return env


def write_files(pinned: Path, tree: Path, numbered: list[tuple[int, Mutant]],
                syntax: Callable[[Path], str | None]) -> list[str]:  # fmt: skip
    """Write each mutated file's schemata into `tree` (at the file's path in `pinned`), drop the mutants
    the compiler refuses (`syntax`: what it says of a file, None when it compiles) until the files
    compile, and return the dropped ones' keys."""
    stillborn: list[str] = []
    by_file: dict[str, list[tuple[int, Mutant]]] = {}
    for number, mutant in numbered:
        by_file.setdefault(mutant.file, []).append((number, mutant))
    for file, members in by_file.items():
        source = (pinned / file).read_bytes()
        path = tree / file
        for _ in range(ROUNDS):
            text, groups, crossing = schemata_text(source, members)
            stillborn += [m.key for n, m in members if n in crossing]
            members = [(n, m) for n, m in members if n not in crossing]
            if path.is_symlink():
                path.unlink()
            atomic_write(path, text)
            said = syntax(path)
            if said is None:
                break
            body = text[len(PRELUDE.encode()) :]
            culprits = _culprits(body, groups, said, path)
            if not culprits:
                raise TokconfError(f"the schemata of {file} do not compile, and no mutant is to blame:\n{said[-2000:]}",
                                   "report it: the mutator wrote something it should not")  # fmt: skip
            stillborn += [m.key for n, m in members if n in culprits]
            members = [(n, m) for n, m in members if n not in culprits]
        else:
            raise TokconfError(f"the schemata of {file} still do not compile after {ROUNDS} rounds", "report it")
        numbered = [(n, m) for n, m in numbered if m.file != file] + members
    return stillborn


def syntax_errors(tree: Path, out: Path, path: Path, env: dict[str, str]) -> str | None:
    """What the compiler says about `path` (its command in the tokenizer-only build), None if it compiles."""
    for _, command in compile_commands(tree, out):
        if str(path) in command:
            at = command.index("-c")
            checked = [c for c in command[: at] if c != "ccache"]  # fmt: skip
            checked += [
                "-w",
                "-fsyntax-only",
                "-fdiagnostics-column-unit=byte",
                "-fno-diagnostics-show-caret",
                str(path),
            ]
            done = subprocess.run(checked, cwd=out, env=env, capture_output=True, text=True, check=False)
            return None if done.returncode == 0 else done.stderr
    raise TokconfError(f"{path} is not compiled into the tokenizer-only library", "report it")


def build_schemata(pinned: Path, work: Path, numbered: list[tuple[int, Mutant]], jobs: int = 2,
                   quiet: bool = True, flags: tuple[str, ...] = ()) -> Schemata:  # fmt: skip
    """The schemata library of the `numbered` mutants of the tree `pinned`, built in `work/tree/build`
    (`flags` added to llama.cpp's: the tests build at -O0, quicker); its catalog in `work/schemata.json`."""
    tree = work / "tree"
    files = tuple(sorted({m.file for _, m in numbered}))
    link_tree(pinned, tree, files)
    env = ccache_env(work)
    out = tree / BUILD_FOLDER
    out.mkdir(parents=True, exist_ok=True)
    stillborn = write_files(pinned, tree, numbered, lambda path: syntax_errors(tree, out, path, env))
    log: list[str] = []
    try:
        made = compile_library(tree, out, jobs, env, log, quiet=quiet, flags=flags)
    except ShimFailed as failed:
        raise TokconfError(f"the schemata library did not build: {failed}", f"see {work}") from None
    dead = set(stillborn)
    kept = {n: m for n, m in numbered if m.key not in dead}
    catalog = {"library": str(made.library), "stillborn": stillborn,
               "mutants": {str(n): m.to_json() for n, m in kept.items()}}  # fmt: skip
    atomic_write(work / "schemata.json", json.dumps(catalog, indent=1).encode())
    return Schemata(made.library, kept, tuple(stillborn))


def load_schemata(work: Path) -> Schemata:
    """The schemata library built in `work`, or an error saying to build it."""
    path = work / "schemata.json"
    if not path.is_file() or not (work / "tree" / BUILD_FOLDER / LIBRARY).is_file():
        raise TokconfError(f"no schemata library in {work}", f"build it: tokconf strength build --work {work}")
    data = json.loads(path.read_text(encoding="utf-8"))
    mutants = {int(n): Mutant.from_json(m) for n, m in data["mutants"].items()}
    return Schemata(Path(data["library"]), mutants, tuple(data["stillborn"]))
