"""Running the protected tests on a candidate diff, in a fresh tree and a fresh container.

SWE-bench's lesson, kept strictly: the diff is applied to the verifier's own pristine copy,
protected files are restored from that copy and added test infrastructure is refused. Canary
tests are added to the copy (canary.py); pytest then runs as a person's `python -m pytest` would,
at an ordinary path that changes every check (checkrun.py, checkenv.py); the host reads the JUnit
file through the engine after every process of the check has ended, then the held-out probe
answers in each environment of the check, and the pure judges (judge.py, behaviour.py) decide.

What a candidate adds is read before any of this runs (gate.py); nothing here trusts a guard
inside the process that runs candidate code.

Kept in one module: set-up (snapshot, pool, baseline, reference answers) and the per-check
sequence are one protocol, read top to bottom; the mechanics in a container (checkrun.py), the
candidate tree (candidate_tree.py) and the judges (judge.py, behaviour.py) live apart.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from .baseline import baseline_cache_path, load_cached_baseline, store_cached_baseline
from .behaviour import Behaviour, EnvironmentRun, judge_behaviour, stable_cases
from . import canary
from .heldout import PROBE_SOURCE, HeldoutResult, HeldoutSpec
from .checkenv import CheckLayout, Perturbation
from .checkrun import DockerCheck, LocalCheck, SuiteRun, probe_request
from .generated import (CASE_TIMEOUT_S, REFERENCE_CASE_TIMEOUT_S, GeneratedCase, generate_cases, reference_rows,
                        seed_for)
from .isolation import CommandResult, HardenedContainer, KeepBudget, Limits, LocalRunner, container_user
from .judge import Baseline, BaselineError, Kind, ProcessFacts, judge, make_baseline
from .junit import TestCase, collection_cause, collection_error_for
from .pool import CheckPool, FreshCheck, PoolKey
from .candidate_tree import apply_diff, restore_protected
from .scope import ScopeVerdict, check_scope, diff_sha256
from .spec import (AcceptanceSpec, ProtectedSnapshot, nodeid_to_junit_key, sha256_file, tree_sha256)
from .trees import copy_tree

# The modules whose code decides how a check runs: a pooled check or a cached baseline made under
# other code is not used.
CHECK_CODE = tuple(Path(__file__).with_name(n) for n in ("probe.py", "checkenv.py", "checkrun.py", "canary.py",
                                                          "generated.py", "behaviour.py", "runner.py", "junit.py",
                                                          "judge.py"))
PRISTINE_LABEL = "org.repair-agent.pristine-sha256"
IMPORT_ROOTS_LABEL = "org.repair-agent.import-roots"  # set by repair_agent's environment builds
# A screening check's per-test limit (run_tests(screen=True)): this many times the pristine suite's
# slowest test, never under SCREEN_FLOOR_S (a loaded machine's start-up is not a hang).
SCREEN_FACTOR, SCREEN_FLOOR_S = 5.0, 3.0
T = TypeVar("T")


class ScenarioError(RuntimeError):
    """The scenario itself is unusable (e.g. its target test already passes on the pristine repo)."""


class VerifierCompromised(RuntimeError):
    """The verifier's own pristine copy changed: nothing it says can be trusted any more."""


class TestVerdict(BaseModel):
    __test__ = False  # not a pytest test class
    kind: Kind
    diff_sha256: str
    protected_manifest_sha256: str
    ok: bool
    targets_ok: bool
    problems: list[str]
    exit_code: int | None = None
    timed_out: bool = False
    collected: int = 0
    passed: int = 0
    failing: dict[str, str] = {}
    missing: list[str] = []
    unexpected: list[str] = []
    restored: list[str] = []
    refused: list[str] = []
    apply_error: str | None = None
    canaries: int = 0                       # canary tests this check added (0: none could be placed)
    # What the held-out probe said: held-out cases, generated inputs against the reference fix, and
    # the environments. For the person's report and the run's records; never the chooser's view.
    behaviour: Behaviour | None = None
    # correct: visible tests, held-out checks and generated inputs agree; plausible: only the visible
    # tests pass; unchecked: the scenario has neither held-out checks nor a reference fix.
    correctness: Literal["correct", "plausible", "unchecked"] | None = None
    behaviour_file: str | None = None       # the Behaviour, on the host, for the report
    pytest: CommandResult | None = None
    duration_s: float = 0.0

    @property
    def summary(self) -> str:
        if self.ok:
            return f"{self.kind}: {self.passed}/{self.collected} passed"
        return f"{self.kind}: FAILED ({'; '.join(self.problems[:3])})"

    @property
    def heldout(self) -> HeldoutResult | None:
        return self.behaviour.heldout if self.behaviour else None


class Verifier:
    """The protected referee of one run. It imports nothing from the agent side."""

    def __init__(self, spec: AcceptanceSpec, pristine: Path, state_dir: Path, *,
                 backend: Literal["docker", "local"] = "docker", client=None, image: str | None = None,
                 limits: Limits | None = None, heldout: Path | None = None, cache_dir: Path | None = None,
                 granted: tuple[str, ...] = (), labels: dict[str, str] | None = None,
                 pool_size: int = 2, pool_max_idle_s: float = 300.0, reference_diff: str | None = None,
                 repo_name: str | None = None, keep_budget: KeepBudget | None = None):
        self.spec, self.pristine, self.state_dir = spec, Path(pristine), Path(state_dir)
        # Paths a person allowed this run to edit, and constructs of the diff a person allowed
        # ("code:" keys of gate findings). They widen what may be patched, never the suite:
        # protected files are still restored from the verifier's copy before any test runs.
        self.granted = tuple(granted)
        self.backend, self.client, self.image = backend, client, image
        # A check's container gets two cores where there are two: pytest takes one while the perturbed
        # environments' probes use the other (nothing else runs during a check).
        self.limits = limits or Limits(cpus=float(min(2, os.cpu_count() or 1)))
        self.keep_budget = keep_budget or KeepBudget(self.limits.run_keep_cap)
        # Held-out checks: loaded here, kept in this process; only their inputs enter a container.
        self.heldout = HeldoutSpec.load(Path(heldout)) if heldout else None
        # The reference fix: its answers to generated inputs are what a candidate is compared with.
        self.reference_diff = reference_diff if reference_diff and reference_diff.strip() else None
        self.generated: list[GeneratedCase] = (generate_cases(self.heldout, seed=seed_for(self.heldout))
                                               if self.heldout is not None and self.reference_diff else [])
        self.repo_name = repo_name or self.pristine.name
        self.cache_dir = cache_dir
        self.labels = dict(labels or {})  # extra container labels, e.g. the run id cleanup selects by
        self.cache_note: str | None = None  # why a cached baseline was not trusted, when it was not
        self.snapshot: ProtectedSnapshot | None = None
        self._environment_id: str | None = None
        self.baseline: Baseline | None = None
        self.slowest_test_s: float | None = None  # the pristine suite's slowest test (screening limits)
        self._gate_index: Any = None
        # Where a scenario environment's install put the tree's packages (relative, e.g. "src"): the
        # checks put these on the path at wherever the tree is placed (read from the image's label).
        self.import_roots: tuple[str, ...] = ()
        # Fresh checks made ahead of time (pool_size 0: each check makes its own on the spot).
        self.pool_size, self.pool_max_idle_s = pool_size, pool_max_idle_s
        self.pool: CheckPool | None = None
        self.pool_key: PoolKey | None = None
        if backend == "docker" and (client is None or image is None):
            raise ValueError("the docker backend needs a client and an image")

    def __enter__(self) -> "Verifier":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove every pooled container and wait for background removals; nothing stays behind."""
        if self.pool is not None:
            self.pool.close()

    # -- set-up -----------------------------------------------------------------------------
    def prepare(self) -> Baseline:
        """Snapshot the pristine repository, hash what is protected, and learn its test ids (and,
        with held-out checks, how the pristine tree and the reference fix answer them)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.pool is not None:
            self.pool.close()  # made for an earlier snapshot: none of them may serve this one
        self.snapshot = ProtectedSnapshot.capture(self.pristine, self.state_dir / "pristine", self.spec)
        self._start_pool()
        cache = baseline_cache_path(self.cache_dir, self._key) if self.cache_dir else None
        cached, self.cache_note = load_cached_baseline(cache, self._key, self.spec) if cache else (None, None)
        if cached is not None:
            self.baseline, self.slowest_test_s = cached.baseline, cached.slowest_test_s
            return self.baseline
        out = self._execute("", "full_suite", baseline=True)
        if out.problem:
            raise ScenarioError(f"the pristine repository's suite could not be run: {out.problem}"
                                + (f"\n{out.suite.result.stdout.text[-1500:]}\n{out.suite.result.stderr.text[-1500:]}"
                                   if out.suite and out.suite.result else ""))
        targets = [nodeid_to_junit_key(t) for t in self.spec.target_tests]
        listed = [nodeid_to_junit_key(t) for t in self.spec.pass_to_pass] if self.spec.pass_to_pass else None
        names = {nodeid_to_junit_key(t): t for t in (*self.spec.target_tests, *self.spec.pass_to_pass)}
        try:
            baseline = make_baseline(out.cases, targets, listed, names)
        except BaselineError as exc:
            raise ScenarioError(str(exc)) from None
        facts = out.facts
        usable = bool(out.canaries) and not out.canary_problems
        note = (None if usable else "no canary tests could be placed: "
                + ("the first target is not a test file in the tree" if not out.canaries
                   else "; ".join(out.canary_problems[:2])))
        comparable, reference, probe_note = set(), None, None
        if self.heldout is not None:
            # Environment sensitivity is judged where the pristine code (and the reference fix)
            # answered alike in every environment: what the user's own code does is not the candidate's.
            comparable = stable_cases(out.runs)
            if out.reference_runs:
                # (The pristine tree answers the held-out cases only: the reference answers the
                # generated inputs, the user's own code included.)
                stable = stable_cases(out.reference_runs)
                comparable = stable & (comparable | {c.name for c in self.generated})
                ref0, ref1 = ([{**row, "name": n} for n, row in (r.rows or {}).items()]
                              for r in (out.reference_runs * 2)[:2])  # the local backend has one environment
                reference = {n: row for n, row in reference_rows(ref0, ref1).items()
                             if n in stable and n in {c.name for c in self.generated}}
                if len(reference) < len(self.generated):
                    probe_note = (f"{len(self.generated) - len(reference)} of {len(self.generated)} generated inputs "
                                  "are not judged (the reference fix answered them differently between environments, "
                                  "or not at all)")
        self.baseline = baseline.model_copy(update={
            "canaries_usable": usable, "canary_note": note,
            "leaves_processes": bool(facts and facts.leftover_processes),
            "comparable": sorted(comparable), "reference_rows": reference, "probe_note": probe_note})
        self.slowest_test_s = max((c.seconds for c in out.cases if not c.collection), default=0.0)
        if cache:
            store_cached_baseline(cache, self._key, self._baseline, self.slowest_test_s)
        return self.baseline

    def _start_pool(self) -> None:
        """Begin making fresh checks in the background, for this snapshot, image and spec only."""
        heldout_hash = hashlib.sha256(self.heldout.model_dump_json().encode()).hexdigest() if self.heldout else ""
        setup = "\0".join([self.spec.model_dump_json(), heldout_hash, diff_sha256(self.reference_diff or ""),
                           *(sha256_file(f) for f in CHECK_CODE), self.limits.model_dump_json(), container_user()])
        self.pool_key = PoolKey(environment_id=self.environment_id,
                                pristine_tree_sha256=self._snap.tree_sha256,
                                setup_sha256=hashlib.sha256(setup.encode()).hexdigest())
        self.pool = CheckPool(self._make_check, self._why_unfit, size=self.pool_size,
                              max_idle_s=self.pool_max_idle_s)
        # One ahead for the first check; the rest once a diff is reviewed (review): many runs end
        # before any diff, and each check made for nothing costs a container's start and removal.
        self.pool.fill(1)

    def _make_check(self) -> FreshCheck:
        """A check's own pristine copy and probe, and a started container that has run nothing,
        laid out afresh (checkenv.CheckLayout); the local backend gets an output dir instead."""
        key = self._key
        work = self.state_dir / "checks" / uuid.uuid4().hex[:12]
        tree = work / "tree"
        copy_tree(Path(self._snap.root), tree)  # modes too
        for p in [tree, *tree.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() or p.stat().st_mode & 0o100 else 0o644)
        layout = CheckLayout.fresh(self.repo_name)
        tools = work / "tools"
        tools.mkdir()
        shutil.copyfile(PROBE_SOURCE, tools / layout.probe_name)
        tools.chmod(0o755)
        runner = self._runner(tree, tools, layout, key)
        if self.backend == "local":
            (work / "out").mkdir()
            return FreshCheck(work, key, runner, layout=layout)
        try:
            return FreshCheck(work, key, runner, started_at=runner.started_at(), layout=layout)
        except Exception:
            runner.close()
            raise

    def _why_unfit(self, check: FreshCheck) -> str | None:
        """Why a pooled check may not serve a check now (None: it may)."""
        if check.key != self.pool_key:
            return "made for another image, pristine tree or spec"
        actual = tree_sha256(check.tree)
        if actual != self._snap.tree_sha256 or check.key.pristine_tree_sha256 != self._snap.tree_sha256:
            return f"its tree ({actual[:12]}) is not the pristine tree ({self._snap.tree_sha256[:12]})"
        if self.backend == "docker":
            return check.runner.untouched(self.environment_id.removeprefix("docker:"), check.started_at)
        return None

    # The parts prepare() makes; using them earlier is a programming error, said as such.
    @property
    def _snap(self) -> ProtectedSnapshot:
        return _made(self.snapshot, "prepare() first")

    @property
    def _key(self) -> PoolKey:
        return _made(self.pool_key, "prepare() first")

    @property
    def _pool(self) -> CheckPool:
        return _made(self.pool, "prepare() first")

    @property
    def _baseline(self) -> Baseline:
        return _made(self.baseline, "prepare() first")

    @property
    def environment_id(self) -> str:
        """What the checks run on (the image's id, or the local interpreter), looked up once."""
        if self._environment_id is None:
            import sys

            if self.backend == "docker":
                image = self.client.images.get(self.image)
                self._environment_id = f"docker:{image.id}"
                self.import_roots = _import_roots((image.labels or {}).get(IMPORT_ROOTS_LABEL))
            else:
                self._environment_id = f"local:{sys.version.split()[0]}"
        return self._environment_id

    # -- checks -----------------------------------------------------------------------------
    def check_scope(self, diff: str) -> ScopeVerdict:
        return check_scope(diff, self.spec, granted=self.granted)

    def review(self, diff: str, granted: tuple[str, ...] | None = None):
        """What the diff adds, read before it runs (gate.py): findings a person must grant."""
        from .gate import PristineIndex, review

        if self.pool is not None:
            self.pool.fill()  # a diff to check may follow: its target tests and its suite, back to back
        if self._gate_index is None:
            self._gate_index = PristineIndex.build(self.pristine, self.spec)
        return review(diff, self.pristine, self.spec, granted=self.granted if granted is None else granted,
                      index=self._gate_index)

    def run_tests(self, diff: str, kind: Kind, *, screen: bool = False) -> TestVerdict:
        """One check of `diff`. `screen`: a chooser's screening of one of several candidates, whose
        verdict decides nothing: no held-out probe runs, and each test may take SCREEN_FACTOR times
        the pristine suite's slowest test (at least SCREEN_FLOOR_S, at most the spec's limit), so a
        candidate that hangs costs seconds, not the spec's limit per test it hangs."""
        assert self.snapshot and self.baseline, "prepare() first"
        started = time.monotonic()
        scope = check_scope(diff, self.spec, require_change=False, granted=self.granted)
        refused = [f"{v.path} ({v.rule})" for v in scope.violations]
        base: dict[str, Any] = dict(kind=kind, diff_sha256=diff_sha256(diff),
                    protected_manifest_sha256=self._snap.manifest_sha256)
        if refused:
            # Out-of-scope code is never executed: a shadowing module or a conftest could
            # otherwise run before any test and rewrite the verdict.
            return TestVerdict(**base, ok=False, targets_ok=False, refused=refused,
                               problems=[f"refused to run a diff that is out of scope: {refused[:5]}"],
                               duration_s=round(time.monotonic() - started, 4))
        if diff.strip():
            gate = self.review(diff)
            if not gate.ok:
                # Code that needs a person's grant is never executed either.
                needed = [f"{f.rule} at {f.path}:{f.line} ({f.construct})" for f in gate.findings]
                return TestVerdict(**base, ok=False, targets_ok=False, refused=needed,
                                   problems=[f"refused to run code that needs a grant: {needed[:5]}"],
                                   duration_s=round(time.monotonic() - started, 4))
        out = self._execute(diff, kind, screen=screen)
        verdict = self._judge(kind, out, base, screen)
        verdict.duration_s = round(time.monotonic() - started, 4)
        return verdict

    def _judge(self, kind: Kind, out: "CheckOutcome", base: dict, screen: bool = False) -> TestVerdict:
        behaviour = None
        integrity = list(out.canary_problems)
        if self.heldout is not None and not screen:   # a screening check runs no probe
            bl = self._baseline
            if not out.runs:  # the probe never ran (the diff did not apply, the suite ran out of time)
                why = "not run: " + (out.problem or ("the suite ran out of time" if out.facts and out.facts.timed_out
                                                     else "the check ended before it"))
                out.runs = [EnvironmentRun(name="check", describe="the check's environment", rows=None, problem=why)]
            behaviour = judge_behaviour(self.heldout, out.runs, set(bl.comparable), bl.reference_rows, self.generated)
            if bl.probe_note:
                behaviour.notes.append(bl.probe_note)
            integrity += behaviour.environment_problems
        if out.canaries == 0 and self._baseline.canary_note and behaviour is not None:
            behaviour.notes.append(self._baseline.canary_note)
        j = judge(kind, self._baseline, out.cases, out.problem, out.facts, integrity=integrity,
                  canary_failures=out.canary_failures)
        problems = list(out.problems) + j.problems
        clean = not out.problems
        visible_ok = j.visible_ok and not integrity and clean
        correctness = behaviour.correctness(visible_ok) if behaviour is not None else ("unchecked" if visible_ok else None)
        behaviour_file = None
        if behaviour is not None:
            behaviour_file = str(out.work / "behaviour.json")
            (out.work / "behaviour.json").write_text(json.dumps(
                {**behaviour.model_dump(mode="json"), "correctness": correctness}, indent=1))
        result = out.suite.result if out.suite else None
        if result is not None and out.placed:  # what the chooser reads of pytest's output: no canaries
            result = result.model_copy(update={"stdout": result.stdout.model_copy(
                update={"text": canary.scrub(result.stdout.text, out.placed)})})
        return TestVerdict(**base, ok=not problems, targets_ok=j.targets_ok and clean,
                           problems=problems, exit_code=result.exit_code if result else None,
                           timed_out=bool(result and result.timed_out), collected=j.collected, passed=j.passed,
                           failing=j.failing, missing=j.missing, unexpected=j.unexpected,
                           restored=out.restored, refused=out.refused, apply_error=out.apply_error,
                           canaries=out.canaries, behaviour=behaviour, behaviour_file=behaviour_file,
                           correctness=correctness, pytest=result)

    def _screen_per_test_s(self) -> float:
        limit = self.spec.check_per_test_timeout_s
        slowest = self.slowest_test_s
        if not limit or slowest is None:
            return limit
        return min(limit, max(SCREEN_FLOOR_S, SCREEN_FACTOR * slowest))

    # -- the mechanics of one verification ---------------------------------------------------
    def _execute(self, diff: str, kind: Kind, baseline: bool = False, screen: bool = False) -> "CheckOutcome":
        """Build the candidate tree, run pytest (and then the held-out probe, unless it is a screening
        check: nothing reads the probe's word on a screened candidate) on it."""
        if self._snap.check_intact():
            raise VerifierCompromised(f"protected pristine copy changed: {self._snap.check_intact()}")
        check = self._pool.take()
        try:
            return self._execute_in(check, diff, kind, baseline, screen)
        finally:
            self._pool.retire(check)  # one check per container: removed in the background

    def _probe_cases(self, baseline: bool, reference: bool = False) -> dict[str, Any] | None:
        """What the probe is asked: the held-out cases and the generated inputs. The pristine tree
        answers the held-out cases; the reference fix every generated input too, each with a tight
        limit (one the reference cannot answer quickly is not judged); a candidate those the reference
        answered, with four times that limit (a correct fix a little slower still answers)."""
        if self.heldout is None:
            return None
        cases: list[dict[str, Any]] = [{"name": c.name, "setup": c.setup, "expr": c.expr} for c in self.heldout.case]
        if reference or not baseline:
            kept = None if baseline else self._baseline.reference_rows
            cases += [{"name": g.name, "setup": g.setup, "expr": g.expr,
                       "timeout_s": REFERENCE_CASE_TIMEOUT_S if baseline else CASE_TIMEOUT_S}
                      for g in self.generated if kept is None or g.name in kept]
        request = probe_request(cases, list(self.heldout.paths), self.heldout.setup, root="")
        request.pop("root")
        return request

    def _execute_in(self, check: FreshCheck, diff: str, kind: Kind, baseline: bool,
                    screen: bool = False) -> "CheckOutcome":
        work, tree = check.work, check.tree
        (work / "check.json").write_text(json.dumps({
            "kind": kind, "diff_sha256": diff_sha256(diff), "baseline": baseline,
            "container_id": getattr(check.runner, "id", None), "pool_key": check.key.model_dump(),
            "layout": check.layout.model_dump() if check.layout else None}, indent=1))
        out = CheckOutcome(work=work)
        if diff.strip():
            apply_error = apply_diff(diff, tree)
            if apply_error:
                out.apply_error = apply_error
                out.problem = f"the diff does not apply to the pristine repository: {apply_error[:300]}"
                return out
            out.restored, out.refused = restore_protected(tree, self._snap, self.spec)
            if out.refused:
                out.problems.append(f"refused added test infrastructure: {out.refused}")
        # Canaries where the pristine suite showed they work (always tried on the pristine tree).
        host = canary.host_file(self.spec.target_tests, tree)
        canaries = canary.plan(host) if host and (baseline or self._baseline.canaries_usable) else []
        canary.place(tree, canaries)
        # A suite run is the whole suite, or the targets + the spec's pass-to-pass list; named
        # canaries join a named selection, in no particular place.
        selection = list(self.spec.target_tests) if kind == "target_test" else list(self.spec.suite_selection)
        if selection and canaries:
            selection += [c.nodeid for c in canaries]
            selection.sort(key=lambda _: secrets.randbelow(1 << 30))
        per_test_s = self._screen_per_test_s() if screen else self.spec.check_per_test_timeout_s
        per_test = ["-o", f"timeout={per_test_s:g}"] if per_test_s else []
        runner = self._check_runner(check)
        junit = check.layout.junit if self.backend == "docker" else "{junit}"
        probe_cases = None if screen else self._probe_cases(baseline)
        # A file that fails to collect is one failure with its cause, as it is for a person running
        # the suite; without the flag pytest would run no test at all. `--maxfail=0` undoes a
        # project's `-x` or `--maxfail=N` in addopts: every test is judged, not the first few.
        def run(chosen: list[str]) -> SuiteRun:
            return runner.suite(["-q", f"--junitxml={junit}", "--continue-on-collection-errors", "--maxfail=0", *per_test,
                                 *chosen], self.spec.test_timeout_s, probe_cases)
        suite = run(selection)
        if selection and suite.result is not None and suite.result.exit_code == 4:
            # A named test in a module that cannot be imported: pytest reports the module's error,
            # then refuses the id and runs nothing. Once more with that module named instead.
            errors = {c.collected_path: c.message for c in suite.cases if c.collection}
            again = [n.split("::")[0] if collection_error_for(nodeid_to_junit_key(n), errors) else n for n in selection]
            if errors and again != selection:
                suite = run(list(dict.fromkeys(again)))
        out.suite = suite
        root = check.layout.root if self.backend == "docker" else str(tree)
        out.facts = ProcessFacts(exit_code=suite.result.exit_code if suite.result else None,
                                 timed_out=bool(suite.result and suite.result.timed_out), root=root,
                                 leftover_processes=suite.leftover, result_problem=suite.read_problem)
        if suite.junit_problem and not suite.read_problem:
            out.problem = suite.junit_problem
            if suite.result is not None and not out.facts.timed_out:  # pytest crashed: its own words first
                said = suite.result.stdout.text + "\n" + suite.result.stderr.text
                out.problem += f" (pytest exited {suite.result.exit_code}: {collection_cause(said)})"
            if out.facts.timed_out:  # pytest writes its report at the end: a cut suite leaves none
                out.problem = (f"the suite ran past its {self.spec.test_timeout_s:g} s limit and was stopped before "
                               f"pytest wrote its report (each test's own limit: {per_test_s:g} s)")
        out.cases, out.canary_problems = canary.judge(canaries, suite.cases)
        out.canaries, out.placed = len(canaries), canaries
        keys = {c.key for c in canaries}
        out.canary_failures = sum(1 for c in suite.cases if c.key in keys and c.outcome in ("failed", "error"))
        # After a suite that ran out of time the container was reset (its tmpfs trees are gone): the
        # check has failed already, and probing it would only say so wrongly.
        if probe_cases is not None and suite.runs and not out.facts.timed_out:
            out.runs = suite.runs
            if baseline and self.reference_diff:
                # The reference fix's answers, in the same container (only trusted code ran in it).
                apply_error = apply_diff(self.reference_diff, tree)
                if apply_error:
                    raise ScenarioError(f"the reference fix does not apply to the pristine repository: "
                                        f"{apply_error[:300]}")
                out.reference_runs = runner.probes_fresh(self._probe_cases(baseline, reference=True) or {})
        return out

    def _check_runner(self, check: FreshCheck) -> DockerCheck | LocalCheck:
        if self.backend == "docker":
            return DockerCheck(check.runner, check.layout, check.work, check.work / "tools", self.import_roots)
        env = Perturbation(name="check", root=str(check.tree), env={})
        return LocalCheck(check.runner, check.tree, check.out, check.work / "tools" / check.layout.probe_name,
                          check.work, env)

    def _runner(self, tree: Path, tools: Path, layout: CheckLayout, key: PoolKey):
        if self.backend == "local":
            return LocalRunner(self.limits, workdir=tree, budget=self.keep_budget)
        from docker.types import Mount

        mounts = [Mount(layout.source, str(tree), type="bind", read_only=True),
                  Mount(layout.tools, str(tools), type="bind", read_only=True)]
        # The two places the tree is copied to: writable, bounded, and in memory, never on the host.
        size = self.limits.tmpfs_bytes + 3 * sum(f.stat().st_size for f in tree.rglob("*") if f.is_file())
        # (Each is a fresh mount point the image does not have: the engine would copy an existing
        # directory's owner and mode onto it.) The moved tree belongs to the user the probe runs as there.
        uid, gid = container_user().split(":")
        tmpfs = {layout.root: f"rw,exec,nosuid,nodev,size={size},uid={uid},gid={gid},mode=0755",
                 layout.alt_root: f"rw,exec,nosuid,nodev,size={size},uid={layout.moved_uid},"
                                  f"gid={layout.moved_uid},mode=0755"}
        # Started from the image id the run recorded, so a re-tagged image cannot slip in.
        return HardenedContainer(self.client, key.environment_id.removeprefix("docker:"), mounts=mounts,
                                 limits=self.limits, user=container_user(), workdir="/",
                                 labels={**self.labels, "org.repair-agent.role": "verifier",
                                         PRISTINE_LABEL: key.pristine_tree_sha256},
                                 extra_tmpfs=tmpfs, hostname=layout.hostname, budget=self.keep_budget)

@dataclass
class CheckOutcome:
    """Everything one check produced, before judging."""

    work: Path
    suite: SuiteRun | None = None
    cases: list[TestCase] = field(default_factory=list)
    problem: str | None = None               # the run could not be judged at all (apply, JUnit)
    problems: list[str] = field(default_factory=list)
    facts: ProcessFacts | None = None
    canaries: int = 0
    placed: list[canary.Canary] = field(default_factory=list)
    canary_problems: list[str] = field(default_factory=list)
    canary_failures: int = 0
    runs: list[EnvironmentRun] = field(default_factory=list)
    reference_runs: list[EnvironmentRun] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    apply_error: str | None = None


def _import_roots(label: str | None) -> tuple[str, ...]:
    try:
        roots = json.loads(label) if label else []
    except ValueError:
        return ()
    return tuple(r for r in roots if isinstance(r, str) and not r.startswith("/") and ".." not in r.split("/"))


def _made(value: T | None, why: str) -> T:
    if value is None:
        raise RuntimeError(why)
    return value
