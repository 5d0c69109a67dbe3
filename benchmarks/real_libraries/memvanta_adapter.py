"""A `cmd:` adapter (line protocol 2) for memvanta (PyPI, its own C++ GGUF tokenizer), through the
`memvanta-tokenize` command its wheel installs (it has no Python API), run with a Python whose
environment has memvanta installed (never tokconf's own: benchmarks/explain.py --real-python):

    cmd:/tmp/venv/bin/python benchmarks/real_libraries/memvanta_adapter.py

One `memvanta-tokenize GGUF --hex-input HEX [--bos]` process per input (a quarter of a second each):
add_special is `--bos`; the tool parses no special token text and has no switch for it, so every input
is asked the same with parse_special on or off. It imports nothing from tokconf."""

import base64
import shutil
import subprocess
import sys
from pathlib import Path

from line_protocol import Request, serve


def main() -> None:
    tool = shutil.which("memvanta-tokenize") or str(Path(sys.executable).parent / "memvanta-tokenize")
    vocab = {"path": ""}

    def load(request: Request) -> None:
        vocab["path"] = request["path"]

    def encode(request: Request) -> Request:
        data = base64.b64decode(request["text_b64"])
        command = [tool, vocab["path"], "--hex-input", data.hex()] + (["--bos"] if request["add_special"] else [])
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        ids = next((row[4:] for row in done.stdout.splitlines() if row.startswith("ids=")), None)
        if done.returncode != 0 or ids is None:
            return {"fault": f"memvanta-tokenize exited {done.returncode}: {done.stderr.strip()[-300:]}"}
        return {"ids": [int(i) for i in ids.split(",") if i]}

    serve({"name": "memvanta", "version": "0.8.3", "vocab_types": ["bpe", "spm"]}, encode, load)


if __name__ == "__main__":
    main()
