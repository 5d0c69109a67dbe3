"""What the check items and the fuzz items share: a failure shown as its own report (no traceback),
the file an item is located at, and the group an item set is collected under (pytest's collection
is of test files; tokconf's items come from recordings and campaigns, made at collection's end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


class ReportedFailure(Exception):
    """A failure whose message is the whole report (no traceback is shown)."""


class TokconfItem(pytest.Item):
    """What tokconf's items share: failures shown as their report, located at the file they check."""

    location_path: Path
    label: str

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ReportedFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.location_path, None, self.label


class ItemGroup(pytest.Collector):
    """The parent of one file's (or one campaign's) items; they are made in `collect_into`."""

    def collect(self) -> list[pytest.Item]:
        return []


def collect_into(session: pytest.Session, items: list[pytest.Item], nodeid: str, path: Path | None, make: Any) -> None:
    """Make a group's items with `make(parent)` and tell the terminal (and xdist) they were collected."""
    where = {"path": path} if path is not None else {}
    parent = ItemGroup.from_parent(session, name=nodeid, nodeid=nodeid, **where)
    found: list[pytest.Item] = make(parent)
    collected: list[pytest.Item | pytest.Collector] = list(found)
    session.config.hook.pytest_collectreport(report=pytest.CollectReport(nodeid, "passed", None, collected))
    items.extend(found)
