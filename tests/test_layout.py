"""The package's architecture, held as data: every import points down the data flow, and the pytest
plugin loads nothing heavy into a pytest run that does not use it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness"

# The stages in data-flow order: a module may import from its own stage and the ones before it.
STAGES = (
    "core", "builds", "synth", "oracles", "corpus", "recording", "implementations", "checking", "reporting",
    "ecosystem", "fuzz", "strategies", "history", "strength", "options", "api", "cli", "plugin",
)  # fmt: skip


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "tokconf" else None


def _is_module(name: str) -> bool:
    return (HARNESS / name).is_dir() or (HARNESS / f"{name}.py").is_file()


def _module(path: Path) -> str:
    """The name a file of harness/ is imported by: the folder is installed as the `tokconf` package."""
    parts = path.relative_to(HARNESS).with_suffix("").parts
    return ".".join(("tokconf", *parts)).removesuffix(".__init__")


def _imports(path: Path) -> list[str]:
    """Every `tokconf.*` module a file imports, at module level or inside functions; relative imports
    (the form harness/ uses, so that mypy checks the folder under its own name) resolved against the file."""
    package = _module(path).split(".") if path.is_relative_to(HARNESS) else []
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            if module != "tokconf":
                found.append(module)
            else:  # `from tokconf import x`: a stage when x is a subpackage or module, else a public name
                found += [f"tokconf.{a.name}" for a in node.names if _is_module(a.name)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name.startswith("tokconf.")]


def test_every_import_points_down_the_data_flow() -> None:
    wrong = []
    for path in sorted(HARNESS.rglob("*.py")):
        module = _module(path)
        own = _stage(module)
        if own is None or own == "__main__":
            continue
        for imported in _imports(path):
            stage = _stage(imported)
            if stage in ("__init__", "__main__"):
                continue
            if stage not in STAGES or STAGES.index(stage) > STAGES.index(own):
                wrong.append(f"{module} imports {imported}")
    assert wrong == []


def test_every_module_belongs_to_a_stage() -> None:
    stages = {path.relative_to(HARNESS).parts[0].removesuffix(".py") for path in HARNESS.rglob("*.py")}
    assert stages - {"__init__", "__main__"} == set(STAGES)


def test_the_reference_imports_nothing_of_the_harness() -> None:
    offenders = [str(p) for p in (ROOT / "reference_impl").rglob("*.py") if _imports(p)]
    assert offenders == []


def test_the_pytest_plugin_loads_nothing_heavy() -> None:
    """What `import tokconf.plugin` adds to a pytest process that has pytest loaded already."""
    probe = (
        "import sys, json, pytest; before = set(sys.modules); import tokconf.plugin; "
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    added = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    assert set(added) <= {"tokconf"}, added


def test_the_wheel_lists_every_subpackage() -> None:
    """pyproject.toml lists the packages by hand (the bundled data is mapped in): a new stage must be in
    that list, or the installed tokconf lacks it."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    stages = {f"tokconf.{p.name}" for p in HARNESS.iterdir() if (p / "__init__.py").is_file() and p.name != "bundled"}
    assert stages <= listed, stages - listed


def test_core_imports_nothing_but_itself() -> None:
    """`core` is what every stage uses: it reads no vocabulary and imports neither another stage nor the
    reference tokenizer (reports get pieces through a lookup, `tokconf.recording.pieces`)."""
    found = []
    for path in sorted((HARNESS / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else [f"{'.' * node.level}{node.module or ''}"]
            found += [
                f"{path.name}: {name}" for name in names if name.startswith(("tokconf", ".."))
            ]  # and tokconf_reference
    assert found == []
