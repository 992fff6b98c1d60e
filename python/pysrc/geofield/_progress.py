"""Progress bars of long calls (``progress=True``): tqdm when it is installed, else a one-line
text bar on stderr.

The native call runs the library on a worker thread and calls the bar, on the calling thread,
with the fraction done (0 to 1) whenever it changed, every 50 ms at most, and with 1.0 at a
successful end. The same polling lets Ctrl-C (KeyboardInterrupt) stop the call within a
fraction of a second.
"""

from __future__ import annotations

import contextlib
import sys

_STEPS = 1000


class _TextBar:
    """``desc [#######.............]  35%`` redrawn in place on stderr."""

    WIDTH = 30

    def __init__(self, desc: str, stream=None):
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        self.shown = -1

    def __call__(self, fraction: float) -> None:
        pct = int(max(0.0, min(1.0, float(fraction))) * 100)
        if pct == self.shown:
            return
        self.shown = pct
        filled = pct * self.WIDTH // 100
        self.stream.write(f"\r{self.desc} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {pct:3d}%")
        self.stream.flush()

    def close(self) -> None:
        if self.shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


class _TqdmBar:
    """A tqdm bar of ``_STEPS`` steps driven by the fraction done."""

    def __init__(self, desc: str, tqdm):
        self.bar = tqdm(total=_STEPS, desc=desc, unit="‰", leave=True)
        self.at = 0

    def __call__(self, fraction: float) -> None:
        to = int(max(0.0, min(1.0, float(fraction))) * _STEPS)
        if to > self.at:
            self.bar.update(to - self.at)
            self.at = to

    def close(self) -> None:
        self.bar.close()


def _make(desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _TextBar(desc)
    return _TqdmBar(desc, tqdm)


@contextlib.contextmanager
def bar(progress, desc: str):
    """A callable taking the fraction done for the native call's ``progress``, or None when
    ``progress`` is false. ``progress`` may also be a callable of the fraction (used as is)."""
    if not progress:
        yield None
        return
    if callable(progress):
        yield progress
        return
    b = _make(desc)
    try:
        yield b
    finally:
        b.close()
