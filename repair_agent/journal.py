"""The journal: one JSON line per event, flushed and fsynced as it is written.

Enough to replay a run and attribute a fault (oscillation, observation pollution, goal drift,
pseudo-completion, privilege escalation) without any private chain of thought.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from .state import state_hash


class Journal:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._last: str | None = None

    def write(self, record: dict[str, Any]) -> None:
        # Each line carries the hash of its own content and of the line before: editing any
        # field of any record (a proposal, a result, a view) breaks the chain, not just states.
        record = json.loads(json.dumps({**record, "prev_record_sha256": self._last}, default=str))
        record["record_sha256"] = self._last = record_hash(record)
        line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
        os.write(self._fd, line.encode("utf-8", errors="surrogateescape"))
        os.fsync(self._fd)  # a crash or a kill must not lose the step that explains it

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode(
        "utf-8", errors="surrogateescape")).hexdigest()


def verify_chain(records: list[dict[str, Any]]) -> list[str]:
    """Problems with the record and state hash chains; empty means the journal is as written."""
    problems, previous, last_record = [], None, None
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
            if previous is not None and state["version"] != previous["version"] and (
                    state.get("parent_hash") != state_hash(previous) or state["version"] != previous["version"] + 1):
                problems.append(f"{rec.get('event')} step {rec.get('step')}: state v{state['version']} "
                                f"does not chain to v{previous['version']}")
            previous = state
    return problems
