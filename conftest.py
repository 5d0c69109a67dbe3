"""Repository-wide pytest configuration.

Tests that need the pinned llama.cpp get it from the `llama_build` fixture. When the build is
missing they fail with the command that makes it: a missing oracle is never a skipped (and so
silently passing) check.
"""

from __future__ import annotations

import pytest

from harness.core.errors import TokconfError
from harness.llama.build import Build, require_build
from harness.llama.pins import DEFAULT_BUILD

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def llama_build() -> Build:
    """The complete pinned build (b11192) from the cache."""
    try:
        return require_build(DEFAULT_BUILD)
    except TokconfError as error:
        pytest.fail(str(error), pytrace=False)
