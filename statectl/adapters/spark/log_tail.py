"""Following a growing log file: the lines written since the tail was made."""

from __future__ import annotations

import os
from pathlib import Path


class LogTail:
    """New lines of a growing file, from where it ended when the tail was made."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            self.pos = self.path.stat().st_size
        except OSError:
            self.pos = 0
        self._partial = b""

    def read_lines(self, max_bytes: int = 8 << 20) -> list[str]:
        try:
            size = self.path.stat().st_size
            if size < self.pos:  # truncated or replaced: start over
                self.pos, self._partial = 0, b""
            if size == self.pos:
                return []
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read(min(max_bytes, size - self.pos))
        except OSError:
            return []
        self.pos += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [line.decode("utf-8", errors="replace") for line in lines]
