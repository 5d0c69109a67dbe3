"""`tokconf record`: drive the pinned llama.cpp over the corpus, llama.cpp's tests, the vocab's special
tokens and seeded fuzz, in every mode, and write one recording per vocabulary; then its decoding
(every id's piece, every case detokenized: `record_decoding`, also `tokconf record-decoding`).

Progress goes to a journal beside the output (`.NAME.journal`, one JSON line per answered case and
flushed as it is written). An interrupted run leaves the journal; the next run with the same inputs
replays it and asks llama.cpp only for what is missing, then writes the recording and drops the
journal. A journal made for other inputs (another build, vocab, corpus or seed) is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harness import __version__
from harness.checking import vocab_file
from harness.cmake_build import Build, require_build
from harness.corpus import Case, CorpusFile
from harness.decoding import DETOKENIZE, Decoding, Edit, splice
from harness.decoding import path_for as decoding_path
from harness.decoding import write as write_decoding
from harness.errors import TokconfError
from harness.fuzz import GENERATOR_VERSION, fuzz_strings
from harness.oracle import LibllamaOracle
from harness.outcome import Outcome, Refusal
from harness.provision import sha256_file
from harness.recording import MODES, RecordedCase, Recording, load, write
from harness.upstream_tests import upstream_cases
from harness.vocab_cases import vocab_cases

JOURNAL_CHUNK = 512  # answers asked for, and journaled, at a time


@dataclass(frozen=True)
class Plan:
    """Everything that decides a recording's content, shared by all vocabs of one run."""

    build: Build
    corpus: tuple[CorpusFile, ...]
    seed: int
    fuzz_count: int
    out_dir: Path
    decoding: bool = True  # also write each recording's decoding (record_decoding)


def vocab_name(vocab: Path) -> str:
    """`ggml-vocab-qwen2.gguf` -> `qwen2`; the recording is `<name>.yaml`."""
    name = vocab.name.removesuffix(".gguf")
    return name.removeprefix("ggml-vocab-")


def shipped_vocabs(build: Build) -> list[Path]:
    """The test vocabularies a build ships in `models/`."""
    return sorted(build.models_dir.glob("ggml-vocab-*.gguf"))


def _provenance(plan: Plan, vocab: Path, vocab_sha: str, facts: dict[str, Any]) -> dict[str, Any]:
    source = plan.build.source
    inp = vocab.with_name(vocab.name + ".inp")
    return {
        "llama_cpp": {
            "build": plan.build.build,
            "source": source.kind,
            "origin": source.origin,
            "sha256": source.sha256,
            "commit": source.commit,
        },
        "backend": "libllama (vocab_only, in a crash-isolated worker)",
        "vocab": {
            "name": vocab_name(vocab),
            "file": vocab.name,
            "sha256": vocab_sha,
            "model": facts["model"],
            "pre": facts["pre"],
        },
        "corpus": {f.path.name: f.sha256 for f in plan.corpus},
        "upstream_tests": {inp.name: sha256_file(inp)} if inp.is_file() else {},
        "fuzz": {"seed": plan.seed, "generator": GENERATOR_VERSION, "count": plan.fuzz_count},
        "harness": __version__,
        "modes": {m: {"add_special": a, "parse_special": p} for m, (a, p) in MODES.items()},
    }


def all_cases(plan: Plan, vocab: Path, facts: dict[str, Any]) -> list[Case]:
    """Corpus, llama.cpp's tests, the vocab's own special-token cases, then fuzz: in that order."""
    cases = [case for corpus_file in plan.corpus for case in corpus_file.cases]
    cases += upstream_cases(vocab)
    cases += vocab_cases(facts)
    fuzz = fuzz_strings(plan.seed, plan.fuzz_count)
    cases += [Case(f"fuzz/{i:04d}", data) for i, data in enumerate(fuzz)]
    return cases


class Journal:
    """Append-only progress of one recording, keyed by a hash of everything that decides its content."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.done: dict[tuple[int, str], Outcome] = {}
        if path.is_file():
            self._replay(key)
        if not self.done:
            path.write_text(json.dumps({"key": key}) + "\n", encoding="utf-8")
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def _replay(self, key: str) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        if not lines or json.loads(lines[0]).get("key") != key:
            return
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                break  # the line being written when the run was interrupted
            if entry.get("error", "").startswith("hang:"):
                continue  # a timeout depends on the machine's load that day: ask again
            outcome = Refusal(entry["error"]) if "error" in entry else entry["ids"]
            self.done[(entry["i"], entry["mode"])] = outcome

    def add(self, answers: list[tuple[tuple[int, str], Outcome]]) -> None:
        """Record answers to (case index, mode) pairs: one write, so a kill loses at most its last line."""
        lines = []
        for (index, mode), outcome in answers:
            entry: dict[str, Any] = {"i": index, "mode": mode}
            if isinstance(outcome, Refusal):
                entry["error"] = outcome.reason
            else:
                entry["ids"] = outcome
            lines.append(json.dumps(entry) + "\n")
            self.done[(index, mode)] = outcome
        os.write(self._fd, "".join(lines).encode())

    def finish(self) -> None:
        os.close(self._fd)
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        os.close(self._fd)


def record_vocab(plan: Plan, vocab: Path) -> Path:
    """Record one vocabulary into `<out_dir>/<name>.yaml`; resumes from its journal if one is there."""
    _require_writable(plan.out_dir)
    if not vocab.is_file():
        raise TokconfError(f"vocab file {vocab} does not exist", "`tokconf llama info` lists the shipped vocabs")
    name = vocab_name(vocab)
    out = plan.out_dir / f"{name}.yaml"
    started = time.monotonic()
    vocab_sha = sha256_file(vocab)
    with LibllamaOracle(plan.build, vocab) as oracle:
        facts = oracle.facts()
        provenance = _provenance(plan, vocab, vocab_sha, facts)
        cases = all_cases(plan, vocab, facts)
        key_source = json.dumps([provenance, [c.id for c in cases]], sort_keys=True)
        key = hashlib.sha256(key_source.encode() + b"".join(c.data for c in cases)).hexdigest()
        journal = Journal(plan.out_dir / f".{name}.journal", key)
        resumed = len(journal.done)
        try:
            pending = [(i, m) for i in range(len(cases)) for m in MODES if (i, m) not in journal.done]
            for start in range(0, len(pending), JOURNAL_CHUNK):
                chunk = pending[start : start + JOURNAL_CHUNK]
                answers = oracle.tokenize_many([(cases[i].data, *MODES[m]) for i, m in chunk])
                journal.add(list(zip(chunk, answers, strict=True)))
        except BaseException:
            journal.close()
            raise
        recorded = [
            RecordedCase(case.id, case.data, {m: journal.done[(i, m)] for m in MODES}, case.why)
            for i, case in enumerate(cases)
        ]
        crashes, restarts = oracle.crashes, oracle.restarts
    recording = Recording(provenance, facts, recorded)
    write(out, recording)
    journal.finish()
    if plan.decoding:
        record_decoding(out, recording)
    refused = sum(isinstance(o, Refusal) for c in recorded for o in c.outcomes.values())
    seconds = time.monotonic() - started
    note = f", {resumed} answers resumed from the journal" if resumed else ""
    print(
        f"{name}: {len(recorded)} cases x {len(MODES)} modes in {seconds:.1f} s "
        f"({refused} refusals, {crashes} crashes, {restarts} worker restarts{note}) -> {out}",
        file=sys.stderr,
        flush=True,
    )
    return out


def record_decoding(recording_path: Path, recording: Recording | None = None) -> Path:
    """Write `<name>.decoding.yaml` beside a recording, with the build and vocab file it was made from.

    A few seconds per vocabulary: the pieces come in one request each way, and the detokenizations
    are small requests to the same worker; nothing here can abort llama.cpp on recorded ids.
    """
    recording = recording or load(recording_path)  # just written by record_vocab, or read here
    build = require_build(int(recording.provenance["llama_cpp"]["build"]))
    vocab = vocab_file(recording, build.models_dir)
    started = time.monotonic()
    with LibllamaOracle(build, vocab) as oracle:
        pieces = oracle.pieces(True)
        plain = {i: p for i, p in enumerate(oracle.pieces(False)) if p != pieces[i]}
        detokenized: dict[str, dict[str, Edit]] = {setting: {} for setting in DETOKENIZE}
        for case in recording.cases:
            ids = case.outcomes.get("bos")
            if isinstance(ids, list):
                for setting, (remove, unparse) in DETOKENIZE.items():
                    text = oracle.detokenize(ids, remove, unparse)
                    if text != case.data:
                        detokenized[setting][case.id] = splice(case.data, text)
    provenance = {
        "llama_cpp": recording.provenance["llama_cpp"],
        "backend": "libllama (vocab_only, in a crash-isolated worker): llama_token_to_piece, llama_detokenize",
        "vocab": recording.provenance["vocab"],
        "recording": {"file": recording_path.name, "sha256": sha256_file(recording_path)},
        "detokenize_input": "each case's `bos` ids",
        "harness": __version__,
    }
    out = decoding_path(recording_path)
    write_decoding(out, Decoding(provenance, pieces, plain, detokenized))
    changed = {setting: len(cases) for setting, cases in detokenized.items()}
    print(
        f"{recording.vocab_name}: {len(pieces)} pieces ({len(plain)} differ without special), "
        f"cases not round-tripping {changed}, {time.monotonic() - started:.1f} s -> {out}",
        file=sys.stderr,
        flush=True,
    )
    return out


def _require_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".tokconf-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise TokconfError(f"output folder {folder} is not writable: {error.strerror}", "pass --out") from None


def record(plan: Plan, vocabs: list[Path], jobs: int) -> list[Path]:
    """Record several vocabularies, `jobs` at a time (one recorder process and one worker each)."""
    _require_writable(plan.out_dir)
    return in_parallel(partial(record_vocab, plan), vocabs, jobs)


def in_parallel(work: Callable[[Path], Path], items: list[Path], jobs: int) -> list[Path]:
    """`work` on each item, `jobs` processes at a time (each with its own llama.cpp worker)."""
    if jobs <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(work, items))
