"""Which lines of llama.cpp's tokenizer each bundled vocabulary reaches: gcov, through gcovr.

A tokenizer-only libllama of the pinned tree is compiled with `--coverage -O0` (tokconf.builds.
tokenizer_only, in the campaign's work folder) and each recording's inputs are run through it in a
process of their own (tokconf.strength.exercise), a vocabulary per core at once, each writing its
counters to a folder of its own; gcovr then reads that vocabulary's counters into
`coverage/vocabs/<vocab>.json` (gcovr's JSON: every line's count and branches), and the folder is
cleared for the next. So the campaign knows, for every line, which
vocabularies reach it (only those are asked about a mutant there), the report has line and branch
coverage per tokenizer model, and gcovr merges the files into the whole run's. Resumable: a
vocabulary whose file exists is not run again.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..builds.build import Build, LibraryKind
from ..builds.fetch import Source
from ..builds.tokenizer_only import LIBRARY, ShimFailed, compile_library
from ..core.errors import TokconfError
from ..core.facts import Provenance
from ..recording.format import read_provenance
from ..synth.files import recorded_vocab
from .mutants import UNICODE, VOCAB
from .schemata import BUILD_FOLDER, ccache_env, link_tree

COVERED = (VOCAB, UNICODE)  # unicode-data.cpp is tables: its lines all run when the library loads
FLAGS = ("--coverage", "-O0")


def _hook() -> Path:
    return Path(str(resources.files("tokconf.strength") / "coverage_hook.c"))


def coverage_build(pinned: Path, work: Path, jobs: int = 2) -> Build:
    """The coverage-instrumented tokenizer-only library of `pinned`, built in `work/coverage/tree`
    (the tokenizer files copied, so gcov names them inside the tree), or found built."""
    tree = work / "coverage" / "tree"
    out = tree / BUILD_FOLDER
    if not (out / LIBRARY).is_file():
        link_tree(pinned, tree, COVERED)
        for file in COVERED:
            target = tree / file
            if target.is_symlink():
                target.unlink()
            shutil.copyfile(pinned / file, target)
        hook = out / "coverage_hook.c"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_hook(), hook)
        try:
            compile_library(tree, out, jobs, ccache_env(work), [], quiet=True, flags=FLAGS, extra=(hook,))
        except ShimFailed as failed:
            raise TokconfError(f"the coverage library did not build: {failed}", f"see {out}") from None
    return tree_library(tree, pinned)


def tree_library(tree: Path, pinned: Path) -> Build:
    """The Build of a library built in `tree/build` (schemata or coverage), bound with the tree's llama.h
    and finding vocabularies in the pinned tree's models/."""
    library = tree / BUILD_FOLDER / LIBRARY
    source = Source(0, "local-library", str(library), None, None, None, library=str(library),
                    header=str(tree / "include" / "llama.h"))  # fmt: skip
    includes = (tree / "ggml" / "include", tree / "include")
    header = tree / "include" / "llama.h"
    return Build(0, source, library, library.parent / "llama-tokenize", header, includes, pinned / "models",
                 LibraryKind.TOKENIZER_ONLY)  # fmt: skip


def vocab_file(work: Path, name: str) -> Path:
    return work / "coverage" / "vocabs" / f"{name}.json"


def run_coverage(build: Build, work: Path, recordings: list[Path], progress: Callable[[str], None],
                 jobs: int = 2) -> None:  # fmt: skip
    """Each recording's inputs through the coverage library, and its vocabulary's gcovr file written;
    `jobs` vocabularies at once, each process writing its counters to a folder of its own (gcov's
    GCOV_PREFIX) inside the build folder, where gcovr still finds the sources from the counters up
    (gcovr itself one at a time)."""
    # gcov names each source by the path it was compiled at, with links resolved: a tree reached through a
    # link (a coverage build shared by two campaign folders) would filter out every line unresolved
    tree = build.libllama.parent.parent.resolve()
    objects = tree / BUILD_FOLDER / "obj"
    provenances = [(number, recording, read_provenance(recording)) for number, recording in enumerate(recordings, 1)]
    todo = [item for item in provenances if not vocab_file(work, item[2]["vocab"]["name"]).is_file()]
    slots: queue.SimpleQueue[Path] = queue.SimpleQueue()
    for index in range(1, max(1, jobs) + 1):
        slots.put(_counters(objects, index))

    def cover(number: int, recording: Path, provenance: Provenance) -> str:
        slot = slots.get()
        try:
            _cover(build, tree, objects, slot, work, recording, provenance)
        finally:
            slots.put(slot)
        return f"coverage [{number}/{len(recordings)}] {provenance['vocab']['name']}"

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(cover, *item) for item in todo]
        try:
            for future in concurrent.futures.as_completed(futures):
                progress(future.result())
        except BaseException:
            for future in futures:  # a failure stops the run: what is done stays done (resumable)
                future.cancel()
            raise


def _counters(objects: Path, index: int) -> Path:
    """A folder for one process's counters, beside the objects, holding the notes gcov reads with them."""
    folder = objects.parent / "counters" / str(index)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for notes in objects.glob("*.gcno"):
        if notes.stem in _WANTED:
            shutil.copyfile(notes, folder / notes.name)
    return folder


_GCOV = threading.Lock()
_WANTED = frozenset(f"{Path(file).stem}_cpp" for file in COVERED)  # tokconf.builds.tokenizer_only's object names


def _cover(build: Build, tree: Path, objects: Path, slot: Path, work: Path, recording: Path,
           provenance: Provenance) -> None:  # fmt: skip
    """One recording through the library, its counters in `slot`, read by gcovr into its vocabulary's file."""
    for stale in slot.glob("*.gcda"):
        stale.unlink()
    name = provenance["vocab"]["name"]
    vocab = recorded_vocab(provenance["vocab"], provenance["llama_cpp"]["build"], None)
    command = [sys.executable, "-m", "tokconf.strength.exercise", "--lib", str(build.libllama),
               "--header", str(build.llama_h), "--vocab", str(vocab), "--recording", str(recording)]  # fmt: skip
    for folder in build.include_dirs:
        command += ["--include", str(folder)]
    # the counters land at GCOV_PREFIX plus the path they were compiled at, less its first STRIP parts: in `slot`
    env = {**os.environ, "GGML_NO_BACKTRACE": "1", "GCOV_PREFIX": str(slot),
           "GCOV_PREFIX_STRIP": str(len(objects.parts) - 1)}  # fmt: skip
    ran = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if ran.returncode != 0:
        raise TokconfError(f"running {recording.name} through the coverage library failed:\n{ran.stderr[-2000:]}",
                           "see the error; the coverage run resumes where it stopped")  # fmt: skip
    for other in slot.glob("*.gcda"):  # ggml's and the loader's: gcov would read them for nothing
        if other.stem not in _WANTED:
            other.unlink()
    target = vocab_file(work, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    report = target.with_suffix(".tmp")
    filters = [arg for file in COVERED for arg in ("--filter", re.escape(str(tree / file)))]  # absolute: gcovr
    # reads a relative one against its working folder, which must be where the objects were compiled
    gcovr = [sys.executable, "-m", "gcovr", "--root", str(tree), *filters, "--json", str(report), str(slot)]
    with _GCOV:  # gcov writes its .gcov files where the objects were compiled: two at once delete each other's
        done = subprocess.run(gcovr, cwd=objects.parent, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TokconfError(f"gcovr failed for {name}:\n{done.stderr[-2000:]}", "pip install 'tokconf[strength]'")
    _holds_covered(report, tree)
    os.replace(report, target)


def _holds_covered(report: Path, tree: Path) -> None:
    """Refuse a gcovr file in which no line of the covered sources ran: written, it would say that this
    vocabulary reaches nothing, and the campaign would ask it about no mutant (every vocabulary's loading
    runs llama-vocab.cpp). It happens when the sources gcov names are not the tree's (a tree reached
    through a link and not resolved) or no counters were written where gcov reads them."""
    files = json.loads(report.read_text(encoding="utf-8"))["files"]
    if not any(line["count"] > 0 for entry in files if entry["file"] in COVERED for line in entry["lines"]):
        report.unlink()
        raise TokconfError(f"no line of {' or '.join(COVERED)} ran under {tree}: the library's counters are not "
                           "where gcov reads them, or name other sources",
                           f"delete {tree} and run the coverage again: it builds the library anew")  # fmt: skip


@dataclass(frozen=True)
class LineHits:
    """A vocabulary's reached lines and taken branches, per file."""

    lines: dict[str, frozenset[int]]  # file -> lines run at least once
    code: dict[str, frozenset[int]]  # file -> lines gcov counts (code)
    branches: dict[str, dict[tuple[int, int], bool]]  # file -> (line, branch index) -> taken
    functions: dict[str, dict[int, str]]  # file -> line -> the function gcov says it is in (no parameters)


def read_hits(path: Path) -> LineHits:
    """A gcovr JSON file as line and branch hits."""
    data = json.loads(path.read_text(encoding="utf-8"))
    lines: dict[str, set[int]] = {}
    code: dict[str, set[int]] = {}
    branches: dict[str, dict[tuple[int, int], bool]] = {}
    functions: dict[str, dict[int, str]] = {}
    for entry in data["files"]:
        file = entry["file"]
        for line in entry["lines"]:
            if line.get("gcovr/noncode"):
                continue
            number = line["line_number"]
            code.setdefault(file, set()).add(number)
            name = str(line.get("function_name", "")).split("(")[0]
            functions.setdefault(file, {})[number] = re.sub(r"\[abi:\w+\]", "", name)  # the C++11 ABI tag
            if line["count"] > 0:
                lines.setdefault(file, set()).add(number)
            for index, branch in enumerate(line.get("branches", [])):
                if branch.get("throw"):
                    continue
                taken = branches.setdefault(file, {})
                taken[(number, index)] = taken.get((number, index), False) or branch["count"] > 0
    return LineHits(
        {f: frozenset(s) for f, s in lines.items()}, {f: frozenset(s) for f, s in code.items()}, branches, functions
    )


def all_hits(work: Path) -> dict[str, LineHits]:
    """Every vocabulary's hits in `work`, by vocabulary name."""
    folder = work / "coverage" / "vocabs"
    if not folder.is_dir():
        raise TokconfError(f"no coverage in {work}", f"run it: tokconf strength coverage --work {work}")
    return {path.stem: read_hits(path) for path in sorted(folder.glob("*.json"))}
