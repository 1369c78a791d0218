"""The verdict on one test run, as a pure function of plain data: the pristine baseline, the JUnit
cases the host read, the check process's record stream, the held-out results judged on the host,
and process facts the host observed. No container is needed to test it.

Three independent channels must agree before anything counts as passed: pytest's own report,
the guard's records of what the test functions really did (and of what the check process was
refused), and, where a scenario has them, held-out behaviour checks whose expected values never
entered the container.
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel

from .heldout import HeldoutResult
from .junit import TestCase
from .spec import nodeid_to_junit_key

Kind = Literal["target_test", "full_suite"]
GUARD_MARKER = "\x1eRA-GUARD "


class Baseline(BaseModel):
    """The pristine repository's test results: which ids exist and which already pass."""

    all_tests: list[str]
    target_keys: list[str]
    pass_to_pass: list[str]
    known_failing: list[str]
    target_failures: dict[str, str]
    # Skipped on the pristine tree (for its environment): may stay skipped, or pass, never fail.
    known_skipped: list[str] = []
    # True: the suite condition is the spec's pass-to-pass list (all_tests holds the targets and
    # the listed tests only); False: the whole suite.
    listed: bool = False


class BaselineError(ValueError):
    """The pristine tree's results contradict the acceptance spec: the scenario is unusable."""


def make_baseline(cases: list[TestCase], target_keys: list[str], listed: list[str] | None = None) -> Baseline:
    """The baseline from the pristine tree's test cases. `listed`: the pass-to-pass keys when the
    spec lists them (the run selected targets + these), None for the whole suite.

    A target must fail there (not pass, not skip). A listed pass-to-pass test must pass there, or
    be skipped (for this environment: it may stay skipped); one that fails or is not collected is
    a contradiction of the list, said as such, not a test the candidate may leave failing."""
    by_key = {c.key: c for c in cases}
    missing = [t for t in target_keys if t not in by_key]
    if missing:
        raise BaselineError(f"target tests not collected on the pristine repository: {missing}")
    already = [t for t in target_keys if by_key[t].outcome == "passed"]
    if already:
        raise BaselineError(f"target tests already pass on the pristine repository: {already}")
    skipped = [t for t in target_keys if by_key[t].outcome == "skipped"]
    if skipped:
        raise BaselineError(f"target tests are skipped on the pristine repository (a target must fail there): {skipped}")
    if listed is not None:
        absent = [k for k in listed if k not in by_key]
        if absent:
            raise BaselineError(f"pass-to-pass tests not collected on the pristine repository: {absent[:10]}")
        failing = [k for k in listed if k not in target_keys and by_key[k].outcome in ("failed", "error")]
        if failing:
            raise BaselineError("pass-to-pass tests fail on the pristine repository: "
                                + "; ".join(f"{k} [{by_key[k].message[:200]}]" for k in failing[:5]))
    keys = sorted(by_key)
    return Baseline(
        all_tests=keys, target_keys=list(target_keys),
        pass_to_pass=sorted(k for k in keys if by_key[k].outcome == "passed"),
        known_failing=sorted(k for k in keys if by_key[k].outcome in ("failed", "error") and k not in target_keys),
        known_skipped=sorted(k for k in keys if by_key[k].outcome == "skipped" and k not in target_keys),
        target_failures={t: by_key[t].message for t in target_keys}, listed=listed is not None)


class ProcessFacts(BaseModel):
    """What the host itself saw of the test process."""

    exit_code: int | None
    timed_out: bool = False
    root: str                           # where the candidate tree was mounted
    leftover_processes: list[str] = []  # processes still alive in the container after the run
    result_problem: str | None = None   # the JUnit file could not be read safely


class GuardRecords(BaseModel):
    """The check process's record stream, parsed (see boot.py)."""

    records: list[dict[str, Any]] = []
    malformed: int = 0

    @classmethod
    def parse(cls, stream: str) -> "GuardRecords":
        records, malformed = [], 0
        for line in stream.split("\n"):  # not splitlines(): it also splits at the marker's \x1e
            if not line.startswith(GUARD_MARKER):
                continue
            try:
                rec = json.loads(line[len(GUARD_MARKER):])
            except json.JSONDecodeError:
                malformed += 1
                continue
            if isinstance(rec, dict) and isinstance(rec.get("kind"), str):
                records.append(rec)
            else:
                malformed += 1
        return cls(records=records, malformed=malformed)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == kind]


class Judgement(BaseModel):
    ok: bool
    targets_ok: bool
    problems: list[str]
    failing: dict[str, str]
    missing: list[str]
    unexpected: list[str]
    collected: int
    passed: int
    correctness: Literal["correct", "plausible", "unchecked"] | None = None


def guard_doubts(guard: GuardRecords, facts: ProcessFacts) -> list[str]:
    """Everything in the record stream that casts doubt on the run, whatever pytest reported."""
    doubts = []
    starts, exits = guard.of("start"), guard.of("exit")
    if len(starts) != 1 or not guard.records or guard.records[0].get("kind") != "start":
        doubts.append(f"the check process did not start exactly once under the verifier's boot ({len(starts)} start records)")
    else:
        start = starts[0]
        if start.get("cwd") != facts.root:
            doubts.append(f"tests ran in {str(start.get('cwd'))[:200]!r}, not in the candidate tree {facts.root!r}")
    pids = {r.get("pid") for r in guard.records}
    if len(pids) > 1:
        doubts.append(f"records came from {len(pids)} processes (re-execution or a forged stream)")
    seqs = [r.get("seq") for r in guard.records]
    if seqs != list(range(1, len(seqs) + 1)):
        doubts.append("the record stream is out of order or has forged lines")
    if guard.malformed:
        doubts.append(f"{guard.malformed} malformed guard record(s)")
    if len(exits) != 1 or (guard.records and guard.records[-1].get("kind") != "exit"):
        doubts.append("the check process did not end through the verifier's boot (os._exit, a crash or a kill)")
    elif not facts.timed_out and exits[0].get("code") != facts.exit_code:
        doubts.append(f"the exit code the host saw ({facts.exit_code}) is not pytest's ({exits[0].get('code')})")
    if not guard.of("finished"):
        doubts.append("the verifier's pytest guard did not see the session end")
    for rec in guard.of("collected")[:1]:
        if rec.get("rootdir") != facts.root:
            doubts.append(f"pytest's rootdir was {str(rec.get('rootdir'))[:200]!r}, not {facts.root!r}")
    for rec in guard.of("refused")[:3]:
        doubts.append(f"the check process refused {rec.get('event')} from {str(rec.get('origin'))[:120]} "
                      f"({rec.get('why')})")
    if len(guard.of("refused")) > 3:
        doubts.append(f"... {len(guard.of('refused')) - 3} more refusal(s)")
    changes = guard.of("integrity")
    if changes:
        doubts.append("the test runner was altered during the run: "
                      + "; ".join(str(r.get("change"))[:150] for r in changes[:3]))
    lying = guard.of("value_type")
    if lying:
        doubts.append("candidate code made built-in value types that override comparisons or conversions: "
                      + "; ".join(str(r.get("detail"))[:150] for r in lying[:3]))
    if facts.leftover_processes:
        doubts.append(f"{len(facts.leftover_processes)} process(es) outlived the test run: "
                      + "; ".join(facts.leftover_processes[:3]))
    if facts.result_problem:
        doubts.append(facts.result_problem)
    return doubts


def judge(kind: Kind, baseline: Baseline, cases: list[TestCase], junit_problem: str | None,
          guard: GuardRecords | None, facts: ProcessFacts | None, heldout: HeldoutResult | None,
          *, known_failing_exit_ok: bool = True) -> Judgement:
    """Two kinds of problems: test failures, and doubts about the run's integrity. The target
    condition holds only when the targets passed, the held-out checks passed (where the scenario
    has them) AND nothing casts doubt on the run."""
    doubts = [junit_problem] if junit_problem else []
    by_key: dict[str, TestCase] = {}
    for case in cases:
        if case.key in by_key:
            doubts.append(f"test reported twice: {case.key}")
        by_key[case.key] = case
    expected_ids = set(baseline.target_keys) if kind == "target_test" else set(baseline.all_tests)
    missing = sorted(expected_ids - by_key.keys())
    unexpected = sorted(by_key.keys() - expected_ids)
    if missing:
        doubts.append(f"{len(missing)} protected test(s) not reported (missing, deselected): {missing[:5]}")
    if unexpected:
        doubts.append(f"{len(unexpected)} unknown test(s) reported: {unexpected[:5]}")
    if facts is not None and facts.timed_out:
        doubts.append("pytest timed out")
    must_pass = set(baseline.target_keys) | (set(baseline.pass_to_pass) if kind == "full_suite" else set())
    if guard is not None:
        doubts += guard_doubts(guard, facts) if facts is not None else []
        calls: dict[str, list] = {}
        for rec in guard.of("call"):
            calls.setdefault(nodeid_to_junit_key(str(rec.get("nodeid"))), []).append(rec.get("raised"))
        forged = sorted(k for k in must_pass if k in by_key and by_key[k].outcome == "passed" and calls.get(k) != [None])
        if forged:
            doubts.append(f"{len(forged)} test(s) reported passed although the test function raised or never ran "
                          f"(report rewriting): " + "; ".join(f"{k} {calls.get(k)}" for k in forged[:3]))
    if heldout is not None and not heldout.ok:
        doubts.append(heldout.summary + " (behaviour on inputs the visible tests do not use)")

    failures = []
    failing = {k: f"{by_key[k].outcome}: {by_key[k].message}" for k in sorted(must_pass & by_key.keys())
               if by_key[k].outcome != "passed"}
    if kind == "full_suite":
        failing.update({k: f"{by_key[k].outcome} (skipped on the pristine tree): {by_key[k].message}"
                        for k in baseline.known_skipped if k in by_key and by_key[k].outcome in ("failed", "error")})
    if failing:
        failures.append(f"{len(failing)} test(s) not passing: "
                        + "; ".join(f"{k} [{v}]" for k, v in list(failing.items())[:3]))
    exit_code = facts.exit_code if facts else None
    allowed_exit = {0} if kind == "target_test" or not baseline.known_failing or not known_failing_exit_ok else {0, 1}
    if facts is not None and not facts.timed_out and exit_code not in allowed_exit:
        failures.append(f"pytest exit code {exit_code}")
    targets_passed = all(k in by_key and by_key[k].outcome == "passed" for k in baseline.target_keys)
    problems = doubts + failures
    visible_ok = targets_passed and not failing and not missing
    correctness: Literal["correct", "plausible", "unchecked"] | None = None
    if visible_ok:
        correctness = "unchecked" if heldout is None else ("correct" if heldout.ok else "plausible")
    return Judgement(ok=not problems, targets_ok=targets_passed and not doubts, problems=problems, failing=failing,
                     missing=missing, unexpected=unexpected, collected=len(cases),
                     passed=sum(c.outcome == "passed" for c in cases), correctness=correctness)
