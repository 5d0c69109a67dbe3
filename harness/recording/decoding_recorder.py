"""`tokconf record-decoding`: llama.cpp's piece of every id and each recorded case detokenized,
written beside a recording (`tokconf.recording.decoding` is the format)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import __version__
from ..builds.build import Build, require_build
from ..builds.fetch import LOCAL_KINDS
from ..builds.local import local_build
from ..core.errors import TokconfError
from ..core.facts import LlamaCppProvenance
from ..core.files import sha256_file
from ..oracles.libllama_client import LibllamaOracle
from ..synth.files import recorded_vocab
from .decoding import DETOKENIZE, Decoding, Edit, splice
from .decoding import path_for as decoding_path
from .decoding import write as write_decoding
from .format import Recording, load


def record_decoding(
    recording_path: Path, recording: Recording | None = None, vocab_dir: Path | None = None, build: Build | None = None
) -> Path:
    """Write `<name>.decoding.yaml` beside a recording, with the build and vocab file it was made from
    (`build`: the one that just recorded it, else found from its provenance, `recording_build`).

    The vocab file is looked up by name in `vocab_dir` (default: the build's `models/`) and checked
    by sha256. A few seconds per vocabulary: the pieces come in one request each way, and the
    detokenizations go many to a request to the same worker; nothing here can abort llama.cpp on
    recorded ids.
    """
    recording = recording or load(recording_path)  # just written by record_vocab, or read here
    build = build or recording_build(recording.provenance["llama_cpp"])
    vocab = recorded_vocab(recording.provenance["vocab"], build.build, vocab_dir)
    started = time.monotonic()
    with LibllamaOracle(build, vocab) as oracle:
        pieces = oracle.pieces(True)
        plain = {i: p for i, p in enumerate(oracle.pieces(False)) if p != pieces[i]}
        detokenized: dict[str, dict[str, Edit]] = {setting: {} for setting in DETOKENIZE}
        asked = [(case, ids) for case in recording.cases if isinstance(ids := case.outcomes.get("bos"), list)]
        for setting, (remove, unparse) in DETOKENIZE.items():
            texts = oracle.detokenize_many([(ids, remove, unparse) for _, ids in asked])
            for (case, _), text in zip(asked, texts, strict=True):
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


def recording_build(recorded: LlamaCppProvenance) -> Build:
    """The llama.cpp a recording was made with, to record its decoding: build N from the cache, or a
    local llama.cpp found again at its origin, and refused unless its libllama is the one recorded
    (sha256): a decoding from another library would be filed as this recording's."""
    if recorded["source"] not in LOCAL_KINDS:
        return require_build(recorded["build"])
    found = local_build(Path(recorded["origin"]), recorded["build"])
    if found.source.sha256 != recorded["sha256"]:
        raise TokconfError(
            f"the recording was made with the libllama of sha256 {recorded['sha256']} at {recorded['origin']}, "
            f"which is now {found.source.sha256}",
            "record again with `tokconf record --llama PATH` (it records the decoding too)",
        )
    return found
