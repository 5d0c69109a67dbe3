"""A read-only folder for tests, as root too (where permission bits stop no write): a test puts this
folder first on a subprocess's PYTHONPATH and names the folder in TOKCONF_TEST_READ_ONLY, and every
write below it, by any Python process started so, fails as on a read-only mount (EROFS). Each refused
path is added to the file TOKCONF_TEST_READ_ONLY_LOG names, if any: a test's proof that the hook held
for a write the run makes (an mtime below a cache other tests use at once proves nothing)."""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

_ROOT = os.environ.get("TOKCONF_TEST_READ_ONLY", "")
_LOG = os.environ.get("TOKCONF_TEST_READ_ONLY_LOG", "")
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = {  # audit event -> positions of the paths it changes
    "os.mkdir": (0,),
    "os.rename": (0, 1),  # os.replace too
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.utime": (0,),
    "os.chmod": (0,),
    "os.truncate": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "shutil.rmtree": (0,),
}


def _inside(path: Any) -> bool:
    if isinstance(path, int):  # a file descriptor: opened for writing first, which is refused
        return False
    full = os.path.realpath(os.fsdecode(path))
    return full == _ROOT or full.startswith(_ROOT + os.sep)


def _refuse(path: Any) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(os.path.realpath(os.fsdecode(path)) + "\n")
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        path, _, flags = args
        if isinstance(flags, int) and flags & _WRITES and path is not None and _inside(path):
            _refuse(path)
    elif event in _CHANGES:
        for position in _CHANGES[event]:
            if _inside(args[position]):
                _refuse(args[position])


if _ROOT:
    _ROOT = os.path.realpath(_ROOT)
    sys.addaudithook(_hook)
