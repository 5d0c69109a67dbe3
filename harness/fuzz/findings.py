"""What a campaign found: each shrunk divergence, kept as a case of a `tokconf-recording/1` file with
llama.cpp's answer in every mode (`found-<vocab>.yaml`), so `tokconf check --recordings corpora/found`
gates it at once, without a compiled llama.cpp; and the report lines both front ends print.
"""

from __future__ import annotations

import datetime
import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..builds.build import Build
from ..builds.vocabs import vocab_name
from ..core.errors import TokconfError
from ..core.facts import CampaignProvenance, VocabFacts
from ..core.files import FileKind, sha256_file
from ..core.outcome import Mode, Outcome, render_outcome
from ..core.render import code_points, first_divergence, ids_window, visible
from ..recording.format import RecordedCase, Recording, load, write
from ..recording.pieces import pieces_of
from ..recording.recorder import Plan, provenance
from ..synth.files import synth_provenance
from . import Engine


@dataclass
class Finding:
    vocab: str
    mode: Mode
    data: bytes  # the minimal input
    expected: Outcome  # llama.cpp's answer in `mode`
    actual: Outcome  # the implementation's
    reason: str
    vocab_path: Path  # its GGUF file, for pieces in the report
    seed: int  # the campaign's seed (printed at its start, chosen at random unless given)
    vocab_sha256: str
    facts: VocabFacts
    outcomes: dict[Mode, Outcome]  # llama.cpp's, every mode
    replayed: bool  # from the example database, not generated
    example: int  # which example of its vocabulary and mode it was (1: the first)
    engine: Engine = Engine.TOKCONF
    # whether `--seed` generates it again: not when replayed, nor when hypothesis drew it over a
    # database (hypothesis takes a seed or a database, never both: it reproduces from the database)
    seeded: bool = True

    @property
    def case_id(self) -> str:
        return f"found-{self.vocab}/fuzz-{hashlib.sha256(self.data).hexdigest()[:12]}"


def found_path(found_dir: Path, vocab: str) -> Path:
    return found_dir / f"found-{vocab}.yaml"


def write_finding(found_dir: Path, finding: Finding, build: Build, impl_name: str) -> Path:
    """Add the finding to `found-<vocab>.yaml` (a recording: one case, every mode, llama.cpp's answers),
    unless that input is there already. A file recorded by another build or vocabulary file is not
    mixed with this one: that is an error that says to move it. Something at its path that is no
    regular file (a FIFO, a link to a device) is refused, naming it, never replaced or waited on."""
    path = found_path(found_dir, finding.vocab)
    today = datetime.date.today().isoformat()
    campaign: CampaignProvenance = {"date": today, "implementation": impl_name, "seed": finding.seed}
    if path.exists() or path.is_symlink():
        recording = load(path, FileKind.FOUND)
        _same_origin(path, recording, build, finding.vocab_sha256)
    else:
        plan = Plan(build, (), 0, 0, found_dir, decoding=False)  # no corpus, no fuzz: campaigns say where
        synthetic = synth_provenance(finding.vocab_path, finding.vocab_sha256)
        origin = provenance(plan, finding.vocab_path, finding.vocab_sha256, finding.facts, synthetic)
        origin["fuzz"] = {"seed": 0, "generator": 0, "count": 0}
        origin["upstream_tests"] = {}
        recording = Recording(origin, finding.facts, [])
    if any(case.id == finding.case_id for case in recording.cases):
        return path
    campaigns = recording.provenance.setdefault("campaigns", [])
    if campaign not in campaigns:
        campaigns.append(campaign)
    why = (
        f"found by tokconf fuzz on {today}: mode {finding.mode}, seed {finding.seed}, "
        f"implementation {impl_name}: {finding.reason}"
    )
    recording.cases.append(RecordedCase(finding.case_id, finding.data, dict(finding.outcomes), why))
    found_dir.mkdir(parents=True, exist_ok=True)
    write(path, recording, visible=True)
    return path


def check_found_files(found_dir: Path, build: Build, vocabs: list[Path]) -> None:
    """The found files a campaign will add to must read back and hold this build's and vocab file's
    answers, checked before it does any work: found only at the first finding, either would stop the
    campaign there."""
    for vocab in vocabs:
        path = found_path(found_dir, vocab_name(vocab))
        if path.exists() or path.is_symlink():
            _same_origin(path, load(path, FileKind.FOUND), build, sha256_file(vocab, FileKind.VOCAB))


def _same_origin(path: Path, recording: Recording, build: Build, vocab_sha256: str) -> None:
    if recording.build != build.build or recording.vocab_sha256 != vocab_sha256:
        raise TokconfError(
            f"{path} holds findings recorded by llama.cpp b{recording.build} with vocab sha256 "
            f"{recording.vocab_sha256[:16]}…; this campaign runs b{build.build} with {vocab_sha256[:16]}…",
            "move that file away (or give --found-dir): a recording holds one build's answers",
        )


def describe_finding(finding: Finding, impl_name: str, impl_spec: str, written: Path | None = None) -> list[str]:
    """A shrunk divergence as the report lines both front ends print: the input, both answers with
    their pieces around the first difference, and the commands that find it again and gate it."""
    origin = f"{'replayed from the example database as ' if finding.replayed else ''}example {finding.example}"
    lines = [
        f"{finding.vocab} [{finding.mode}] {finding.reason} ({origin}, seed {finding.seed})",
        f"  input:     {visible(finding.data)}   ({code_points(finding.data)})",
    ]
    expected, actual = finding.expected, finding.actual
    if isinstance(expected, list) and isinstance(actual, list):
        at = first_divergence(expected, actual)
        lines.append(f"  llama.cpp: {ids_window(expected, at, pieces_of(finding.vocab_path), 3)}")
        lines.append(f"  {impl_name}: {ids_window(actual, at, pieces_of(finding.vocab_path), 3)}")
    else:
        lines.append(f"  llama.cpp: {render_outcome(expected)}")
        lines.append(f"  {impl_name}: {render_outcome(actual)}")
    shipped = finding.vocab_path.name == f"ggml-vocab-{finding.vocab}.gguf"
    vocab = finding.vocab if shipped else str(finding.vocab_path)
    command = ["tokconf", "fuzz", "--impl", impl_spec, "--vocab", vocab, "--mode", finding.mode]
    if finding.engine is not Engine.TOKCONF:
        command += ["--engine", finding.engine]
    if not finding.seeded:
        lines.append(f"  reproduce: {shlex.join(command)}   (replayed first from the example database)")
    else:
        no_db = ["--no-db"] if finding.engine is Engine.HYPOTHESIS else []  # with a database it takes no seed
        lines.append(f"  reproduce: {shlex.join([*command, *no_db, '--seed', str(finding.seed)])}")
    if written is not None:
        gate = ["tokconf", "check", "--impl", impl_spec, "--recordings", str(written)]
        lines.append(f"  gate:      {shlex.join(gate)}")
    return lines
