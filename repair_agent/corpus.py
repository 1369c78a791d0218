"""The corpus check: every scenario is what its manifest says it is.

For one scenario, with the real verifier: the buggy tree fails exactly the manifest's target
tests (and nothing else), and the reference fix kept next to the manifest makes the target
and the full suite pass inside the writable scope. A scenario whose expected outcome is a
handoff is checked the other way round: its reference fix must lie OUTSIDE the writable
scope, and (verified under a widened scope) it must still be the fix.

Only this check reads `reference_fix`; it is never copied into a workspace or shown to a chooser.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from verifier import Verifier
from verifier.spec import nodeid_to_junit_key

from .scenario import Scenario


class CorpusCheck(BaseModel):
    scenario: str
    repo: str
    kind: str
    expected: str
    ok: bool
    problems: list[str]
    target_failures: dict[str, str] = {}
    known_failing: list[str] = []
    collected: int = 0
    wall_s: float = 0.0


def check_scenario(scenario: Scenario, state_dir: Path, *, backend: Literal["docker", "local"] = "docker",
                   client=None, image: str | None = None) -> CorpusCheck:
    t0 = time.monotonic()
    result = dict(scenario=scenario.name, repo=(scenario.source_repo or scenario.repo).name, kind=scenario.kind,
                  expected=scenario.expected)

    with contextlib.ExitStack() as verifiers:  # each closed at the end: no pooled container outlives the check
        def verifier(spec, name: str) -> Verifier:
            return verifiers.enter_context(Verifier(spec, scenario.repo, Path(state_dir) / name, backend=backend,
                                                    client=client, image=image, heldout=scenario.heldout))

        return _check(scenario, verifier, result, t0)


def _check(scenario: Scenario, verifier, result: dict, t0: float) -> CorpusCheck:
    problems: list[str] = []
    try:
        main = verifier(scenario.spec, "as-declared")
        baseline = main.prepare()
    except Exception as exc:  # ScenarioError (targets already pass / not collected), engine trouble
        return CorpusCheck(**result, ok=False, problems=[f"prepare: {type(exc).__name__}: {exc}"],
                           wall_s=round(time.monotonic() - t0, 2))
    result.update(target_failures=baseline.target_failures, known_failing=baseline.known_failing,
                  collected=len(baseline.all_tests))
    declared = sorted(nodeid_to_junit_key(t) for t in scenario.spec.target_tests)
    if sorted(baseline.target_failures) != declared:
        problems.append(f"the buggy tree fails {sorted(baseline.target_failures)}, the manifest declares {declared}")
    if baseline.known_failing:
        problems.append(f"tests other than the targets fail on the buggy tree: {baseline.known_failing}")
    if scenario.reference_fix is None:
        problems.append("no reference_fix")
        return CorpusCheck(**result, ok=False, problems=problems, wall_s=round(time.monotonic() - t0, 2))
    fix = scenario.reference_fix.read_text(encoding="utf-8")
    scope = main.check_scope(fix)
    if scenario.expected == "awaiting_release_confirmation":
        if not scope.ok:
            problems.append(f"the reference fix is out of the writable scope: {scope.violations}")
        judge = main
    else:
        # A handoff scenario: the fix must need a grant the manifest does not give ...
        if scope.ok:
            problems.append("expected a handoff, but the reference fix lies inside the writable scope")
        # ... and it must still be THE fix, verified with the scope widened to every unprotected file.
        widened = scenario.spec.model_copy(update={"writable": ("**",)})
        judge = verifier(widened, "widened")
        judge.prepare()
    for kind in ("target_test", "full_suite"):
        verdict = judge.run_tests(fix, kind)
        if not verdict.ok:
            problems.append(f"reference fix, {kind}: {'; '.join(verdict.problems)[:500]}")
    return CorpusCheck(**result, ok=not problems, problems=problems, wall_s=round(time.monotonic() - t0, 2))
