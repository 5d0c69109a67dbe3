"""A `cmd:` adapter (line protocol 2) for memvanta (PyPI, its own C++ GGUF tokenizer), through the
`memvanta-tokenize` command its wheel installs (it has no Python API), run with a Python whose
environment has memvanta installed (never tokconf's own: benchmarks/explain.py --real-python):

    cmd:/tmp/venv/bin/python benchmarks/real_libraries/memvanta_adapter.py

One `memvanta-tokenize GGUF --hex-input HEX [--bos]` process per input (a quarter of a second each):
add_special is `--bos`; the tool parses no special token text and has no switch for it, so every input
is asked the same with parse_special on or off. It imports nothing from tokconf."""

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path


def main() -> None:
    tool = shutil.which("memvanta-tokenize") or str(Path(sys.executable).parent / "memvanta-tokenize")
    vocab = ""
    for line in sys.stdin:
        request = json.loads(line)
        rid, op = request["id"], request["op"]
        if op == "hello":
            answer = {"protocol": 2, "name": "memvanta", "version": "0.8.3", "vocab_types": ["bpe", "spm"]}
        elif op == "load":
            vocab = request["path"]
            answer = {"ok": True, "ops": []}
        elif op == "encode":
            data = base64.b64decode(request["text_b64"])
            command = [tool, vocab, "--hex-input", data.hex()] + (["--bos"] if request["add_special"] else [])
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            ids = next((row[4:] for row in done.stdout.splitlines() if row.startswith("ids=")), None)
            if done.returncode != 0 or ids is None:
                answer = {"fault": f"memvanta-tokenize exited {done.returncode}: {done.stderr.strip()[-300:]}"}
            else:
                answer = {"ids": [int(i) for i in ids.split(",") if i]}
        else:
            answer = {"fault": f"unknown op {op}"}
        sys.stdout.write(json.dumps({"id": rid, **answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
