"""Running the protected tests on a candidate diff, in a fresh tree and a fresh container.

SWE-bench's lesson, kept strictly: the diff is applied to the verifier's own pristine copy,
protected files are restored from that copy, added test infrastructure is refused, and only
the JUnit XML that pytest writes outside the candidate tree (plus its exit code) decides.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .isolation import CommandResult, HardenedContainer, Limits, LocalRunner
from .pool import CheckPool, FreshCheck, PoolKey
from .scope import ScopeVerdict, check_scope, diff_sha256
from .spec import (REFUSED_INFRASTRUCTURE, AcceptanceSpec, ProtectedSnapshot, glob_match,
                   nodeid_to_junit_key, sha256_file, tree_files, tree_sha256)

Kind = Literal["target_test", "full_suite"]
GUARD_SOURCE = Path(__file__).with_name("pytest_guard.py")
GUARD_MODULE = "ra_pytest_guard"
GUARD_MARKER = "\x1eRA-GUARD "
MAX_JUNIT_BYTES = 8 * 1024 * 1024
PRISTINE_LABEL = "org.repair-agent.pristine-sha256"


class ScenarioError(RuntimeError):
    """The scenario itself is unusable (e.g. its target test already passes on the pristine repo)."""


class VerifierCompromised(RuntimeError):
    """The verifier's own pristine copy changed: nothing it says can be trusted any more."""


class TestCase(BaseModel):
    key: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    message: str = ""


class Baseline(BaseModel):
    """The pristine repository's test results: which ids exist and which already pass."""

    all_tests: list[str]
    target_keys: list[str]
    pass_to_pass: list[str]
    known_failing: list[str]
    target_failures: dict[str, str]


class CachedBaseline(BaseModel):
    """What runs/.cache/baselines/KEY.json holds: the baseline bound to its inputs and a digest."""

    format: Literal[1] = 1
    inputs: dict[str, str]  # the verifier's PoolKey: tree, image, setup (spec, oracle, guard, limits, uid)
    baseline_sha256: str
    baseline: Baseline


def _baseline_digest(baseline: Baseline) -> str:
    return hashlib.sha256(json.dumps(baseline.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


class TestVerdict(BaseModel):
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
    oracle: dict | None = None
    pytest: CommandResult | None = None
    duration_s: float = 0.0

    @property
    def summary(self) -> str:
        if self.ok:
            return f"{self.kind}: {self.passed}/{self.collected} passed"
        return f"{self.kind}: FAILED ({'; '.join(self.problems[:3])})"


def container_user() -> str:
    """A non-root uid for containers; the host's own uid when the host is not root."""
    uid = os.getuid()
    return "10001:10001" if uid == 0 else f"{uid}:{os.getgid()}"


def parse_junit(path: Path) -> tuple[list[TestCase], str | None]:
    if not path.is_file():
        return [], "no JUnit report was written"
    if path.stat().st_size > MAX_JUNIT_BYTES:
        return [], "JUnit report is implausibly large"
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return [], f"JUnit report does not parse: {exc}"
    cases = []
    for tc in root.iter("testcase"):
        key = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            child = tc.find(tag)
            if child is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = (child.get("message") or child.text or "").strip().splitlines()[:1]
                message = message[0][:300] if message else ""
                break
        cases.append(TestCase(key=key, outcome=outcome, message=message))
    return cases, None


class Verifier:
    """The protected referee of one run. It imports nothing from the agent side."""

    def __init__(self, spec: AcceptanceSpec, pristine: Path, state_dir: Path, *,
                 backend: Literal["docker", "local"] = "docker", client=None, image: str | None = None,
                 limits: Limits | None = None, oracle: Path | None = None, cache_dir: Path | None = None,
                 granted: tuple[str, ...] = (), labels: dict[str, str] | None = None,
                 pool_size: int = 2, pool_max_idle_s: float = 300.0):
        self.spec, self.pristine, self.state_dir = spec, Path(pristine), Path(state_dir)
        # Paths a person allowed this run to edit. They widen the diff's scope, never the suite:
        # protected files are still restored from the verifier's copy before any test runs.
        self.granted = tuple(granted)
        self.backend, self.client, self.image = backend, client, image
        self.limits = limits or Limits()
        self.oracle = self._oracle_source = Path(oracle) if oracle else None
        self.cache_dir = cache_dir
        self.labels = dict(labels or {})  # extra container labels, e.g. the run id cleanup selects by
        self.cache_note: str | None = None  # why a cached baseline was not trusted, when it was not
        self.snapshot: ProtectedSnapshot | None = None
        self._environment_id: str | None = None
        self.baseline: Baseline | None = None
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
        """Snapshot the pristine repository, hash what is protected, and learn its test ids."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.pool is not None:
            self.pool.close()  # made for an earlier snapshot: none of them may serve this one
        self.snapshot = ProtectedSnapshot.capture(self.pristine, self.state_dir / "pristine", self.spec)
        guard_dir = self.state_dir / "guard"
        guard_dir.mkdir(exist_ok=True)
        shutil.copyfile(GUARD_SOURCE, guard_dir / f"{GUARD_MODULE}.py")
        self.guard_dir = guard_dir
        if self._oracle_source:
            oracle_copy = self.state_dir / "oracle.py"
            shutil.copyfile(self._oracle_source, oracle_copy)
            self.oracle = oracle_copy
        self._start_pool()
        cache = self._baseline_cache_path()
        cached = self._load_cached_baseline(cache) if cache else None
        if cached is not None:
            self.baseline = cached
            return self.baseline
        cases, verdict_problem, result, _ = self._execute("", "full_suite", baseline=True)
        if verdict_problem:
            raise ScenarioError(f"the pristine repository's suite could not be run: {verdict_problem}"
                                + (f"\n{result.stderr.text[-2000:]}" if result else ""))
        keys = [c.key for c in cases]
        targets = [nodeid_to_junit_key(t) for t in self.spec.target_tests]
        by_key = {c.key: c for c in cases}
        missing = [t for t in targets if t not in by_key]
        if missing:
            raise ScenarioError(f"target tests not collected on the pristine repository: {missing}")
        already = [t for t in targets if by_key[t].outcome == "passed"]
        if already:
            raise ScenarioError(f"target tests already pass on the pristine repository: {already}")
        self.baseline = Baseline(
            all_tests=sorted(keys), target_keys=targets,
            pass_to_pass=sorted(k for k in keys if by_key[k].outcome == "passed"),
            known_failing=sorted(k for k in keys if by_key[k].outcome != "passed" and k not in targets),
            target_failures={t: by_key[t].message for t in targets})
        if cache:
            self._store_cached_baseline(cache, self.baseline)
        return self.baseline

    def _baseline_cache_path(self) -> Path | None:
        """Keyed by everything the pristine suite's result depends on: the tree, the image, and
        the setup (spec, oracle, pytest guard, limits, uid) — the same key the pool's checks carry."""
        if self.cache_dir is None:
            return None
        key = self.pool_key
        digest = hashlib.sha256("\0".join([key.pristine_tree_sha256, key.environment_id,
                                           key.setup_sha256]).encode()).hexdigest()[:24]
        return self.cache_dir / "baselines" / f"{digest}.json"

    def _start_pool(self) -> None:
        """Begin making fresh checks in the background, for this snapshot, image and spec only."""
        oracle_hash = sha256_file(self.oracle) if self.oracle else ""
        setup = "\0".join([self.spec.model_dump_json(), oracle_hash, sha256_file(GUARD_SOURCE),
                           self.limits.model_dump_json(), container_user()])
        self.pool_key = PoolKey(environment_id=self.environment_id,
                                pristine_tree_sha256=self.snapshot.tree_sha256,
                                setup_sha256=hashlib.sha256(setup.encode()).hexdigest())
        self.pool = CheckPool(self._make_check, self._why_unfit, size=self.pool_size,
                              max_idle_s=self.pool_max_idle_s)
        self.pool.fill()

    def _make_check(self) -> FreshCheck:
        """A check's own pristine copy and output dir, and a started container that has run nothing."""
        key = self.pool_key
        work = self.state_dir / "checks" / uuid.uuid4().hex[:12]
        tree, out = work / "tree", work / "out"
        shutil.copytree(self.snapshot.root, tree, symlinks=True, copy_function=shutil.copyfile)
        for p in [tree, *tree.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)
        out.mkdir(parents=True)
        out.chmod(0o777)  # the container's non-root uid writes the JUnit report here
        runner = self._runner(tree, out, key)
        if self.backend == "local":
            return FreshCheck(work, key, runner)
        try:
            return FreshCheck(work, key, runner, started_at=runner.started_at())
        except Exception:
            runner.close()
            raise

    def _why_unfit(self, check: FreshCheck) -> str | None:
        """Why a pooled check may not serve a check now (None: it may)."""
        if check.key != self.pool_key:
            return "made for another image, pristine tree or spec"
        actual = tree_sha256(check.tree)
        if actual != self.snapshot.tree_sha256 or check.key.pristine_tree_sha256 != self.snapshot.tree_sha256:
            return f"its tree ({actual[:12]}) is not the pristine tree ({self.snapshot.tree_sha256[:12]})"
        if self.backend == "docker":
            return check.runner.untouched(self.environment_id.removeprefix("docker:"), check.started_at)
        return None

    def _load_cached_baseline(self, cache: Path) -> Baseline | None:
        """A cached baseline is trusted only whole: it parses, its content matches the digest stored
        with it, it was made from the same inputs, and it agrees with the spec. Anything else is set
        aside (kept as *.rejected for inspection) and the baseline is rebuilt by running the suite.

        The digest catches corruption and hand edits; it is not a secret, so someone who can write
        runs/.cache and recompute it can still forge one (the candidate cannot: it never sees it)."""
        if not cache.is_file():
            return None
        try:
            envelope = CachedBaseline.model_validate_json(cache.read_bytes())
            problem = None
            if envelope.inputs != self.pool_key.model_dump():
                problem = "made from other inputs"
            elif envelope.baseline_sha256 != _baseline_digest(envelope.baseline):
                problem = "content does not match its digest"
            else:
                bl = envelope.baseline
                targets = [nodeid_to_junit_key(t) for t in self.spec.target_tests]
                known = set(bl.all_tests)
                if (bl.target_keys != targets or not set(targets) <= known or not set(bl.pass_to_pass) <= known
                        or not set(bl.known_failing) <= known or set(bl.target_failures) != set(targets)):
                    problem = "inconsistent with the acceptance spec"
        except (ValueError, OSError) as exc:  # pydantic's ValidationError is a ValueError
            problem = f"unreadable ({type(exc).__name__}: {str(exc)[:200]})"
        if problem is None:
            return envelope.baseline
        self.cache_note = f"cached baseline {cache.name} not trusted ({problem}); rebuilt by running the suite"
        try:
            os.replace(cache, cache.with_name(f"{cache.name}.rejected"))
        except OSError:
            pass
        return None

    def _store_cached_baseline(self, cache: Path, baseline: Baseline) -> None:
        # Best effort and atomic: two runs filling the same cache at once each rename a whole file
        # into place, so neither ever reads half of the other's; a full disk only costs the cache.
        envelope = CachedBaseline(inputs=self.pool_key.model_dump(), baseline_sha256=_baseline_digest(baseline),
                                  baseline=baseline)
        tmp = cache.with_name(f".{cache.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(envelope.model_dump_json(indent=1))
            os.replace(tmp, cache)
        except OSError:
            tmp.unlink(missing_ok=True)

    @property
    def environment_id(self) -> str:
        """What the checks run on (the image's id, or the local interpreter), looked up once."""
        if self._environment_id is None:
            self._environment_id = (f"docker:{self.client.images.get(self.image).id}" if self.backend == "docker"
                                    else f"local:{sys.version.split()[0]}")
        return self._environment_id

    # -- checks -----------------------------------------------------------------------------
    def check_scope(self, diff: str) -> ScopeVerdict:
        return check_scope(diff, self.spec, granted=self.granted)

    def run_tests(self, diff: str, kind: Kind) -> TestVerdict:
        assert self.snapshot and self.baseline, "prepare() first"
        started = time.monotonic()
        scope = check_scope(diff, self.spec, require_change=False, granted=self.granted)
        refused = [f"{v.path} ({v.rule})" for v in scope.violations]
        base = dict(kind=kind, diff_sha256=diff_sha256(diff),
                    protected_manifest_sha256=self.snapshot.manifest_sha256)
        if refused:
            # Out-of-scope code is never executed: a shadowing module or a conftest could
            # otherwise run before any test and rewrite the verdict.
            return TestVerdict(**base, ok=False, targets_ok=False, refused=refused,
                               problems=[f"refused to run a diff that is out of scope: {refused[:5]}"],
                               duration_s=round(time.monotonic() - started, 4))
        cases, problem, result, extra = self._execute(diff, kind)
        verdict = self._judge(kind, cases, problem, result, extra, base)
        verdict.duration_s = round(time.monotonic() - started, 4)
        return verdict

    def _judge(self, kind: Kind, cases: list[TestCase], problem: str | None, result: CommandResult | None,
               extra: dict, base: dict) -> TestVerdict:
        """Two kinds of problems: test failures, and doubts about the run's integrity. The
        target condition holds only when the targets passed AND nothing casts doubt on the run."""
        bl = self.baseline
        doubts = ([problem] if problem else []) + extra.get("problems", [])
        by_key: dict[str, TestCase] = {}
        for case in cases:
            if case.key in by_key:
                doubts.append(f"test reported twice: {case.key}")
            by_key[case.key] = case
        expected_ids = set(bl.target_keys) if kind == "target_test" else set(bl.all_tests)
        missing = sorted(expected_ids - by_key.keys())
        unexpected = sorted(by_key.keys() - expected_ids)
        if missing:
            doubts.append(f"{len(missing)} protected test(s) not reported (missing, deselected): {missing[:5]}")
        if unexpected:
            doubts.append(f"{len(unexpected)} unknown test(s) reported: {unexpected[:5]}")
        if result is not None and result.timed_out:
            doubts.append(f"pytest timed out after {self.spec.test_timeout_s:g}s")
        must_pass = set(bl.target_keys) | (set(bl.pass_to_pass) if kind == "full_suite" else set())
        guard = extra.get("guard")
        if guard is not None:
            # What the test functions really did, seen before any report existed, must agree.
            if not guard["finished"]:
                doubts.append("the verifier's pytest guard did not see the session end")
            foreign = [f for f in guard["hook_files"] if self._candidate_file(f, extra.get("root", ""))]
            if foreign:
                doubts.append(f"candidate code registered pytest hooks: {foreign[:3]}")
            forged = sorted(k for k in must_pass if k in by_key and by_key[k].outcome == "passed"
                            and guard["calls"].get(k) != [None])
            if forged:
                doubts.append(f"{len(forged)} test(s) reported passed although the test function raised or "
                              f"never ran (report rewriting): "
                              + "; ".join(f"{k} {guard['calls'].get(k)}" for k in forged[:3]))
        oracle = extra.get("oracle")
        if self.oracle is not None and not (oracle and oracle.get("ok") is True):
            doubts.append("independent oracle check failed (target behaviour, separate interpreter)")

        failures = []
        failing = {k: f"{by_key[k].outcome}: {by_key[k].message}" for k in sorted(must_pass & by_key.keys())
                   if by_key[k].outcome != "passed"}
        if failing:
            failures.append(f"{len(failing)} test(s) not passing: "
                            + "; ".join(f"{k} [{v}]" for k, v in list(failing.items())[:3]))
        exit_code = result.exit_code if result else None
        allowed_exit = {0} if kind == "target_test" or not bl.known_failing else {0, 1}
        if result is not None and not result.timed_out and exit_code not in allowed_exit:
            failures.append(f"pytest exit code {exit_code}")
        targets_passed = all(k in by_key and by_key[k].outcome == "passed" for k in bl.target_keys)
        problems = doubts + failures
        return TestVerdict(**base, ok=not problems, targets_ok=targets_passed and not doubts, problems=problems,
                           exit_code=exit_code, timed_out=bool(result and result.timed_out),
                           collected=len(cases), passed=sum(c.outcome == "passed" for c in cases),
                           failing=failing, missing=missing, unexpected=unexpected,
                           restored=extra.get("restored", []), refused=extra.get("refused", []),
                           apply_error=extra.get("apply_error"), oracle=oracle, pytest=result)

    def _candidate_file(self, path: str, root: str) -> bool:
        """A file of the candidate's own writable code (hooks may come only from pytest and protected files)."""
        prefix = root.rstrip("/") + "/"
        if not path.startswith(prefix):
            return False
        rel = path[len(prefix):]
        return self.spec.is_writable(rel) or (glob_match(rel, self.granted) is not None and not self.spec.is_protected(rel))

    # -- the mechanics of one verification ---------------------------------------------------
    def _execute(self, diff: str, kind: Kind, baseline: bool = False):
        """Build the candidate tree, run the oracle and pytest on it, return parsed cases."""
        if self.snapshot.check_intact():
            raise VerifierCompromised(f"protected pristine copy changed: {self.snapshot.check_intact()}")
        check = self.pool.take()
        try:
            return self._execute_in(check, diff, kind, baseline)
        finally:
            self.pool.retire(check)  # one check per container: removed in the background

    def _execute_in(self, check: FreshCheck, diff: str, kind: Kind, baseline: bool):
        work, tree, out, runner = check.work, check.tree, check.out, check.runner
        (work / "check.json").write_text(json.dumps({
            "kind": kind, "diff_sha256": diff_sha256(diff), "baseline": baseline,
            "container_id": getattr(runner, "id", None), "pool_key": check.key.model_dump()}, indent=1))
        extra: dict = {"problems": []}
        if diff.strip():
            apply_error = self._apply(diff, tree)
            if apply_error:
                extra["apply_error"] = apply_error
                result = None
                problem = f"the diff does not apply to the pristine repository: {apply_error[:300]}"
                return [], problem, result, extra
            extra["restored"], extra["refused"] = self._restore_protected(tree)
            if extra["refused"]:
                extra["problems"].append(f"refused added test infrastructure: {extra['refused']}")
        targets = list(self.spec.target_tests) if kind == "target_test" else []
        junit_in, junit_host = "/verifier-out/junit.xml", out / "junit.xml"
        pytest_args = ["-p", "no:cacheprovider", "-p", GUARD_MODULE, "-q", "-o", "junit_family=xunit2",
                       "-o", "junit_logging=no", "-o", "console_output_style=classic"]
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONNOUSERSITE": "1", "HOME": "/tmp", "PYTHONHASHSEED": "0"}
        pytest_env = {**env, "PYTHONPATH": "/verifier/guard" if self.backend == "docker" else str(self.guard_dir)}
        if self.backend == "docker":
            root, junit_arg, python, oracle_path = "/workspace", junit_in, "python3", "/verifier/oracle.py"
        else:
            root, junit_arg, python, oracle_path = str(tree), str(junit_host), sys.executable, str(self.oracle)
        if self.oracle and not baseline:
            res = runner.exec([python, "-I", "-S", oracle_path, root], timeout_s=min(30.0, self.spec.test_timeout_s),
                              output_dir=work, env=env)
            extra["oracle"] = _oracle_report(res)
        result = runner.exec([python, "-P", "-m", "pytest", *pytest_args, f"--junitxml={junit_arg}",
                              f"--rootdir={root}", *targets],
                             timeout_s=self.spec.test_timeout_s, output_dir=work, env=pytest_env, workdir=root)
        extra["guard"], extra["root"] = _guard_report(result), root
        cases, problem = parse_junit(junit_host)
        if result.timed_out and not problem:
            problem = "pytest timed out"
        return cases, problem, result, extra

    def _runner(self, tree: Path, out: Path, key: PoolKey):
        if self.backend == "local":
            return LocalRunner(self.limits, workdir=tree)
        from docker.types import Mount

        mounts = [Mount("/workspace", str(tree), type="bind", read_only=True),
                  Mount("/verifier-out", str(out), type="bind", read_only=False)]
        mounts.append(Mount("/verifier/guard", str(self.guard_dir), type="bind", read_only=True))
        if self.oracle:
            mounts.append(Mount("/verifier/oracle.py", str(self.oracle), type="bind", read_only=True))
        # Started from the image id the run recorded, so a re-tagged image cannot slip in.
        return HardenedContainer(self.client, key.environment_id.removeprefix("docker:"), mounts=mounts,
                                 limits=self.limits, user=container_user(),
                                 labels={**self.labels, "org.repair-agent.role": "verifier",
                                         PRISTINE_LABEL: key.pristine_tree_sha256})

    def _apply(self, diff: str, tree: Path) -> str | None:
        # GIT_CEILING_DIRECTORIES keeps git from discovering an enclosing repository, so the
        # patch is applied to this tree and nothing else.
        env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
        from .scope import recount_hunks  # the text check_scope parsed: both see the same lines
        proc = subprocess.run(["git", "apply", "--recount", "--whitespace=nowarn", "-"], cwd=tree, env=env,
                              input=recount_hunks(diff).encode("utf-8", errors="surrogateescape"),
                              capture_output=True, timeout=60)
        return proc.stderr.decode(errors="replace")[-4000:] or "git apply failed" if proc.returncode else None

    def _restore_protected(self, tree: Path) -> tuple[list[str], list[str]]:
        """Put every protected file back from the verifier's copy; remove and report additions."""
        snap = Path(self.snapshot.root)
        restored, refused = [], []
        for rel in tree_files(tree):
            path = tree / rel
            if rel in self.snapshot.protected_sha256:
                continue
            if path.is_symlink() or self.spec.is_protected(rel) or glob_match(rel, REFUSED_INFRASTRUCTURE):
                refused.append(rel)
                path.unlink()
        for rel, digest in self.snapshot.protected_sha256.items():
            path = tree / rel
            if path.is_symlink() or not path.is_file() or sha256_file(path) != digest:
                if path.is_symlink() or path.exists():
                    path.unlink()
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(snap / rel, path)
                restored.append(rel)
        return restored, refused


def _guard_report(res: CommandResult) -> dict:
    """Parse the guard's records from the full stderr stream (the kept file, not the capped head)."""
    text = Path(res.stderr.kept_path).read_text(errors="replace") if res.stderr.kept_path else res.stderr.text
    calls: dict[str, list] = {}
    hook_files: set[str] = set()
    finished = False
    for line in text.split("\n"):  # not splitlines(): it also splits at the marker's \x1e
        if not line.startswith(GUARD_MARKER):
            continue
        try:
            rec = json.loads(line[len(GUARD_MARKER):])
        except json.JSONDecodeError:
            continue
        if rec.get("kind") == "call":
            calls.setdefault(nodeid_to_junit_key(str(rec.get("nodeid"))), []).append(rec.get("raised"))
        elif rec.get("kind") == "hooks":
            hook_files.update(map(str, rec.get("files", [])))
        elif rec.get("kind") == "finished":
            finished = True
    return {"calls": calls, "hook_files": sorted(hook_files), "finished": finished}


def _oracle_report(res: CommandResult) -> dict:
    lines = [l for l in res.stdout.text.strip().splitlines() if l.strip()]
    try:
        report = json.loads(lines[-1]) if lines else {}
        if not isinstance(report, dict):
            report = {"raw": report}
    except json.JSONDecodeError:
        report = {"raw": res.stdout.text[-500:]}
    # The exit code decides, too: a printed {"ok": true} with a failing exit is not a pass.
    report["ok"] = bool(report.get("ok") is True and res.exit_code == 0 and not res.timed_out)
    report["exit_code"] = res.exit_code
    report["stderr_tail"] = res.stderr.text[-500:]
    report["stdout_bytes"], report["stdout_truncated"] = res.stdout.true_bytes, res.stdout.truncated
    report["stdout_file"] = res.stdout.kept_path
    return report
