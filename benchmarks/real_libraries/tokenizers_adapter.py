"""A `cmd:` adapter (line protocol 2) for Hugging Face `tokenizers` (the Rust library's Python
binding) over a tokenizer.json, run with a Python that has `tokenizers` installed (never tokconf's
own environment: benchmarks/explain.py --real-python):

    cmd:/tmp/venv/bin/python benchmarks/real_libraries/tokenizers_adapter.py TOKENIZER_JSON

parse_special is the library's `encode_special_tokens` (true: special texts are encoded as text),
add_special its `add_special_tokens`. A `str` API: inputs that are not UTF-8 are declined
(`invalid-utf8`). It imports nothing from tokconf."""

import base64
import json
import sys

import tokenizers


def main() -> None:
    tokenizer = tokenizers.Tokenizer.from_file(sys.argv[1])
    for line in sys.stdin:
        request = json.loads(line)
        rid, op = request["id"], request["op"]
        if op == "hello":
            answer = {
                "protocol": 2,
                "name": "tokenizers",
                "version": tokenizers.__version__,
                "vocab_types": ["bpe", "spm", "wpm", "ugm"],
                "unsupported": ["invalid-utf8"],
            }
        elif op == "load":
            answer = {"ok": True, "ops": []}
        elif op == "encode":
            try:
                text = base64.b64decode(request["text_b64"]).decode("utf-8")
            except UnicodeDecodeError:
                answer = {"unsupported": "invalid-utf8"}
            else:
                try:
                    tokenizer.encode_special_tokens = not request["parse_special"]
                    ids = tokenizer.encode(text, add_special_tokens=request["add_special"]).ids
                    answer = {"ids": ids}
                except Exception as error:  # the library broke on it: a fault, not a refusal
                    answer = {"fault": f"{type(error).__name__}: {error}"}
        else:
            answer = {"fault": f"unknown op {op}"}
        sys.stdout.write(json.dumps({"id": rid, **answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
