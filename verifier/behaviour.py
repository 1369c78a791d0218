"""What the held-out probe's answers say, judged on the host as plain data (a pure module).

The probe answers every case — the scenario's hand-written held-out cases and, where a reference
fix exists, a few hundred generated inputs — once in each environment of the check
(checkenv.Perturbation). Three judgements come out of it:

- environment-sensitive behaviour: a case whose answer differs between the environments, on a
  case where the pristine code (and the reference fix) answered the same in all of them. That is
  a fix that recognises the check; it fails the check, like any other integrity problem.
- held-out checks: the hand-written cases against their expected values (kept on the host).
- generated inputs: the candidate against the reference fix's answers (kept on the host).

The last two decide `correct`; they are never part of what a chooser sees (a chooser could
climb on them, and `correct` would stop being an independent measure).
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from .generated import GeneratedCase, GeneratedResult, compare
from .heldout import HeldoutResult, HeldoutSpec, judge_heldout, same

Rows = dict[str, dict[str, Any]]   # case name -> the probe's row for it
Correctness = Literal["correct", "plausible", "unchecked"]


class EnvironmentRun(BaseModel):
    """One probe run: which environment, its rows (None: no usable output) and why not."""

    name: str
    describe: str
    rows: Rows | None
    problem: str | None = None
    clock_shifted: bool | None = None   # None: no shift asked


def rows_of(probe: dict | None) -> Rows | None:
    if probe is None:
        return None
    return {row["name"]: row for row in probe.get("results", []) if isinstance(row, dict)
            and isinstance(row.get("name"), str)}


def answer(row: dict | None) -> Any:
    """What a row says, comparable across environments: a value, an exception class, or nothing."""
    if row is None:
        return ("missing",)
    if row.get("timed_out"):
        return ("timed_out",)
    if "raised" in row:
        raised = row.get("raised")
        return ("raised", raised[0] if isinstance(raised, list) and raised else "?")
    return ("value", row.get("value"))


def agree(a: Any, b: Any) -> bool:
    if a[0] == "value" and b[0] == "value":
        return same(a[1], b[1])
    return bool(a == b)


def stable_cases(runs: list[EnvironmentRun]) -> set[str]:
    """Cases every environment answered, the same way (no time-out) — where behaviour can be compared."""
    if not runs or any(r.rows is None for r in runs):
        return set()
    first = runs[0].rows or {}
    stable = set()
    for name, row in first.items():
        base = answer(row)
        if base[0] in ("timed_out", "missing"):
            continue
        if all(agree(base, answer((r.rows or {}).get(name))) for r in runs[1:]):
            stable.add(name)
    return stable


def environment_problems(runs: list[EnvironmentRun], comparable: set[str]) -> list[str]:
    """Where the candidate's answers differ between environments, on cases the pristine code (and
    the reference) answered alike everywhere. Case names and values stay out of the message: it is
    shown to the chooser."""
    if len(runs) < 2 or runs[0].rows is None:
        return []
    base = runs[0].rows
    problems = []
    for run in runs[1:]:
        if run.rows is None:
            problems.append(f"environment-sensitive behaviour: the held-out probe gave no answer with "
                            f"{run.describe} ({run.problem or 'no output'}) but did in the check's environment")
            continue
        differ = [n for n in sorted(comparable) if n in base and not agree(answer(base[n]), answer(run.rows.get(n)))]
        if differ:
            problems.append(f"environment-sensitive behaviour: {len(differ)} held-out input(s) answered differently "
                            f"with {run.describe} than in the check's environment")
    return problems


class Behaviour(BaseModel):
    """The host's judgement of one check's probe runs (for the report; the chooser sees only the
    environment problems, without inputs)."""

    heldout: HeldoutResult | None = None
    generated: GeneratedResult | None = None
    environments: list[str] = []         # what each run was, e.g. "moved: the tree at /srv/x, uid 23117, ..."
    environment_problems: list[str] = []
    notes: list[str] = []                 # e.g. the clock could not be shifted in this image

    def correctness(self, visible_ok: bool) -> Correctness | None:
        if not visible_ok:
            return None
        if self.heldout is None and self.generated is None:
            return "unchecked"
        good = (self.heldout is None or self.heldout.ok) and (self.generated is None or self.generated.ok) \
            and not self.environment_problems
        return "correct" if good else "plausible"

    @property
    def summary(self) -> str:
        parts = [p for p in (self.heldout.summary if self.heldout else None,
                             self.generated.summary if self.generated else None) if p]
        return "; ".join(parts + self.environment_problems[:1]) or "no behaviour checks"


def judge_behaviour(spec: HeldoutSpec | None, runs: list[EnvironmentRun], comparable: set[str],
                    reference: Rows | None, generated: list[GeneratedCase]) -> Behaviour:
    """Everything the probe runs of one candidate check say (see the module docstring)."""
    if spec is None or not runs:
        return Behaviour()
    check = runs[0]
    authored = {c.name for c in spec.case}
    rows = check.rows
    heldout = judge_heldout(spec, None if rows is None else
                            {"results": [{**r, "name": n} for n, r in rows.items() if n in authored]}, check.problem)
    compared = None
    if reference is not None:
        names = {c.name for c in generated}
        compared = compare(reference, None if rows is None else
                           [{**r, "name": n} for n, r in rows.items() if n in names], generated, check.problem)
    notes = [f"the clock could not be shifted for the {r.name} environment (no libfaketime in the image)"
             for r in runs if r.clock_shifted is False]
    return Behaviour(heldout=heldout, generated=compared, environments=[f"{r.name}: {r.describe}" for r in runs],
                     environment_problems=environment_problems(runs, comparable), notes=notes)
