"""Harness overhead of a check: total time minus the implementation's own time, in one run.

    python benchmarks/check_overhead.py [--impl llama.cpp@11192] [--recordings DIR] [--pytest]
    python benchmarks/check_overhead.py --containment [tiktoken-gguf] [--vocab gpt-2] [--repeats 7]
    python benchmarks/check_overhead.py --sandbox [tiktoken-gguf] [--vocab gpt-2] [--repeats 7]

The implementation's time is what its sessions spend answering (`encode_many`); everything else —
loading recordings, hashing vocab files, judging, counting — is the harness. `--pytest` also times
the pytest plugin: collecting every case of the set, and running it with `-q`.

`--containment` times what containing a Python implementation costs: the same `tokconf check` of one
vocabulary (every mode, the facts, the decoding), in tokconf's process (`--in-process`) and by default
(worker processes), alternately, and prints the median of each and their ratio. `--sandbox` times what
the sandbox costs on top: the same check sandboxed (bubblewrap, the default) and contained without it
(`--sandbox off`: worker processes held by a keeper), alternately.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tokconf.checking.engine import check_recording
from tokconf.core.outcome import Outcome, Request
from tokconf.core.sandbox import bwrap_missing
from tokconf.implementations.base import Implementation, Session, VocabInfo
from tokconf.implementations.resolve import resolve
from tokconf.recording.format import load, recording_files
from tokconf.synth.files import recorded_vocab

ROOT = Path(__file__).resolve().parent.parent
NOT_CONTAINED = "; NOT CONTAINED: the implementation ran in tokconf's process (--in-process)"
NOT_SANDBOXED = "; NOT SANDBOXED (--sandbox off)"


class Timed:
    """Wraps an implementation and adds up the time its sessions take (opening them included)."""

    def __init__(self, inner: Implementation) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    def open(self, vocab: VocabInfo) -> Session:
        start = time.perf_counter()
        session = self.inner.open(vocab)
        self.seconds += time.perf_counter() - start
        return TimedSession(self, session)

    def close(self) -> None:
        self.inner.close()


class TimedSession:
    def __init__(self, owner: Timed, inner: Session) -> None:
        self.owner = owner
        self.inner = inner

    def encode_many(self, requests: list[Request], llama_aborts: frozenset[int] = frozenset()) -> list[Outcome]:
        start = time.perf_counter()
        try:
            return self.inner.encode_many(requests, llama_aborts)
        finally:
            self.owner.seconds += time.perf_counter() - start

    def decoder(self) -> Any:
        return self.inner.decoder()

    def facts(self) -> dict[str, Any]:
        return self.inner.facts()

    def close(self) -> None:
        self.inner.close()


def containment(spec: str, vocab: str, repeats: int) -> None:
    """`tokconf check` of one vocabulary (every mode, the facts, the decoding) as a user runs it, a new
    process each time: in tokconf's process (`--in-process`) and contained (the default: worker
    processes), alternately; the median of each and their ratio. Both pay for starting Python and
    importing the port once, as a CI job does."""
    _alternately(spec, vocab, repeats, ("in process", ["--in-process"], NOT_CONTAINED), ("contained", [], ""))


def sandbox(spec: str, vocab: str, repeats: int) -> None:
    """The same check contained without a sandbox (`--sandbox off`) and in it (the default), alternately."""
    missing = bwrap_missing()
    assert missing is None, missing  # a sandbox that falls back would time the fallback against itself
    unsandboxed = ("contained, --sandbox off", ["--sandbox", "off"], NOT_SANDBOXED)
    _alternately(spec, vocab, repeats, unsandboxed, ("sandboxed (bubblewrap)", ["--sandbox", "bwrap"], ""))


def _alternately(spec: str, vocab: str, repeats: int, *ways: tuple[str, list[str], str]) -> None:
    """Each way (its name, its options, what its verdict line adds) `repeats` times, in turn; the median
    and the fastest of each, and each way's ratio to the first."""
    times: dict[str, list[float]] = {name: [] for name, _, _ in ways}
    lines: dict[str, str] = {}
    for _ in range(repeats):
        for name, options, note in ways:
            command = [sys.executable, "-m", "tokconf", "check", "--impl", spec, "--vocab", vocab, *options]
            start = time.perf_counter()
            run = subprocess.run(command, capture_output=True, text=True, check=False)
            times[name].append(time.perf_counter() - start)
            lines[name] = run.stdout.strip().splitlines()[-1].replace(note, "")
    assert len(set(lines.values())) == 1, lines  # the same verdict, or the comparison means nothing
    print(f"tokconf check --impl {spec} --vocab {vocab} (every mode, facts, decoding); {repeats} runs of each, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for label, of in (("median", statistics.median), ("fastest", min)):
        first = of(times[ways[0][0]])
        shown = ", ".join(f"{name} {of(times[name]):.2f} s ({of(times[name]) / first:.2f}x)" for name, _, _ in ways)
        print(f"{label}: {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default="llama.cpp@11192")
    parser.add_argument("--recordings", type=Path, default=ROOT / "recordings" / "b11192")
    parser.add_argument("--pytest", action="store_true", help="also time the pytest plugin")
    parser.add_argument(
        "--containment",
        nargs="?",
        const="tiktoken-gguf",
        metavar="IMPL",
        help="time a Python implementation contained against in process (default tiktoken-gguf)",
    )
    parser.add_argument(
        "--sandbox",
        nargs="?",
        const="tiktoken-gguf",
        metavar="IMPL",
        help="time a Python implementation sandboxed against contained without a sandbox (default tiktoken-gguf)",
    )
    parser.add_argument("--vocab", default="gpt-2", help="the vocabulary --containment and --sandbox check")
    parser.add_argument("--repeats", type=int, default=7, help="runs of each, for --containment and --sandbox")
    args = parser.parse_args()
    if args.containment:
        containment(args.containment, args.vocab, args.repeats)
        return
    if args.sandbox:
        sandbox(args.sandbox, args.vocab, args.repeats)
        return
    timed = Timed(resolve(args.impl, 10.0))
    checked = 0
    start = time.perf_counter()
    for path in recording_files([args.recordings]):
        recording = load(path)
        vocab = recorded_vocab(recording.provenance["vocab"], recording.build, None)
        checked += sum(1 for _ in check_recording(recording, timed, vocab))
    total = time.perf_counter() - start
    timed.close()
    overhead = total - timed.seconds
    print(f"{checked:,} verdicts, {timed.name}, {os.cpu_count()} cores", flush=True)
    print(f"total {total:.1f} s = implementation {timed.seconds:.1f} s + harness {overhead:.1f} s")
    print(f"harness overhead: {100 * overhead / timed.seconds:.0f}% of the implementation's time", flush=True)
    if args.pytest:
        base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tokconf-recordings", str(args.recordings)]
        with tempfile.TemporaryDirectory() as empty:  # nothing else to collect there
            for label, extra in (("collect", ["--collect-only", "-q"]), ("run", ["-q", "--tokconf-impl", args.impl])):
                start = time.perf_counter()
                subprocess.run([*base, *extra], cwd=empty, capture_output=True, check=False)
                print(f"pytest plugin, {label}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
