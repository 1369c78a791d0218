"""The journal: one JSON line per event, flushed and fsynced as it is written, each line one typed
record (`JournalRecord`, one model per `event`) written and read through these models.

Enough to replay a run and attribute a fault (oscillation, observation pollution, goal drift,
pseudo-completion, privilege escalation) without any private chain of thought. A line refers to
earlier evidence by id and to the state before it by hash: a journal grows with the evidence,
not with the square of the steps.

Kept in one module: the records, the writer that hashes them and the chain check that reads them
back are one file format; the file plumbing (appends, torn tails) is verifier/files.py.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, ClassVar, Iterator, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_serializer

from verifier.files import append_line, cut_torn_tail, read_jsonl

from .actions import Action
from ..untrusted.bounded import bounded_repr
from ..untrusted.redaction import redact_data
from .state import Evidence, Grant, Observation, State, StopReason, View, ViewFields, state_hash


# -- the records ----------------------------------------------------------------------------------

class TornTail(BaseModel):
    """Bytes at the end of a journal that are not a complete line: a write cut short by a kill or
    a power loss. They are moved to `kept_at`, never silently dropped."""

    kept_at: str
    bytes: int
    after_line: int   # the number of complete lines kept in the journal
    text: str         # the first bytes, for the report (decoded leniently)



class _Record(BaseModel):
    # Lines written before a field existed still read; unknown fields of older lines are ignored.
    model_config = ConfigDict(extra="ignore")
    # Fields holding what a chooser or an error handed over, journaled as given (JSON where JSON can
    # hold it, else a bounded repr that says so), never coerced by a schema.
    raw_fields: ClassVar[tuple[str, ...]] = ()
    prev_record_sha256: str | None = None  # set by Journal.write
    record_sha256: str | None = None


class ResumeInfo(BaseModel):
    from_status: str
    from_detail: str
    session_started_at: str
    torn_tail: TornTail | None = None
    rebuilt_from_patches: int


class SetupRecord(_Record):
    """Who runs this session and on what: enough for a later resume to find everything again."""

    event: Literal["setup"] = "setup"
    run_id: str
    scenario: str
    manifest: str
    chooser: str
    chooser_spec: str | None = None
    seed: int | None = None
    sandbox: str
    image: str | None = None
    pid: int | None = None
    model: dict[str, Any] | None = None
    models_file: str | None = None
    max_cost: float | None = None   # --max-cost: what the run may spend (a resume keeps it)
    started_at: str
    environment_id: str | None = None
    pristine_tree_sha256: str | None = None
    protected_manifest_sha256: str | None = None
    resume: ResumeInfo | None = None


class StartRecord(_Record):
    event: Literal["start"] = "start"
    state_after: State
    state_after_hash: str
    u: int


class JournaledView(ViewFields):
    """The View a chooser was handed, with its evidence named by id (each item is journaled once, in
    the step that produced it). `view()` rebuilds exactly what the chooser saw. Every other field is
    the View's own (ViewFields): a field added to the View is journaled with it."""

    evidence_ids: tuple[str, ...] = ()
    # Journals written before evidence was named by id carry the items themselves.
    evidence: tuple[Evidence, ...] | None = None

    @classmethod
    def of(cls, view: View) -> "JournaledView":
        return cls(**view.view_fields(), evidence_ids=tuple(e.id for e in view.evidence))

    @model_serializer(mode="wrap")
    def _no_legacy_evidence(self, handler):
        data = handler(self)
        if data.get("evidence") is None:
            data.pop("evidence", None)
        return data

    def view(self, evidence: dict[str, Evidence]) -> View:
        if self.evidence is not None:
            return View(**self.view_fields(), evidence=self.evidence)
        return View(**self.view_fields(), evidence=tuple(evidence[i] for i in self.evidence_ids))


class Decision(BaseModel):
    """The controller's decision on a proposal: the validated action (typed, stored once), or the exit."""

    accepted: bool
    action: Action | None = None
    exit: StopReason | None = None
    error: str | None = None

    @field_validator("action", mode="before")
    @classmethod
    def _canonical_text(cls, value: Any) -> Any:
        # Journals written before actions were stored as data hold their canonical JSON text.
        return json.loads(value) if isinstance(value, str) else value

    @model_serializer(mode="wrap")
    def _only_what_applies(self, handler):
        # {"accepted": true, "action": ...} or {"accepted": false, "exit": ..., "error": ...}
        return {k: v for k, v in handler(self).items() if v is not None}


class StepRecord(_Record):
    """One step: state version -> the view shown -> the proposal (raw) -> the decision -> the result -> Uₜ."""

    raw_fields = ("proposal", "usage", "chooser_call")
    event: Literal["step"] = "step"
    step: int
    view: JournaledView
    proposal: Any = None
    usage: dict[str, Any] = {}
    chooser_call: Any = None
    state_before_hash: str
    decision: Decision
    result: Observation | None = None  # the evidence, its action being the decision's
    state_after: State
    state_after_hash: str
    u: int
    last_canonical: str | None = None   # what a resume needs for the repeat rule

    @model_serializer(mode="wrap")
    def _no_result_when_none(self, handler):
        data = handler(self)
        if data.get("result") is None:
            data.pop("result", None)  # a step that produced no observation has no result field
        return data

    @property
    def evidence(self) -> Evidence | None:
        if self.result is None or self.decision.action is None:
            return None
        return Evidence(**dict(self.result), action=self.decision.action.without_note())

    @property
    def tool(self) -> str:
        """A label for the proposal (the proposal itself is kept verbatim)."""
        tool = self.proposal.get("tool") if isinstance(self.proposal, dict) else None
        return tool[:60] if isinstance(tool, str) else "?"


class Reverified(BaseModel):
    evidence: str
    tool: str
    journaled_status: str
    status: str
    summary: str
    duration_s: float


class ResumeRecord(_Record):
    """A resume: the verdicts re-earned and the budget it grants, as a new version of B."""

    event: Literal["resume"] = "resume"
    checkpoint_status: str
    extra_steps: int
    deadline_s: float
    grants: list[dict[str, Any]] = []
    reoffer_of_step: int | None = None
    reverified: list[Reverified] = []
    state_before_hash: str
    state_after: State
    state_after_hash: str
    u: int


class GrantRecord(_Record):
    event: Literal["grant"] = "grant"
    grant: Grant
    waives: list[dict[str, Any]] = []
    state_before_hash: str
    state_after: State
    state_after_hash: str


class StopRecord(_Record):
    """The run's ending, from either writer (the controller, or a run that could not start)."""

    raw_fields = ("extra",)
    event: Literal["stop"] = "stop"
    status: StopReason
    detail: str
    next_attempt: str
    extra: dict[str, Any] = {}
    steps_used: int
    u_trajectory: list[int]
    diff_sha256: str
    state_after: State
    state_after_hash: str


class ManifestErrorRecord(_Record):
    """A scenario manifest that could not be read: the error, and its text kept whole."""

    event: Literal["manifest_error"] = "manifest_error"
    scenario: str
    error: str
    raw: str | None = None


JournalRecord = Annotated[Union[SetupRecord, StartRecord, StepRecord, ResumeRecord, GrantRecord, StopRecord,
                                ManifestErrorRecord], Field(discriminator="event")]
_records: TypeAdapter = TypeAdapter(JournalRecord)


def parse_record(line: dict[str, Any]) -> JournalRecord:
    return _records.validate_python(line)


def read_records(path: Path) -> list[JournalRecord]:
    """The journal as typed records (a line that is no record raises, naming it)."""
    records = []
    for number, line in enumerate(read_journal(path), 1):
        try:
            records.append(parse_record(line))
        except ValueError as exc:
            raise JournalError(f"{path}:{number}: not a journal record ({str(exc)[:300]})") from None
    return records


def evidence_by_id(records: list[JournalRecord]) -> dict[str, Evidence]:
    return {e.id: e for r in records if isinstance(r, StepRecord) and (e := r.evidence) is not None}


def last_stop(records: list[JournalRecord]) -> StopRecord | None:
    """The ending in force: a resumed run has one stop line per session, the last one counts."""
    return next((r for r in reversed(records) if isinstance(r, StopRecord)), None)


# -- writing --------------------------------------------------------------------------------------


class JournalError(ValueError):
    """A journal that does not read: a line that is not JSON, or not a journal record. Names the line."""


class JournalWriteError(OSError):
    """A line could not be written (disk full, read-only, I/O error). Every earlier line is intact:
    a partly written line is cut back off, so the file never ends in a torn line of ours."""


class Journal:
    def __init__(self, path: Path, *, last_record_sha256: str | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._last = last_record_sha256
        self.lines = 0  # complete lines this journal wrote

    @classmethod
    def reopen(cls, path: Path) -> "Journal":
        """Append to an existing journal: the next line chains to its last complete line."""
        records = list(read_journal(path))
        return cls(path, last_record_sha256=records[-1]["record_sha256"] if records else None)

    def write(self, typed: _Record) -> None:
        record = _plain(typed)
        try:  # what is written must read back: a record built without validation is refused here
            parse_record(record)
        except ValueError as exc:
            raise JournalError(f"{self.path}: a {record.get('event')} record that would not read back was not "
                               f"written ({str(exc)[:300]})") from None
        # Each line carries the hash of its own content and of the line before: editing any
        # field of any record (a proposal, a result, a view) breaks the chain, not just states.
        record = _json_safe({**record, "prev_record_sha256": self._last})
        # No secret reaches a line: everything but the state, whose hash the chain verifies (it holds
        # the goal, budget, conditions and the sandbox's observation, never a key or a server's text).
        record = {k: v if k == "state_after" else redact_data(v) for k, v in record.items()}
        body = _dumps(record)
        digest = hashlib.sha256(body).hexdigest()  # == record_hash(line as read back)
        # The line is the hashed body with its own hash appended as the last key (readers hash the
        # parsed object with sorted keys, so the key's place in the line does not matter).
        data = body[:-1] + f', "record_sha256": "{digest}"}}\n'.encode()
        if self._fd is None:
            raise JournalWriteError(f"{self.path}: the journal is closed")
        try:
            append_line(self._fd, data)  # a crash or a kill must not lose the step that explains it
        except OSError as exc:
            raise JournalWriteError(exc.errno, f"{self.path}: could not write line {self.lines + 1}: "
                                    f"{exc.strerror or exc}") from exc
        self._last = digest
        self.lines += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _plain(record: _Record) -> dict[str, Any]:
    """The record as one JSON object: typed fields as their schema dumps them, raw fields as given."""
    data = record.model_dump(mode="json", exclude={"prev_record_sha256", "record_sha256", *record.raw_fields})
    data.update({name: getattr(record, name) for name in record.raw_fields})
    return data


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
                              "repr": bounded_repr(value)}
    return safe


def _dumps(record: dict[str, Any]) -> bytes:
    """Canonical bytes: UTF-8 text, or all-ASCII escapes when the text holds a lone surrogate
    (which UTF-8 cannot carry). The same rule for writing and for verifying."""
    try:
        return json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        return json.dumps(record, sort_keys=True, ensure_ascii=True).encode("ascii")



def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    """The journal's lines as written (what the hash chain covers); read_records types them. A line
    that is not JSON, or a torn tail (set_aside_torn_tail moves one away), is an error naming it."""
    read = read_jsonl(path)
    if read.damaged:
        raise JournalError(f"{path}:{read.damaged[0]}: not a JSON line")
    if read.torn:
        raise JournalError(f"{path}:{len(read.lines) + 1}: not a JSON line (a torn last line: "
                         f"{read.size - read.tail_start} bytes)")
    yield from read.lines


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
        before = rec.get("state_before_hash")
        if before is not None and "state_before" not in rec and previous is not None and before != previous_digest:
            problems.append(f"{rec.get('event')} step {rec.get('step')}: state_before_hash {str(before)[:12]} "
                            f"is not the state the line before ended in (v{previous.get('version')})")
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


def set_aside_torn_tail(path: Path) -> TornTail | None:
    """Cut the journal back to its last complete line and keep what was cut in `journal.jsonl.torn-N`.

    Every line is written with its newline in one append, so bytes after the last newline were
    never completely written; a last line that ends in a newline but is not JSON (a block of
    garbage after a power loss) is torn too. Anything earlier that does not verify is not a tear:
    `verify_chain` reports it and nothing resumes from it."""
    path = Path(path)
    read = read_jsonl(path)
    if not read.torn:
        return None
    number = 1
    while path.with_name(f"{path.name}.torn-{number}").exists():
        number += 1
    kept = path.with_name(f"{path.name}.torn-{number}")
    tail = cut_torn_tail(path, read, keep_at=kept)
    return TornTail(kept_at=str(kept), bytes=len(tail), after_line=read.kept_lines,
                    text=tail[:200].decode("utf-8", errors="replace"))
