"""Headless Chromium (Debian's `chromium`, which setup.sh installs) for the tests that look at a
page as people do: a screenshot and the DOM the browser built."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest


def chromium(tmp_path: Path, page: Path, *args: str) -> str:
    """Headless Chromium on a file, with a profile of its own; its stdout."""
    program = shutil.which("chromium")
    if program is None:
        pytest.fail("chromium is not installed: setup.sh installs it (apt-get install chromium)", pytrace=False)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    profile = f"--user-data-dir={tmp_path / 'profile'}"
    env = {**os.environ, "HOME": str(tmp_path)}  # nothing of the user's profile is read or written
    done = subprocess.run(
        [program, *flags, profile, *args, page.as_uri()], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def png_pixels(png: bytes) -> tuple[int, int, Counter[tuple[int, int, int]]]:
    """Width, height and how many pixels of each colour an 8-bit RGB(A) PNG holds (no Pillow here)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, header, idat = 8, b"", []
    while pos < len(png):
        size, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + size]
        pos += 12 + size
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0) and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    colours: Counter[tuple[int, int, int]] = Counter()
    above = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), above, bpp)
        colours.update(zip(row[0::bpp], row[1::bpp], row[2::bpp], strict=True))
        above = row
    return width, height, colours


def unfilter(method: int, row: bytearray, above: bytearray, bpp: int) -> bytearray:
    """A PNG row's bytes from its filtered bytes and the row above (filters 0 None, 1 Sub, 2 Up,
    3 Average, 4 Paeth)."""
    if method == 2:  # bytewise addition of two big numbers: the 7 low bits of each, then the top bit
        low, top = int.from_bytes(b"\x7f" * len(row)), int.from_bytes(b"\x80" * len(row))
        x, y = int.from_bytes(row), int.from_bytes(above)
        return bytearray((((x & low) + (y & low)) ^ ((x ^ y) & top)).to_bytes(len(row)))
    if method == 1:
        for i in range(bpp, len(row)):
            row[i] = (row[i] + row[i - bpp]) & 0xFF
    elif method == 3:
        for i in range(len(row)):
            row[i] = (row[i] + ((row[i - bpp] if i >= bpp else 0) + above[i]) // 2) & 0xFF
    elif method == 4:
        left, corner = [0] * bpp, [0] * bpp
        for i, (x, up) in enumerate(zip(row, above, strict=True)):
            a, c = left[i % bpp], corner[i % bpp]
            pa, pb, pc = abs(up - c), abs(a - c), abs(a + up - 2 * c)
            value = (x + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 0xFF
            row[i], left[i % bpp], corner[i % bpp] = value, value, up
    return row
