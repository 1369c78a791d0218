"""Evidence completeness of a finished run, read from its journal alone (seed 000).

Computed on the verifier side, apart from the controller: the controller decides a run's exit,
this rubric independently asks whether the journal holds the observations an engineer would
want before trusting that exit. It reads the journal as plain JSON lines and imports nothing
from `repair_agent`, so a bug in the controller cannot make its own evidence look complete.

The four questions, each answered from step records (`result.tool`, `result.status`,
`result.diff_sha256`, `result.data`):
  target_failed_before_patch  a target-test run that failed, observed before the first applied patch
  target_passed_on_final_diff a passing target-test run on the diff the run ended with
  full_suite_on_final_diff    a full-suite run (any outcome) on the diff the run ended with
  scope_check_on_final_diff   a scope check (any outcome) on the diff the run ended with
A run that never patched ends on the empty diff: "final diff" checks then refer to it.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel

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


def read_records(path: Path) -> list[dict[str, Any]]:
    """The journal's JSON lines; a torn last line (a run killed mid-write) is ignored."""
    records = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return records


def rubric_from_records(records: Iterable[dict[str, Any]]) -> EvidenceRubric:
    records = list(records)
    results = [r["result"] for r in records if r.get("event") == "step" and isinstance(r.get("result"), dict)]
    stop = next((r for r in records if r.get("event") == "stop"), None)
    # The diff the run ended with: the stop record's, else the last diff any result was made on.
    final = (stop or {}).get("diff_sha256") or (results[-1].get("diff_sha256") if results else None) \
        or EMPTY_DIFF_SHA256

    def on_final(tool: str) -> list[dict]:
        return [r for r in results if r.get("tool") == tool and r.get("diff_sha256") == final]

    first_patch = next((i for i, r in enumerate(results) if r.get("tool") == "apply_patch" and r.get("status") == "ok"),
                       len(results))
    failed_before = any(r.get("tool") == "run_target_test" and r.get("status") == "failed"
                        and not (r.get("data") or {}).get("apply_error") for r in results[:first_patch])
    target_passed = any(r.get("status") == "ok" for r in on_final("run_target_test"))
    suite_runs = on_final("run_full_suite")
    scope_checks = on_final("check_diff")
    items = {"target_failed_before_patch": failed_before, "target_passed_on_final_diff": target_passed,
             "full_suite_on_final_diff": bool(suite_runs), "scope_check_on_final_diff": bool(scope_checks)}
    return EvidenceRubric(**items, full_suite_passed_on_final_diff=any(r.get("status") == "ok" for r in suite_runs),
                          final_diff_sha256=final, patched=first_patch < len(results),
                          observations=len(results), complete=all(items.values()))


def rubric_from_journal(path: Path) -> EvidenceRubric:
    return rubric_from_records(read_records(Path(path)))
