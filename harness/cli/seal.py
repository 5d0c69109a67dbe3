"""`tokconf seal`: seal recordings an older tokconf wrote, once the user vouches for them.

An older tokconf's digest (`provenance.cases`) covered the cases alone, so such a file's facts and
provenance were believed unchecked; this tokconf refuses the file until it carries a digest of the
whole (`provenance.digest`, docs/recording-format.md "Digest"). Sealing checks the cases against the
old digest and takes the rest as it is: only `--trust` writes, and only the digest lines change.
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

from ..core.files import recordings_arg


def add_parser(commands: Any) -> None:
    cmd = commands.add_parser("seal", help="seal recordings an older tokconf wrote (and their decodings)")
    cmd.set_defaults(run=run)
    cmd.add_argument("recordings", nargs="+", type=recordings_arg, help="recording files or folders")
    cmd.add_argument(
        "--trust",
        action="store_true",
        help="write: I trust these files' facts and provenance (without it, only say what would be sealed)",
    )


def run(args: argparse.Namespace) -> int:
    from ..core.files import atomic_write
    from ..recording import decoding, format
    from ..recording.yaml_io import read_untrusted

    unsealed = 0
    for path in format.recording_files(args.recordings):
        raw, doc = read_untrusted(path, "recording")
        sealed = format.reseal(path, raw, doc)
        changes = [(path, sealed)] if sealed != raw else []
        companion = decoding.path_for(path)
        if companion.is_file():
            was, now = hashlib.sha256(raw).hexdigest(), hashlib.sha256(sealed).hexdigest()
            decoded, decoded_doc = read_untrusted(companion, "decoding")
            resealed = decoding.reseal(companion, decoded, decoded_doc, was, now)
            if resealed != decoded:
                changes.insert(0, (companion, resealed))  # first: it names the recording's sealed bytes
        if not changes:
            print(f"{path}: sealed already")
            continue
        unsealed += 1
        files = " and ".join(str(target) for target, _ in reversed(changes))
        if not args.trust:
            print(f"{files}: to be sealed (cases intact; facts and provenance taken as they are)")
            continue
        for target, content in changes:
            atomic_write(target, content, "sealed file")
        print(f"{files}: sealed")
    if unsealed and not args.trust:
        print(
            f"nothing written: {unsealed} file(s) to seal. Pass --trust only if you trust where they came from: "
            "the digest will vouch for facts and provenance nothing checked before (else re-record them)"
        )
        return 1
    return 0
