"""A `cmd:` adapter (line protocol 2) for Hugging Face `tokenizers` (the Rust library's Python
binding) over a tokenizer.json, run with a Python that has `tokenizers` installed (never tokconf's
own environment: benchmarks/explain.py --real-python):

    cmd:/tmp/venv/bin/python benchmarks/real_libraries/tokenizers_adapter.py TOKENIZER_JSON

parse_special is the library's `encode_special_tokens` (true: special texts are encoded as text),
add_special its `add_special_tokens`. A `str` API: inputs that are not UTF-8 are declined
(`invalid-utf8`). It imports nothing from tokconf."""

import base64
import sys

import tokenizers
from line_protocol import Request, serve


def main() -> None:
    tokenizer = tokenizers.Tokenizer.from_file(sys.argv[1])

    def encode(request: Request) -> Request:
        try:
            text = base64.b64decode(request["text_b64"]).decode("utf-8")
        except UnicodeDecodeError:
            return {"unsupported": "invalid-utf8"}
        try:
            tokenizer.encode_special_tokens = not request["parse_special"]
            return {"ids": tokenizer.encode(text, add_special_tokens=request["add_special"]).ids}
        except Exception as error:  # the library broke on it: a fault, not a refusal
            return {"fault": f"{type(error).__name__}: {error}"}

    hello = {"name": "tokenizers", "version": tokenizers.__version__, "vocab_types": ["bpe", "spm", "wpm", "ugm"],
             "unsupported": ["invalid-utf8"]}  # fmt: skip
    serve(hello, encode)


if __name__ == "__main__":
    main()
