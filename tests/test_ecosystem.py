"""docs/reports/ecosystem.md: the published matrix is one run of `tokconf peers`, its page shows every cell
in a real browser, and samples of its counts and causes are re-run against the pinned libraries, so
the matrix cannot drift from the libraries it describes."""

from __future__ import annotations

import json
from pathlib import Path

import checked
import ecosystem_peers
import pytest
from browser import chromium, png_pixels
from tokconf.checking.explain import reference_tokenizer
from tokconf.checking.explain.model import reference_backend
from tokconf.core.outcome import MODES, Refusal
from tokconf.ecosystem.matrix import Matrix, from_json, library_versions
from tokconf.ecosystem.render import cells_of, markdown, page
from tokconf.implementations.base import VocabInfo
from tokconf.implementations.resolve import resolve
from tokconf.recording.format import load
from tokconf.synth.files import recorded_vocab

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "reports"
RECORDINGS = ROOT / "recordings" / "b11192"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return from_json(json.loads((DOCS / "ecosystem.json").read_text(encoding="utf-8")))


def test_the_published_matrix_is_one_run_of_the_generator(matrix: Matrix) -> None:
    """The Markdown and the page are rendered from the JSON as it is; ≥ 4 peers, every vocab each
    serves in every mode, every cause named, the speeds measured for each served vocab, the
    libraries at the versions the `[peers]` extra pins."""
    assert (DOCS / "ecosystem.md").read_text(encoding="utf-8") == markdown(matrix)
    assert (DOCS / "ecosystem.html").read_text(encoding="utf-8") == page(matrix)
    assert matrix.versions == library_versions() and not matrix.errors
    assert len(matrix.peers) >= 4 and [p.name for p in matrix.peers] == [p.name for p in ecosystem_peers.peers()]
    for peer in matrix.peers:
        served = {c.vocab for c in matrix.cells if c.peer == peer.name and not c.declined}
        assert served, f"{peer.name} serves no vocab"
        for vocab in served:
            cells = [matrix.cell(peer.name, vocab, mode) for mode in MODES]
            assert all(c.counts and not c.declined for c in cells)
            failed = sum(c.counts.get("failed", 0) for c in cells)
            explained = sum(n for r in matrix.causes if (r.peer, r.vocab) == (peer.name, vocab)
                            for n in r.cases_per_mode.values())  # fmt: skip
            unexplained = matrix.unexplained.get(f"{peer.name}/{vocab}", 0)
            assert explained + unexplained >= failed, f"{peer.name} on {vocab}: {failed} failed, {explained} explained"
            assert {s.impl for s in matrix.speeds if s.vocab == vocab} >= {"llama.cpp", "reference", peer.name}
    assert all(r.kind and r.label for r in matrix.causes)


def test_the_page_shows_every_cell_in_a_browser(matrix: Matrix, tmp_path: Path) -> None:
    shot = tmp_path / "ecosystem.png"
    chromium(tmp_path, DOCS / "ecosystem.html", f"--screenshot={shot}", "--window-size=1400,1600")
    width, height, colours = png_pixels(shot.read_bytes())
    background, most = colours.most_common(1)[0]
    assert len(colours) > 50 and most < 0.95 * width * height, f"a blank page: {most} pixels of {background}"
    dom = chromium(tmp_path, DOCS / "ecosystem.html", "--dump-dom")
    assert "<script" not in dom and "<svg" in dom
    missing = [cell for cell in cells_of(matrix) if f'id="{cell}"' not in dom]
    assert not missing and len(list(cells_of(matrix))) == len(matrix.peers) * len(matrix.vocabs) * len(MODES)


@pytest.mark.parametrize("peer", [*ecosystem_peers.REGISTERED, *ecosystem_peers.TOKENIZER_JSON])
def test_each_peers_causes_are_confirmed(matrix: Matrix, peer: str) -> None:
    """The causes of the peer on the vocab where it has the most, re-run: the peer's ids and
    llama.cpp's (the reference, of the matrix's build) on each minimal input are what the matrix
    shows (one vocab per peer: loading a vocab takes transformers seconds)."""
    rows = [r for r in matrix.causes if r.peer == peer]
    if not rows:  # a peer without a cause is one that failed nothing: its cells say so
        assert all(c.counts.get("failed", 0) == 0 for c in matrix.cells if c.peer == peer)
        return
    vocab = max({r.vocab for r in rows}, key=lambda v: sum(r.vocab == v for r in rows))
    recording = load(RECORDINGS / f"{vocab}.yaml")
    path = recorded_vocab(recording.provenance["vocab"], recording.build, None)
    impl = resolve(ecosystem_peers.spec(peer), None)
    session = impl.open(VocabInfo.of(path, vocab, recording.vocab_sha256, recording.facts))
    llama_cpp = reference_backend(reference_tokenizer(path))
    try:
        for row in (r for r in rows if r.vocab == vocab):
            flags = MODES[row.mode]  # type: ignore[index]
            (answer,) = session.encode_many([(row.minimal, *flags)])
            (expected,) = llama_cpp([(row.minimal, *flags)])
            for got, shown in ((answer, row.actual), (expected, row.expected)):
                assert got == shown or (isinstance(got, Refusal) and isinstance(shown, Refusal)), row
    finally:
        session.close()
        impl.close()


@pytest.mark.parametrize(("peer", "vocab"), ecosystem_peers.RECOUNTED)
def test_counts_equal_a_fresh_check(matrix: Matrix, capsys: pytest.CaptureFixture[str], peer: str, vocab: str) -> None:
    """`tokconf check --impl PEER` on a vocab gives the matrix's counts, mode by mode (its --json verdict)."""
    done = checked.check(capsys, "--impl", ecosystem_peers.spec(peer), "--recordings",
                         str(RECORDINGS / f"{vocab}.yaml"), "--details", "0")  # fmt: skip
    for mode in MODES:
        fresh = {v.value: n for v, n in done.unit(vocab, mode).items()}
        assert fresh == matrix.cell(peer, vocab, mode).counts, (peer, vocab, mode)
