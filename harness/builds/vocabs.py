"""The GGUF vocabulary files of a build: the test vocabularies it ships, their names, and the file a
recording was made from, found again and checked by sha256."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import FileKind, regular_file, sha256_file
from .build import Build
from .fetch import fetch, fetched_source, source_dir


def vocab_name(vocab: Path) -> str:
    """`ggml-vocab-qwen2.gguf` -> `qwen2`, `synth-pre-glm5.gguf` -> `pre-glm5`; the recording is
    `<name>.yaml`."""
    name = vocab.name.removesuffix(".gguf")
    return name.removeprefix("ggml-vocab-").removeprefix("synth-")


def shipped_vocabs(build: Build) -> list[Path]:
    """The test vocabularies a build ships in `models/`."""
    return sorted(build.models_dir.glob("ggml-vocab-*.gguf"))


def resolve_vocabs(names: list[str], build: Build) -> list[Path]:
    """`--vocab` values (shipped names or GGUF paths) as files; none given: every shipped vocab. A path
    that is there must be a regular file within the vocab cap (`regular_file`), checked before any
    work starts (a missing one is the recorder's to say)."""
    shipped = shipped_vocabs(build)
    if not names:
        return shipped
    found = []
    for name in names:
        path = Path(name)
        if path.suffix == ".gguf" or path.exists():
            found.append(regular_file(path, FileKind.VOCAB) if path.exists() else path)
            continue
        candidate = build.models_dir / f"ggml-vocab-{name}.gguf"
        if not candidate.is_file():
            known = ", ".join(vocab_name(v) for v in shipped)
            raise TokconfError(f"unknown vocab {name!r}", f"use one of: {known}, or a path to a GGUF file")
        found.append(candidate)
    return found


def models_dir(build: int) -> Path:
    """Build N's `models/` folder, its test vocabularies, fetched on first use: the pinned sdist holds
    them, so no compiler is needed."""
    if fetched_source(build) is None:
        print(f"the vocab files of b{build} are not in the cache yet: fetching them", file=sys.stderr, flush=True)
        fetch(build)
    return source_dir(build) / "models"


def vocab_file(file_name: str, sha256: str, build: int, vocab_dir: Path | None) -> Path:
    """The GGUF file a recording names, from `vocab_dir` or the build's `models/` (`models_dir`),
    checked by sha256: a regular file within the vocab cap (`regular_file`), so a FIFO or a link to a
    device there is refused naming it, not called missing."""
    path = (vocab_dir or models_dir(build)) / file_name
    if not (path.exists() or path.is_symlink()):
        raise TokconfError(f"vocab file {path} is missing", "pass --vocab-dir with the folder holding it")
    actual = sha256_file(regular_file(path, FileKind.VOCAB))
    if actual != sha256:
        raise TokconfError(
            f"{path} has sha256 {actual}, but the recording was made from {sha256}",
            "use the vocab file the recording names (tokconf llama fetch for its build)",
        )
    return path
