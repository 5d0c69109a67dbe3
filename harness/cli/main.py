"""`tokconf`: the parser of every command, and the one place errors become messages and exit codes.

Every user-fixable failure is a `TokconfError`: printed as one message, exit code 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from ..core.errors import TokconfError
from ..core.printable import escape_unprintable
from . import (
    bisect,
    check,
    coverage,
    diff,
    export,
    fuzz,
    identify,
    llama,
    peers,
    record,
    seal,
    strength,
    upgrade,
    vocab,
)

COMMANDS = (llama, vocab, record, check, coverage, fuzz, diff, export, bisect, upgrade, identify, seal, peers, strength)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokconf", description="Tokenizer conformance against a pinned llama.cpp.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


SIGPIPE_STATUS = 128 + signal.SIGPIPE
SIGTERM_STATUS = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM reached tokconf (a CI job cancelled, a `timeout` command): raised where the run is, so
    every `finally` ends the port processes it started before tokconf exits, as Ctrl-C does."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        from .. import __version__

        print(f"tokconf {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        status: int = args.run(args)
        sys.stdout.flush()  # here, not at exit: a reader that left is caught below
        return status
    except Terminated:
        print("tokconf: terminated (SIGTERM): no verdict", file=sys.stderr)
        return SIGTERM_STATUS
    except TokconfError as error:  # its words may quote a port, a program or a file: shown escaped
        lines = str(error).split("\n")
        print(
            "\n".join(escape_unprintable(line) for line in [f"tokconf: error: {lines[0]}", *lines[1:]]), file=sys.stderr
        )
        return 2
    except BrokenPipeError:  # `tokconf ... | head`: the reader left before the end, so before the verdict
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return SIGPIPE_STATUS  # as a shell reports a process SIGPIPE ended: never a pass under `pipefail`
    except OSError as error:  # the machine's, not a bug's: a full disk, a read-only cache, a permission
        print(f"tokconf: error: {escape_unprintable(str(error))}", file=sys.stderr)
        print("  what to do: free space, or fix the permissions of that path (or set TOKCONF_CACHE)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        resume = " (run the same command again: recording resumes from its journal)" if args.command == "record" else ""
        print(f"tokconf: interrupted{resume}", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
