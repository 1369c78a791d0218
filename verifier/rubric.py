"""Evidence completeness of a finished run, read from its journal alone.

Computed on the verifier side, apart from the controller: the controller decides a run's exit,
this rubric independently asks whether the journal holds the observations an engineer would
want before trusting that exit. It reads the journal through its own minimal typed view of the
lines it needs (steps' results and stops) and imports nothing from `repair_agent`, so a bug in the
controller cannot make its own evidence look complete. A resumed run has one stop per session:
the last one is the run's ending.

The four questions, each answered from step records (`result.tool`, `result.status`,
`result.diff_sha256`, `result.data`):
  target_failed_before_patch  a target-test run that failed, observed before the first applied patch
  target_passed_on_final_diff a passing target-test run on the diff the run ended with, or a
                              full-suite run on it whose verdict has the target tests passing (the
                              suite runs them under the same guard, as Uₜ's target condition counts)
  full_suite_on_final_diff    a full-suite run (any outcome) on the diff the run ended with
  scope_check_on_final_diff   a scope check (any outcome) on the diff the run ended with
A run that never patched ends on the empty diff: "final diff" checks then refer to it.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable, Literal, Union

from pydantic import BaseModel, ConfigDict, TypeAdapter

from .files import read_jsonl

EMPTY_DIFF_SHA256 = hashlib.sha256(b"").hexdigest()
ITEMS = ("target_failed_before_patch", "target_passed_on_final_diff", "full_suite_on_final_diff",
         "scope_check_on_final_diff")


class EvidenceRubric(BaseModel):
    target_failed_before_patch: bool
    target_passed_on_final_diff: bool
    full_suite_on_final_diff: bool
    full_suite_passed_on_final_diff: bool
    scope_check_on_final_diff: bool
    final_diff_sha256: str
    patched: bool            # did any patch apply at all
    observations: int        # step records that produced a tool result
    complete: bool           # all four ITEMS hold

    @property
    def missing(self) -> list[str]:
        return [item for item in ITEMS if not getattr(self, item)]


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tool: str
    status: str
    diff_sha256: str
    data: dict[str, Any] = {}


class _Step(BaseModel):
    model_config = ConfigDict(extra="ignore")
    event: Literal["step"]
    result: _Result | None = None


class _Stop(BaseModel):
    model_config = ConfigDict(extra="ignore")
    event: Literal["stop"]
    diff_sha256: str | None = None


class _Other(BaseModel):
    model_config = ConfigDict(extra="ignore")
    event: str


_line: TypeAdapter = TypeAdapter(Union[_Step, _Stop, _Other])


def read_records(path: Path) -> list[dict[str, Any]]:
    """The journal's complete JSON lines; a torn last line (a run killed mid-write) is left out."""
    return read_jsonl(path).lines


def rubric_from_records(records: Iterable[dict[str, Any]]) -> EvidenceRubric:
    lines = [_line.validate_python(r) for r in records]
    results = [r.result for r in lines if isinstance(r, _Step) and r.result is not None]
    stop = next((r for r in reversed(lines) if isinstance(r, _Stop)), None)  # the last session's ending
    # The diff the run ended with: the stop record's, else the last diff any result was made on.
    final = (stop.diff_sha256 if stop else None) or (results[-1].diff_sha256 if results else None) \
        or EMPTY_DIFF_SHA256

    def on_final(tool: str) -> list[_Result]:
        return [r for r in results if r.tool == tool and r.diff_sha256 == final]

    first_patch = next((i for i, r in enumerate(results) if r.tool == "apply_patch" and r.status == "ok"),
                       len(results))
    failed_before = any(r.tool == "run_target_test" and r.status == "failed" and not r.data.get("apply_error")
                        for r in results[:first_patch])
    suite_runs = on_final("run_full_suite")
    target_passed = any(r.status == "ok" for r in on_final("run_target_test")) \
        or any(r.data.get("targets_ok") is True for r in suite_runs)
    scope_checks = on_final("check_diff")
    items = {"target_failed_before_patch": failed_before, "target_passed_on_final_diff": target_passed,
             "full_suite_on_final_diff": bool(suite_runs), "scope_check_on_final_diff": bool(scope_checks)}
    return EvidenceRubric(**items, full_suite_passed_on_final_diff=any(r.status == "ok" for r in suite_runs),
                          final_diff_sha256=final, patched=first_patch < len(results),
                          observations=len(results), complete=all(items.values()))


def rubric_from_journal(path: Path) -> EvidenceRubric:
    return rubric_from_records(read_records(Path(path)))
