"""A `cmd:` adapter (line protocol 2) for OpenAI's `tiktoken` over a byte-level BPE vocabulary taken
from a tokenizer.json (its `model.vocab`, each token's printable stand-ins mapped back to bytes, ranked
by id, and `added_tokens` as special tokens), run with a Python that has `tiktoken` installed (never
tokconf's own environment: benchmarks/explain.py --real-python):

    cmd:/tmp/venv/bin/python benchmarks/real_libraries/tiktoken_adapter.py TOKENIZER_JSON GPT2|LLAMA3

The split pattern is GPT-2's or Llama 3's, as tiktoken's own `gpt2` and Llama 3's tiktoken model use.
Text that is UTF-8 goes to `encode` (parse_special on: `allowed_special="all"`; off:
`disallowed_special=()`, special texts encoded as text); bytes that are not go to the byte API tiktoken
has for them, `_encode_bytes` (what a binding taking bytes calls). add_special adds nothing (tiktoken
adds no BOS). It imports nothing from tokconf."""

import base64
import json
import sys

import tiktoken
from line_protocol import Request, serve

PATTERNS = {
    "GPT2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "LLAMA3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}


def byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in of each byte, back to the byte."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes, strict=True)}


def encoding(path: str, pattern: str) -> tiktoken.Encoding:
    with open(path, encoding="utf-8") as handle:
        spec = json.load(handle)
    to_byte = byte_decoder()
    specials = {token["content"]: token["id"] for token in spec.get("added_tokens", []) if token.get("special")}
    ranks = {
        bytes(to_byte[c] for c in token): rank
        for token, rank in spec["model"]["vocab"].items()
        if token not in specials
    }
    return tiktoken.Encoding("tokconf-real", pat_str=PATTERNS[pattern], mergeable_ranks=ranks, special_tokens=specials)


def main() -> None:
    enc = encoding(sys.argv[1], sys.argv[2])

    def encode(request: Request) -> Request:
        data = base64.b64decode(request["text_b64"])
        try:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return {"ids": list(enc._encode_bytes(data))}
            if request["parse_special"]:
                return {"ids": enc.encode(text, allowed_special="all")}
            return {"ids": enc.encode(text, disallowed_special=())}
        except Exception as error:  # the library broke on it: a fault, not a refusal
            return {"fault": f"{type(error).__name__}: {error}"}

    version = tiktoken.__version__ if hasattr(tiktoken, "__version__") else "?"
    serve({"name": "tiktoken", "version": version, "vocab_types": ["bpe"]}, encode)


if __name__ == "__main__":
    main()
