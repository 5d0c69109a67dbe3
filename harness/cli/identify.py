"""`tokconf identify --impl X`: which published llama.cpp builds tokenize exactly like X (a binding's
libllama, a `cmd:` adapter, a patched tree), from the bundled build history, and how X differs from the
pinned build."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from ..core.printable import escape_unprintable
from ..options import IMPL_HELP, LOAD_TIMEOUT, TIMEOUT
from . import add_recordings


def add_parser(commands: Any) -> None:
    ident = commands.add_parser(
        "identify",
        help="which published llama.cpp builds tokenize exactly like an implementation",
        description="Matches the implementation's answers against the bundled build history (docs/identify.md).",
        epilog="It is asked every case of the recordings in every mode; its answers are matched against every stretch "
        "of published builds between two change points of the history. Exit 0 when some published build matches, "
        "1 when none does, 2 when nothing could be compared (every input declined, or the implementation broke or "
        "died on every input).",
    )
    ident.set_defaults(run=run)
    ident.add_argument("--impl", required=True, help=f"what to identify: {IMPL_HELP}")
    add_recordings(ident, "only these vocabs (repeatable): quicker, less sure")
    ident.add_argument("--data", type=Path, help="a build history of tokconf upgrade --data (default: the bundled one)")
    ident.add_argument(
        "--timeout", type=TIMEOUT.type, help="seconds an implementation has for each answer (default 10)"
    )
    ident.add_argument("--load-timeout", type=LOAD_TIMEOUT.type, help=LOAD_TIMEOUT.help)


def _range(first: int, last: int, history_builds: tuple[int, ...]) -> str:
    inside = [b for b in history_builds if first <= b <= last]
    span = f"b{first}" if first == last else f"b{first}..b{last}"
    edges = []
    if first == history_builds[0]:
        edges.append(f"or earlier: the history starts at b{first}")
    if last == history_builds[-1]:
        edges.append(f"or later: the history ends at b{last}")
    extra = f"; {', '.join(edges)}" if edges else ""
    return f"{span} ({len(inside)} published build{'s' if len(inside) != 1 else ''}{extra})"


def _say(text: str) -> None:
    """A line of the answer: what the implementation said (its name, its refusals) shown escaped, so it
    cannot rewrite the terminal or pose as another line."""
    print(escape_unprintable(text))


def run(args: argparse.Namespace) -> int:
    from ..core.files import BUNDLED_RECORDINGS
    from ..core.outcome import MODES
    from ..history import data
    from ..history.bisect.probe import ProbeSet
    from ..history.bisect.report import examples
    from ..history.identify import identify
    from ..implementations.resolve import resolve
    from ..recording.decoding import load_for
    from ..recording.format import load, named_recordings

    history = data.read(args.data)
    files = named_recordings(args.recordings or [BUNDLED_RECORDINGS], args.vocab)
    recordings = [load(p) for p in files]
    probes = ProbeSet.from_recordings(recordings, frozenset(), args.vocab_dir)
    impl = resolve(args.impl, args.timeout, load_timeout=args.load_timeout)
    decodings = {r.vocab_name: load_for(path) for r, path in zip(recordings, files, strict=True)}
    try:
        found = identify(impl, history, recordings, probes, decodings)
    finally:
        impl.close()
    builds = history.builds
    vocabs = sorted({vocab for vocab, _, _ in found.answers})
    _say(f"tokconf identify: {impl.name}")
    ids = sum(1 for _, _, item in found.answers if item in MODES)
    decoding = len(found.answers) - ids
    _say(f"  asked {ids} outcomes of {len(vocabs)} vocabular{'ies' if len(vocabs) != 1 else 'y'}" + (
        f" ({', '.join(vocabs)})" if len(vocabs) <= 5 else "") + (
        f", and {decoding} piece lists and detokenized texts" if decoding else "")
        + (f"; {found.declined} declined inputs left out" if found.declined else "")
        + (f"; declined whole: {', '.join(found.declined_vocabs)}" if found.declined_vocabs else ""))  # fmt: skip
    _say(
        f"  history: b{builds[0]}..b{builds[-1]}, {len(builds)} published builds in {len(history.stretches)} "
        f"stretches between change points ({history.command})"
    )
    ranges = found.ranges
    if ranges:
        for first, last in ranges:
            _say(f"  tokenizes exactly like: {_range(first.first, last.last, builds)}")
    else:
        near = found.nearest
        index = history.stretches.index(near)
        _say(f"  no published build in b{builds[0]}..b{builds[-1]} tokenizes exactly like it")
        _say(f"  nearest: {_range(near.first, near.last, builds)}, {found.mismatches[index]} answers differ")
    pinned = history.made_from.build
    differ = found.versus(None)
    if not differ:
        _say(f"  against the pinned build b{pinned} (its recordings): no answer differs")
        return 0 if ranges else 1
    by_vocab = Counter(vocab for vocab, _, _ in differ)
    modes = Counter(mode for _, _, mode in differ)
    listed = ", ".join(f"{v} {n}" for v, n in sorted(by_vocab.items()))
    _say(
        f"  against the pinned build b{pinned} (its recordings): {len(differ)} answers differ "
        f"({', '.join(f'{m} {n}' for m, n in sorted(modes.items()))}): {listed}"
    )
    whole = found.load_refusals(differ)
    for vocab, refusal in sorted(whole.items()):
        refusing, loading = ("it", f"b{pinned}") if refusal.by_it else (f"b{pinned}", "it")
        _say(f"    {vocab}: {refusing} refuses to load it ({refusal.reason}), {loading} loads it: "
             f"{refusal.answers} answers")  # fmt: skip
    rest = [key for key in differ if key[0] not in whole]
    for line in examples(probes, rest, found.recorded, found.answers, f"b{pinned}", "it", {}):
        _say(f"  {line}")
    return 0 if ranges else 1
