#!/usr/bin/env python3
"""Line-protocol programs that misbehave in the ways tests/test_hostile_cmd.py proves harmless:

    python tests/support/cmd_programs.py BEHAVIOUR [--starts FILE] [MARKER]

Each greets (protocol 2, bpe) and loads any vocabulary; `encode` answers the input's bytes as ids,
except as BEHAVIOUR says. `--starts FILE` appends a line per start (restarts are counted from it);
MARKER is only carried in the command line, so a test can look for this process, and for what it
started, in /proc.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import time
from typing import Any

BEHAVIOURS = {
    "hang": "encode sleeps for an hour",
    "hang-on-load": "load sleeps for an hour",
    "spin": "encode spins the CPU forever",
    "orphan-then-exit": "encode starts a sleeping child (with MARKER-orphan) that holds no pipe, then exits",
    "ignore-eof": "answers, and at the end of its input sleeps for an hour instead of exiting",
    "stderr-flood": "writes 1 MiB to stderr before each answer, then `answered N`",
    "preempt": "after each answer writes, in the same write, an answer for the next id: [999]",
    "alternate": "every second encode answer (the 2nd, 4th, …) is not JSON",
    "flood-ids": "answers 200,000 ids to every input",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("behaviour", choices=sorted(BEHAVIOURS))
    parser.add_argument("marker", nargs="?", default="")
    parser.add_argument("--starts", help="append a line to this file at start")
    args = parser.parse_args()
    if args.starts:
        with open(args.starts, "a") as starts:
            starts.write(f"{os.getpid()}\n")
    encodes = 0
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any] = {"id": request["id"]}
        extra = ""
        if request["op"] == "hello":
            answer.update(protocol=2, name="misbehaving", vocab_types=["bpe"])
        elif request["op"] == "load":
            if args.behaviour == "hang-on-load":
                time.sleep(3600)
            answer.update(ok=True)
        else:
            encodes += 1
            answer.update(ids=list(base64.b64decode(request["text_b64"])))
            if args.behaviour == "hang":
                time.sleep(3600)
            elif args.behaviour == "spin":
                while True:
                    pass
            elif args.behaviour == "orphan-then-exit":
                child = [sys.executable, "-c", "import time; time.sleep(3600)", f"{args.marker}-orphan"]
                subprocess.Popen(child, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                os._exit(3)
            elif args.behaviour == "stderr-flood":
                sys.stderr.write(("x" * 1023 + "\n") * 1024 + f"answered {request['id']}\n")
                sys.stderr.flush()
            elif args.behaviour == "preempt":
                extra = json.dumps({"id": request["id"] + 1, "ids": [999]}) + "\n"
            elif args.behaviour == "flood-ids":
                answer.update(ids=[0] * 200_000)
            elif args.behaviour == "alternate" and encodes % 2 == 0:
                sys.stdout.write("oops\n")
                sys.stdout.flush()
                continue
        sys.stdout.write(json.dumps(answer) + "\n" + extra)  # one write: both lines arrive together
        sys.stdout.flush()
    if args.behaviour == "ignore-eof":
        time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
