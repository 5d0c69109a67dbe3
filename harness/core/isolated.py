"""The judge in a room no environment can enter: how `tokconf` and `python -m tokconf` start.

The `tokconf` command is a Python console script, and Python runs an environment's start-up code
before any of tokconf's: every `.pth` file of the venv (a port's wheel installed with `pip install .`
can drop one; editable installs and coverage tools put them there routinely), a `sitecustomize` or
`usercustomize` found on `PYTHONPATH`, the `PYTHON*` variables. Such code could patch the judge in
memory. So the command's first step (`launch`) does nothing but start the judge again in a clean
interpreter, `python -I -S` (no `PYTHON*` variables, no current or script folder on the path, no user
site, no `site` module and so no `.pth` file and no `sitecustomize`), running this file by path
(`boot`): it puts back the site-packages folders themselves (their `.pth` files unread) and tokconf's
own two packages by location, then runs the command. tokconf's own helper processes (the llama.cpp
worker) start the same way (`command`).

The port keeps its environment: its worker is started as any Python program is, with the `sys.path`
the command was started with and the current folder first, as `python -m` puts it
(`PORT_PATH`, read by `tokconf.implementations.command_worker`), so `PYTHONPATH=.` is no longer needed to name a
port in the current folder.

What this cannot do, said in docs/threat-model.md: start-up code ran in the first interpreter, before
`launch`; it cannot reach the judge, which starts afresh, but what it started (a daemon) is not tokconf's
to end. And where Python looks for `tokconf` before tokconf's own folder (`python -m tokconf` in a folder
holding a `tokconf.py`, a `PYTHONPATH` naming one), Python runs that file instead, before any of
tokconf's code: use the `tokconf` command, without `PYTHONPATH`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ENV = "TOKCONF_ISOLATED"  # JSON: {"site": [folders], "packages": {name: folder}}, what `boot` puts on the path
PORT_PATH = "TOKCONF_SYS_PATH"  # JSON: the sys.path a Python port's worker imports it with
JUDGE = "tokconf.cli.main:main"  # what `tokconf` runs once isolated
HERE = Path(__file__).resolve()
OWN = HERE.parents[1]  # the tokconf package: harness/ in a checkout, .../site-packages/tokconf when installed


def judge_path() -> str:
    """`ENV`'s value: the site-packages folders of this interpreter (as `site` makes them, .pth files
    aside) and the folders of tokconf's own packages, `tokconf` and `tokconf_reference` (siblings: harness/
    and reference_impl/ in a checkout, tokconf/ and tokconf_reference/ in site-packages). Inherited from
    an isolated judge, else worked out here."""
    if ENV in os.environ:
        return os.environ[ENV]
    import site

    folders = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    installed = OWN.parent / "tokconf_reference"
    reference = installed if installed.is_dir() else OWN.parent / "reference_impl"
    packages = {"tokconf": str(OWN), "tokconf_reference": str(reference)}
    return json.dumps({"site": folders, "packages": packages})


def command(target: str, args: Sequence[str] = ()) -> list[str]:
    """The command line that runs `target` (a module, run as `python -m` would, or `module:function`,
    whose return is the exit status) isolated; its environment must hold `environment()`."""
    return [sys.executable, "-I", "-S", str(HERE), target, *args]


def environment() -> dict[str, str]:
    """What `command`'s process needs in its environment."""
    return {ENV: judge_path()}


def launch() -> None:
    """The `tokconf` command (and `python -m tokconf`): the judge started again, isolated, with the
    port's path left for its workers. Never returns."""
    env = {**os.environ, **environment(), PORT_PATH: json.dumps([os.getcwd(), *sys.path])}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command(JUDGE, sys.argv[1:]), env)


class _OwnPackages(importlib.abc.MetaPathFinder):
    """tokconf's own packages, found by their folders, before anything on the path: an editable
    install finds them through a `.pth` file, which an isolated interpreter never reads."""

    def __init__(self, packages: dict[str, str]) -> None:
        self.packages = packages

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        folder = self.packages.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )


def boot(argv: list[str]) -> int:
    """Run `argv[0]` (see `command`) with `argv[1:]` as its arguments, on the path `ENV` names."""
    judged = json.loads(os.environ[ENV])
    sys.path += [folder for folder in judged["site"] if folder not in sys.path]
    sys.meta_path.insert(0, _OwnPackages(judged["packages"]))
    target, *args = argv
    module, _, function = target.partition(":")
    sys.argv = [module, *args]
    if not function:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    status = getattr(importlib.import_module(module), function)()
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or ENV not in os.environ:
        print(f"usage: {ENV}=... python -I -S {HERE.name} MODULE[:FUNCTION] ARGS...", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(boot(sys.argv[1:]))
