"""A `cmd:` adapter (line protocol 2) for memvanta (PyPI, its own C++ GGUF tokenizer), through the
`memvanta_tokenize` executable its wheel ships (it has no Python API, no shared library and no mode
reading several inputs: tools_tokenize.cpp's `main` encodes one argv text), run with a Python whose
environment has memvanta installed (never tokconf's own: benchmarks/explain.py --real-python):

    cmd:/tmp/venv/bin/python benchmarks/real_libraries/memvanta_adapter.py

One `memvanta_tokenize GGUF --hex-input HEX [--bos]` process per input. The executable is run from the
package's `bin/` folder, not through the `memvanta-tokenize` console script: that script only starts a
Python that `os.execv`s the same file with the same arguments (memvanta/cli.py:11-16), which costs more
than the tokenizing (0.04 s rather than 0.1 s per input on gpt-2); the answers are the same bytes.
add_special is `--bos`; the tool parses no special token text and has no switch for it, so every input
is asked the same with parse_special on or off. It imports nothing from tokconf."""

import base64
import subprocess
from pathlib import Path

import memvanta
from line_protocol import Request, serve

# Where memvanta/cli.py's `_exec` finds it: the package folder's bin/.
TOOL = Path(memvanta.__file__).resolve().parent / "bin" / "memvanta_tokenize"


def main() -> None:
    vocab = {"path": ""}

    def load(request: Request) -> None:
        vocab["path"] = request["path"]

    def encode(request: Request) -> Request:
        data = base64.b64decode(request["text_b64"])
        command = [str(TOOL), vocab["path"], "--hex-input", data.hex()] + (["--bos"] if request["add_special"] else [])
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        ids = next((row[4:] for row in done.stdout.splitlines() if row.startswith("ids=")), None)
        if done.returncode != 0 or ids is None:
            return {"fault": f"memvanta_tokenize exited {done.returncode}: {done.stderr.strip()[-300:]}"}
        return {"ids": [int(i) for i in ids.split(",") if i]}

    serve({"name": "memvanta", "version": "0.8.3", "vocab_types": ["bpe", "spm"]}, encode, load)


if __name__ == "__main__":
    main()
