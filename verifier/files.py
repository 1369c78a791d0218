"""Files written whole or not at all, and JSON-lines files read and appended with their torn tail
handled: the one implementation of each, for the verifier and the agent side alike (it lives here
because the verifier imports nothing from `repair_agent`, while the agent side may import this)."""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _aside(path: Path, data: str | bytes, sync: bool = False) -> Path:
    """`data` written beside `path` under a fresh hidden name (UTF-8, lone surrogates kept)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    raw = data.encode("utf-8", errors="surrogateescape") if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
            if sync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write aside, then rename into place: a reader (or a crash, or a full disk) never sees half a
    file."""
    tmp = _aside(Path(path), data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_create(path: Path, data: str | bytes) -> None:
    """Write aside, then link into place only if `path` does not exist yet (FileExistsError): a
    record written once, whole, and never overwritten, even by a racing writer."""
    tmp = _aside(Path(path), data, sync=True)
    try:
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def append_line(fd: int, line: bytes) -> None:
    """Append one line with its newline, fsynced. A short write (a full disk takes part of a line)
    goes on until the whole line is down; when the rest is refused the part is cut back off, so the
    file never ends in a torn line of ours, and the OSError is raised."""
    size = os.fstat(fd).st_size
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, size)
        except OSError:
            pass
        raise


@dataclass
class Jsonl:
    """A JSON-lines file as read: its complete lines, which complete lines were damaged, and where a
    torn tail starts (bytes after the last newline, or a last line that is not JSON)."""

    lines: list[Any] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)   # each kept line's 1-based line number
    damaged: list[int] = field(default_factory=list)   # complete lines before the last that are not JSON
    tail_start: int = 0                                 # == size when there is no torn tail
    size: int = 0
    kept_lines: int = 0                                 # newline-ended lines before the tail

    @property
    def torn(self) -> bool:
        return self.tail_start < self.size


def read_jsonl(path: Path) -> Jsonl:
    path = Path(path)
    if not path.exists():
        return Jsonl()
    data = path.read_bytes()
    out = Jsonl(size=len(data))
    cut = data.rfind(b"\n") + 1  # everything after the last newline was never completely written
    offset, number = 0, 0
    pending: list[tuple[int, int]] = []  # (number, start) of damaged lines: the last may be the tail
    last_start = 0
    while offset < cut:
        end = data.index(b"\n", offset) + 1
        number += 1
        raw = data[offset:end]
        if raw.strip():
            last_start = offset
            try:
                out.lines.append(json.loads(raw.decode("utf-8", errors="surrogateescape")))
                out.numbers.append(number)
            except ValueError:
                pending.append((number, offset))
        offset = end
    out.tail_start, out.kept_lines = cut, number
    if pending and pending[-1][1] == last_start:
        # The last complete line is not JSON: a block of garbage after a power loss is torn too.
        number, out.tail_start = pending.pop()
        out.kept_lines = number - 1
    out.damaged = [n for n, _ in pending]
    return out


def cut_torn_tail(path: Path, read: Jsonl, keep_at: Path | None = None) -> bytes:
    """Cut the file back to its last complete line; the cut bytes are returned (and first kept in
    `keep_at`, fsynced, when given)."""
    if not read.torn:
        return b""
    with open(path, "r+b") as f:
        f.seek(read.tail_start)
        tail = f.read()
        if keep_at is not None:
            with open(keep_at, "wb") as kept:
                kept.write(tail)
                kept.flush()
                os.fsync(kept.fileno())
        f.truncate(read.tail_start)
        f.flush()
        os.fsync(f.fileno())
    return tail
