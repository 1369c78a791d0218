"""The corpus check: every scenario is what its manifest says it is.

For one scenario, with the real verifier: the buggy tree fails exactly the manifest's target
tests (and nothing else), and the reference fix kept next to the manifest makes the target
and the full suite pass inside the writable scope. A scenario whose expected outcome is a
handoff is checked the other way round: its reference fix must lie OUTSIDE the writable
scope, and (verified under a widened scope) it must still be the fix.

Skips follow the verifier's one rule: a test skipped on the pristine (buggy) tree for its
environment may stay skipped, and is listed, not counted as a failure; a test that passed there and
skips with the reference fix fails the check, like any test that stops passing.

Only this check reads `reference_fix`; it is never copied into a workspace or shown to a chooser.
`repair-agent check` and tests/test_corpus.py both call `check_corpus`.
"""
from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

from pydantic import BaseModel

from verifier import Verifier
from verifier.junit import collection_error_for
from verifier.spec import nodeid_to_junit_key

from ..sandbox.backends import Backend, backend_named
from .scenario import Scenario


class CorpusCheck(BaseModel):
    scenario: str
    repo: str
    kind: str
    expected: str
    ok: bool
    problems: list[str]
    # Each part of the verdict on its own; None: not reached (an earlier step could not run).
    buggy_tree_ok: bool | None = None      # the buggy tree fails exactly the targets and nothing else
    reference_fix_ok: bool | None = None   # with the reference fix the targets and the full suite pass
    scope_ok: bool | None = None           # the fix is inside the writable scope (outside, for a handoff)
    target_failures: dict[str, str] = {}
    known_failing: list[str] = []
    uncollectable: dict[str, str] = {}     # module (dotted) -> pytest's cause, no target in it
    reference_grants: list[str] = []       # what a candidate making the reference fix would need granted
    skipped_on_pristine: list[str] = []    # allowed to stay skipped: listed so a reader sees them
    collected: int = 0
    wall_s: float = 0.0


def broken_manifest(name: str, error: str) -> CorpusCheck:
    """A manifest that does not load is a failed check, reported with the others."""
    return CorpusCheck(scenario=name, repo="", kind="broken", expected="", ok=False,
                       problems=[f"manifest: {error}"])


def check_corpus(scenarios: Iterable[Scenario], state_dir: Path, *, workers: int = 2,
                 on_result: Callable[[CorpusCheck], None] | None = None, **kwargs) -> list[CorpusCheck]:
    """check_scenario for each scenario, `workers` at a time, in the given order. `kwargs` go to
    check_scenario (backend, client, image)."""
    def one(scenario: Scenario) -> CorpusCheck:
        result = check_scenario(scenario, Path(state_dir) / scenario.name, **kwargs)
        if on_result:
            on_result(result)
        return result

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return list(pool.map(one, scenarios))


def check_scenario(scenario: Scenario, state_dir: Path, *, backend: Backend | str = "docker",
                   client=None, image: str | None = None,
                   log: Callable[[str], None] = lambda m: None) -> CorpusCheck:
    """`backend`: the sandbox backend (or its name) whose checks the verifier runs; `client` and
    `image` its engine and the sandbox image, for a scenario without an environment of its own."""
    t0 = time.monotonic()
    backend = backend_named(backend)
    checks_on = backend.checks_on
    result = dict(scenario=scenario.name, repo=(scenario.source_repo or scenario.repo).name, kind=scenario.kind,
                  expected=scenario.expected)

    with contextlib.ExitStack() as verifiers:  # each closed at the end: no pooled container outlives the check
        def verifier(spec, name: str) -> Verifier:
            # A pool of one: its checks come one after another, so a second container made ahead
            # would only be removed unused at the end (a third more containers for nothing).
            return verifiers.enter_context(Verifier(spec, scenario.repo, Path(state_dir) / name, backend=checks_on,
                                                    client=client, image=image, pool_size=1,
                                                    **scenario.verifier_inputs()))

        if scenario.environment is not None:
            from ..sandbox.environment import EnvironmentBuildError

            try:  # the scenario's own environment, as its runs see it (built once, then cached)
                image = backend.image(client, scenario, log=log)
            except EnvironmentBuildError as exc:
                return CorpusCheck(**result, ok=False, problems=[f"environment: {exc}"],
                                   wall_s=round(time.monotonic() - t0, 2))

        try:
            return _check(scenario, verifier, result, t0)
        except Exception as exc:  # engine trouble mid-check: this scenario fails, the others go on
            return CorpusCheck(**result, ok=False, problems=[f"check: {type(exc).__name__}: {str(exc)[:500]}"],
                               wall_s=round(time.monotonic() - t0, 2))


def _check(scenario: Scenario, verifier, result: dict, t0: float) -> CorpusCheck:
    problems: list[str] = []
    try:
        main = verifier(scenario.spec, "as-declared")
        baseline = main.prepare()
    except Exception as exc:  # ScenarioError (targets already pass / not collected), engine trouble
        return CorpusCheck(**result, ok=False, problems=[f"prepare: {type(exc).__name__}: {exc}"],
                           wall_s=round(time.monotonic() - t0, 2))
    # Tests skipped on the pristine tree (for its environment) may stay skipped: listed, not failed.
    skipped = sorted(baseline.known_skipped)
    failing = list(baseline.known_failing)
    result.update(target_failures=baseline.target_failures, known_failing=failing, skipped_on_pristine=skipped,
                  collected=len(baseline.all_tests))
    declared = sorted(nodeid_to_junit_key(t) for t in scenario.spec.target_tests)
    if sorted(baseline.target_failures) != declared:
        problems.append(f"the buggy tree fails {sorted(baseline.target_failures)}, the manifest declares {declared}")
    known = set(scenario.known_failing)
    if set(failing) - known:
        problems.append(f"tests other than the targets fail on the buggy tree: {sorted(set(failing) - known)}")
    # A module no target is in that cannot be imported on the buggy tree (a missing dependency): its
    # tests fail there too, in pytest's words.
    unimported = {path: cause for path, cause in baseline.collection_errors.items()
                  if not any(collection_error_for(t, {path: cause}) for t in declared)}
    result["uncollectable"] = unimported
    unimported = {path: cause for path, cause in unimported.items() if f"::{path}" not in known}
    if unimported:
        problems.append("test modules cannot be collected on the buggy tree: "
                        + "; ".join(f"{path} [collection error: {cause}]" for path, cause in unimported.items()))
    result["buggy_tree_ok"] = not problems
    if scenario.reference_fix is None:
        problems.append("no reference_fix")
        return CorpusCheck(**result, ok=False, problems=problems, wall_s=round(time.monotonic() - t0, 2))
    fix = scenario.reference_fix.read_bytes().decode("utf-8", errors="surrogateescape")  # CRLF trees keep their CRs
    scope = main.check_scope(fix)
    if scenario.expected == "awaiting_release_confirmation":
        result["scope_ok"] = scope.ok
        if not scope.ok:
            problems.append(f"the reference fix is out of the writable scope: {scope.violations}")
        judge = main
    else:
        # A handoff scenario: the fix must need a grant the manifest does not give ...
        result["scope_ok"] = not scope.ok
        if scope.ok:
            problems.append("expected a handoff, but the reference fix lies inside the writable scope")
        # ... and it must still be THE fix, verified with the scope widened to every unprotected file.
        widened = scenario.spec.model_copy(update={"writable": ("**",)})
        judge = verifier(widened, "widened")
        judge.prepare()
    # The reference fix is the project's own: what the gate would ask a person to grant in a
    # candidate (a fix that reads the clock) is granted for it, and said.
    findings = judge.review(fix)
    if not findings.ok:
        result["reference_grants"] = findings.grants_needed
        judge.granted = tuple(dict.fromkeys([*judge.granted, *findings.grants_needed]))
    result["reference_fix_ok"] = True
    for kind in ("target_test", "full_suite"):
        verdict = judge.run_tests(fix, kind)
        if not verdict.ok:
            result["reference_fix_ok"] = False
            problems.append(f"reference fix, {kind}: {'; '.join(verdict.problems)[:500]}")
        elif verdict.correctness == "plausible":  # its own held-out cases must agree with it
            result["reference_fix_ok"] = False
            problems.append(f"reference fix, {kind}: the behaviour checks disagree with it: "
                            f"{verdict.behaviour.summary if verdict.behaviour else '?'}"[:500])
    return CorpusCheck(**result, ok=not problems, problems=problems, wall_s=round(time.monotonic() - t0, 2))


def render_table(checks: list[CorpusCheck]) -> str:
    """One row per scenario, then each failing scenario's problems."""
    def mark(value: bool | None) -> str:
        return "-" if value is None else ("yes" if value else "NO")

    width = max([24, *(len(c.scenario) for c in checks)])
    head = (f"{'scenario':<{width}}  {'buggy fails targets only':<24}  {'reference fix passes':<20}  "
            f"{'scope':<5}  {'verdict':<7}  {'tests':>5}  {'wall':>6}")
    rows = [head]
    for c in checks:
        rows.append(f"{c.scenario:<{width}}  {mark(c.buggy_tree_ok):<24}  {mark(c.reference_fix_ok):<20}  "
                    f"{mark(c.scope_ok):<5}  {'ok' if c.ok else 'FAIL':<7}  {c.collected:>5}  {c.wall_s:>5.1f}s")
    bad = [c for c in checks if not c.ok]
    rows.append(f"{len(checks) - len(bad)}/{len(checks)} scenario(s) pass the corpus check")
    for c in bad:
        rows += [f"\n{c.scenario}:"] + [f"  - {p}" for p in c.problems]
    for c in checks:
        if c.reference_grants:
            rows.append(f"\n{c.scenario}: the reference fix needs a grant (a candidate making it would ask a person): "
                        + ", ".join(c.reference_grants))
        if c.skipped_on_pristine:
            rows.append(f"\n{c.scenario}: skipped on the buggy tree, may stay skipped: {', '.join(c.skipped_on_pristine)}")
    return "\n".join(rows)
