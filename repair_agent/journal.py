"""The journal: one JSON line per event, flushed and fsynced as it is written.

Enough to replay a run and attribute a fault (oscillation, observation pollution, goal drift,
pseudo-completion, privilege escalation) without any private chain of thought.
"""
from __future__ import annotations

import hashlib
import json
import os
import reprlib
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from .state import state_hash


class JournalWriteError(OSError):
    """A line could not be written (disk full, read-only, I/O error). Every earlier line is intact:
    a partly written line is cut back off, so the file never ends in a torn line of ours."""


class Journal:
    def __init__(self, path: Path, *, last_record_sha256: str | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._last = last_record_sha256
        self.lines = 0  # complete lines this journal wrote

    @classmethod
    def reopen(cls, path: Path) -> "Journal":
        """Append to an existing journal: the next line chains to its last complete line."""
        records = list(read_journal(path))
        return cls(path, last_record_sha256=records[-1]["record_sha256"] if records else None)

    def write(self, record: dict[str, Any]) -> None:
        # Each line carries the hash of its own content and of the line before: editing any
        # field of any record (a proposal, a result, a view) breaks the chain, not just states.
        record = _json_safe({**record, "prev_record_sha256": self._last})
        body = _dumps(record)
        digest = hashlib.sha256(body).hexdigest()  # == record_hash(line as read back)
        # The line is the hashed body with its own hash appended as the last key (readers hash the
        # parsed object with sorted keys, so the key's place in the line does not matter).
        data = body[:-1] + f', "record_sha256": "{digest}"}}\n'.encode()
        if self._fd is None:
            raise JournalWriteError(f"{self.path}: the journal is closed")
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:  # a full disk may take part of a line before it refuses the rest
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)  # a crash or a kill must not lose the step that explains it
        except OSError as exc:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise JournalWriteError(exc.errno, f"{self.path}: could not write line {self.lines + 1}: "
                                    f"{exc.strerror or exc}") from exc
        self._last = digest
        self.lines += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _json_safe(record: dict[str, Any]) -> dict[str, Any]:
    """The record as plain JSON data. A value JSON cannot hold (nested past the recursion limit,
    circular, non-string keys) is journaled as a bounded repr and says so; nothing raises."""
    try:
        return json.loads(json.dumps(record, default=str))
    except (ValueError, TypeError, RecursionError):
        pass
    safe = {}
    for key, value in record.items():
        try:
            safe[str(key)] = json.loads(json.dumps(value, default=str))
        except (ValueError, TypeError, RecursionError) as exc:
            safe[str(key)] = {"unjournalable": type(value).__name__, "why": f"{type(exc).__name__}: {exc}"[:300],
                              "repr": _bounded_repr(value)}
    return safe


def _bounded_repr(value: Any) -> str:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother, short.maxdict, short.maxlist = 8, 2000, 2000, 50, 50
    try:
        return short.repr(value)
    except Exception as exc:  # a hostile __repr__
        return f"<{type(value).__name__}: repr failed with {type(exc).__name__}>"


def _dumps(record: dict[str, Any]) -> bytes:
    """Canonical bytes: UTF-8 text, or all-ASCII escapes when the text holds a lone surrogate
    (which UTF-8 cannot carry). The same rule for writing and for verifying."""
    try:
        return json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        return json.dumps(record, sort_keys=True, ensure_ascii=True).encode("ascii")



def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not a JSON line ({exc})") from None


def record_hash(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return hashlib.sha256(_dumps(body)).hexdigest()


def verify_chain(records: list[dict[str, Any]]) -> list[str]:
    """Problems with the record and state hash chains; empty means the journal is as written."""
    problems, previous, previous_digest, last_record = [], None, None, None
    for number, rec in enumerate(records, 1):
        label = f"step {rec['step']}" if rec.get("step") else rec.get("event")
        if rec.get("record_sha256") != record_hash(rec):
            problems.append(f"line {number}, {label}: content does not match its hash")
        if rec.get("prev_record_sha256") != last_record:
            problems.append(f"line {number}: does not follow the line before it (a line was removed or reordered)")
        last_record = rec.get("record_sha256")
        for key in ("state_before", "state_after"):
            state = rec.get(key)
            if state is None:
                continue
            digest = state_hash(state)
            if rec.get(f"{key}_hash") != digest:
                problems.append(f"{rec.get('event')} step {rec.get('step')}: {key} hash does not match its content")
            # A line starts from the state the line before ended in, exactly: a state changed in
            # between (rewritten in the file, or in memory by whoever held it) shows up here.
            if key == "state_before" and previous is not None and digest != previous_digest:
                problems.append(f"{rec.get('event')} step {rec.get('step')}: state_before (v{state.get('version')}) "
                                f"is not the state the line before ended in (v{previous.get('version')})")
            if previous is not None and state["version"] != previous["version"] and (
                    state.get("parent_hash") != previous_digest or state["version"] != previous["version"] + 1):
                problems.append(f"{rec.get('event')} step {rec.get('step')}: state v{state['version']} "
                                f"does not chain to v{previous['version']}")
            previous, previous_digest = state, digest
    return problems


class TornTail(BaseModel):
    """Bytes at the end of a journal that are not a complete line: a write cut short by a kill or
    a power loss. They are moved to `kept_at`, never silently dropped."""

    kept_at: str
    bytes: int
    after_line: int   # the number of complete lines kept in the journal
    text: str         # the first bytes, for the report (decoded leniently)


def set_aside_torn_tail(path: Path) -> TornTail | None:
    """Cut the journal back to its last complete line and keep what was cut in `journal.jsonl.torn-N`.

    Every line is written with its newline in one write, so bytes after the last newline were
    never completely written; a last line that ends in a newline but is not JSON (a block of
    garbage after a power loss) is torn too. Anything earlier that does not verify is not a tear:
    `verify_chain` reports it and nothing resumes from it."""
    path = Path(path)
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    if cut == len(data) and cut:
        last_start = data.rfind(b"\n", 0, cut - 1) + 1
        try:
            json.loads(data[last_start:cut])
        except (json.JSONDecodeError, UnicodeDecodeError):
            cut = last_start
    if cut == len(data):
        return None
    number = 1
    while path.with_name(f"{path.name}.torn-{number}").exists():
        number += 1
    kept = path.with_name(f"{path.name}.torn-{number}")
    with open(kept, "wb") as f:
        f.write(data[cut:])
        f.flush()
        os.fsync(f.fileno())
    with open(path, "r+b") as f:
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
    return TornTail(kept_at=str(kept), bytes=len(data) - cut, after_line=data[:cut].count(b"\n"),
                    text=data[cut:cut + 200].decode("utf-8", errors="replace"))
