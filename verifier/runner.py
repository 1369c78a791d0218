"""Running the protected tests on a candidate diff, in a fresh tree and a fresh container.

SWE-bench's lesson, kept strictly: the diff is applied to the verifier's own pristine copy,
protected files are restored from that copy and added test infrastructure is refused. pytest runs
under the verifier's boot (boot.py); the host reads the JUnit file through the engine (from a
tmpfs in the container, never a host mount), checks no process outlived the run, runs the
held-out probe, and hands all of it to the pure `judge` (judge.py).

Kept in one module: the sequence (fresh tree, restore, run under the boot, read the JUnit file,
check leftovers, probe) is one protocol, read top to bottom; the pure parts already live apart.
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
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from .baseline import baseline_cache_path, load_cached_baseline, store_cached_baseline
from .heldout import HeldoutResult, HeldoutSpec, judge_heldout, parse_probe_output
from .isolation import CommandResult, HardenedContainer, Limits, LocalRunner, container_user
from .judge import Baseline, BaselineError, GuardRecords, Kind, ProcessFacts, guard_doubts, judge, make_baseline
from .junit import MAX_JUNIT_BYTES, TestCase, parse_junit_bytes, read_result_file
from .pool import CheckPool, FreshCheck, PoolKey
from .scope import ScopeVerdict, check_scope, diff_sha256
from .spec import (REFUSED_INFRASTRUCTURE, AcceptanceSpec, ProtectedSnapshot, glob_match,
                   nodeid_to_junit_key, sha256_file, tree_files, tree_sha256)

GUARD_DIR_FILES = {"ra_boot.py": Path(__file__).with_name("boot.py"),
                   "ra_probe.py": Path(__file__).with_name("probe.py")}
RESULT_DIR = "/verifier-out"
RESULT_DIR_BYTES = 16 * 1024 * 1024  # a tmpfs inside the container: nothing a check writes lands on the host
PRISTINE_LABEL = "org.repair-agent.pristine-sha256"
T = TypeVar("T")


class ProbeCommand(BaseModel):
    """How the held-out probe is started in a check's container (or on the host, locally)."""

    argv: list[str]
    timeout_s: float
    env: dict[str, str]


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
    # Held-out checks: the per-case detail (inputs, values) is for the person's report only.
    heldout: HeldoutResult | None = None
    # correct: visible tests and held-out checks pass; plausible: only the visible tests pass;
    # unchecked: the scenario has no held-out checks.
    correctness: Literal["correct", "plausible", "unchecked"] | None = None
    guard_refusals: int = 0
    heldout_file: str | None = None  # the per-case detail, on the host, for the person's report
    pytest: CommandResult | None = None
    duration_s: float = 0.0

    @property
    def summary(self) -> str:
        if self.ok:
            extra = f", {self.heldout.summary}" if self.heldout is not None else ""
            return f"{self.kind}: {self.passed}/{self.collected} passed{extra}"
        return f"{self.kind}: FAILED ({'; '.join(self.problems[:3])})"


class Verifier:
    """The protected referee of one run. It imports nothing from the agent side."""

    def __init__(self, spec: AcceptanceSpec, pristine: Path, state_dir: Path, *,
                 backend: Literal["docker", "local"] = "docker", client=None, image: str | None = None,
                 limits: Limits | None = None, heldout: Path | None = None, cache_dir: Path | None = None,
                 granted: tuple[str, ...] = (), labels: dict[str, str] | None = None,
                 pool_size: int = 2, pool_max_idle_s: float = 300.0, site_packages: bool = False):
        self.spec, self.pristine, self.state_dir = spec, Path(pristine), Path(state_dir)
        # Paths a person allowed this run to edit. They widen the diff's scope, never the suite:
        # protected files are still restored from the verifier's copy before any test runs.
        self.granted = tuple(granted)
        self.backend, self.client, self.image = backend, client, image
        self.limits = limits or Limits()
        # Held-out checks: loaded here, kept in this process; only their inputs enter a container.
        self.heldout = HeldoutSpec.load(Path(heldout)) if heldout else None
        self.cache_dir = cache_dir
        self.labels = dict(labels or {})  # extra container labels, e.g. the run id cleanup selects by
        # The held-out probe runs without site-packages (-S) unless the scenario's environment
        # installed what its code imports there (dependencies, an editable install of the project).
        self.site_packages = site_packages
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
        for name, source in GUARD_DIR_FILES.items():  # code only: no expected value is ever in here
            shutil.copyfile(source, guard_dir / name)
        self.guard_dir = guard_dir
        self._start_pool()
        cache = baseline_cache_path(self.cache_dir, self._key) if self.cache_dir else None
        cached, self.cache_note = load_cached_baseline(cache, self._key, self.spec) if cache else (None, None)
        if cached is not None:
            self.baseline = cached
            return self.baseline
        cases, verdict_problem, result, extra = self._execute("", "full_suite", baseline=True)
        if verdict_problem:
            raise ScenarioError(f"the pristine repository's suite could not be run: {verdict_problem}"
                                + (f"\n{result.stderr.text[-2000:]}" if result else ""))
        tripped = guard_doubts(extra["guard"], extra["facts"]) if extra.get("guard") else []
        if tripped:
            # Every candidate inherits the pristine code: a guard it trips would fail them all.
            raise ScenarioError("the pristine repository's suite trips the verifier's check process: "
                                + "; ".join(tripped[:3]))
        targets = [nodeid_to_junit_key(t) for t in self.spec.target_tests]
        listed = [nodeid_to_junit_key(t) for t in self.spec.pass_to_pass] if self.spec.pass_to_pass else None
        try:
            self.baseline = make_baseline(cases, targets, listed)
        except BaselineError as exc:
            raise ScenarioError(str(exc)) from None
        if cache:
            store_cached_baseline(cache, self._key, self._baseline)
        return self.baseline

    def _start_pool(self) -> None:
        """Begin making fresh checks in the background, for this snapshot, image and spec only."""
        heldout_hash = hashlib.sha256(self.heldout.model_dump_json().encode()).hexdigest() if self.heldout else ""
        setup = "\0".join([self.spec.model_dump_json(), heldout_hash,
                           *(sha256_file(f) for f in GUARD_DIR_FILES.values()),
                           self.limits.model_dump_json(), container_user(), str(self.site_packages)])
        self.pool_key = PoolKey(environment_id=self.environment_id,
                                pristine_tree_sha256=self._snap.tree_sha256,
                                setup_sha256=hashlib.sha256(setup.encode()).hexdigest())
        self.pool = CheckPool(self._make_check, self._why_unfit, size=self.pool_size,
                              max_idle_s=self.pool_max_idle_s)
        self.pool.fill()

    def _make_check(self) -> FreshCheck:
        """A check's own pristine copy, and a started container that has run nothing (the local
        backend gets an output dir on the host instead of the container's tmpfs)."""
        key = self._key
        work = self.state_dir / "checks" / uuid.uuid4().hex[:12]
        tree = work / "tree"
        shutil.copytree(self._snap.root, tree, symlinks=True, copy_function=shutil.copyfile)
        for p in [tree, *tree.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)
        runner = self._runner(tree, key)
        if self.backend == "local":
            (work / "out").mkdir()
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
    def _heldout(self) -> HeldoutSpec:
        return _made(self.heldout, "this scenario has no held-out checks")

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
        base: dict[str, Any] = dict(kind=kind, diff_sha256=diff_sha256(diff),
                    protected_manifest_sha256=self._snap.manifest_sha256)
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
        guard, facts, heldout = extra.get("guard"), extra.get("facts"), extra.get("heldout")
        j = judge(kind, self._baseline, cases, problem, guard, facts, heldout)
        problems = list(extra.get("problems", [])) + j.problems
        return TestVerdict(**base, ok=not problems, targets_ok=j.targets_ok and not extra.get("problems"),
                           problems=problems, exit_code=result.exit_code if result else None,
                           timed_out=bool(result and result.timed_out), collected=j.collected, passed=j.passed,
                           failing=j.failing, missing=j.missing, unexpected=j.unexpected,
                           restored=extra.get("restored", []), refused=extra.get("refused", []),
                           apply_error=extra.get("apply_error"), heldout=heldout,
                           heldout_file=extra.get("heldout_file"),
                           correctness=j.correctness if not extra.get("problems") else None,
                           guard_refusals=len(guard.of("refused")) if guard else 0, pytest=result)

    # -- the mechanics of one verification ---------------------------------------------------
    def _execute(self, diff: str, kind: Kind, baseline: bool = False):
        """Build the candidate tree, run pytest (and then the held-out probe) on it, return parsed cases."""
        if self._snap.check_intact():
            raise VerifierCompromised(f"protected pristine copy changed: {self._snap.check_intact()}")
        check = self._pool.take()
        try:
            return self._execute_in(check, diff, kind, baseline)
        finally:
            self._pool.retire(check)  # one check per container: removed in the background

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
                return [], f"the diff does not apply to the pristine repository: {apply_error[:300]}", None, extra
            extra["restored"], extra["refused"] = self._restore_protected(tree)
            if extra["refused"]:
                extra["problems"].append(f"refused added test infrastructure: {extra['refused']}")
        # A suite run is the whole suite, or the targets + the spec's pass-to-pass list.
        targets = list(self.spec.target_tests) if kind == "target_test" else list(self.spec.suite_selection)
        docker = self.backend == "docker"
        root = "/workspace" if docker else str(tree)
        junit_path = f"{RESULT_DIR}/junit.xml" if docker else str(out / "junit.xml")
        boot = "/verifier/guard/ra_boot.py" if docker else str(self.guard_dir / "ra_boot.py")
        python = "python3" if docker else sys.executable
        boot_config = {"root": root, "junit": junit_path, "out_dir": RESULT_DIR if docker else str(out),
                       "verifier_dir": "/verifier" if docker else str(self.state_dir),
                       "protected": sorted(self._snap.protected_sha256),
                       "per_test_timeout_s": self.spec.per_test_timeout_s}
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
               "HOME": "/tmp", "PYTHONHASHSEED": "0", "RA_BOOT": json.dumps(boot_config)}
        pytest_args = ["-p", "no:cacheprovider", "-q", "-o", "junit_family=xunit2", "-o", "junit_logging=no",
                       "-o", "console_output_style=classic", f"--junitxml={junit_path}", f"--rootdir={root}"]
        result = runner.exec([python, "-I", boot, *pytest_args, *targets],
                             timeout_s=self.spec.test_timeout_s, output_dir=work, env=env, workdir=root)
        extra["guard"] = _guard_records(result)
        # What the host sees for itself, before anything else runs in the container.
        leftover = runner.processes() if docker and not result.timed_out else []
        probe = self._probe_command(root, python, docker) if self.heldout is not None and not baseline else None
        probe_result: tuple[CommandResult, str] | None = None
        if docker and probe is not None:
            # The JUnit file is read first, then the reader becomes the held-out probe: one exec,
            # and still no candidate code runs before the file is read.
            data, read_problem, res, stdout = runner.read_file_then(junit_path, MAX_JUNIT_BYTES, probe.argv,
                                                                    timeout_s=probe.timeout_s, output_dir=work,
                                                                    env=probe.env, workdir=root)
            probe_result = res, stdout
        elif docker:
            data, read_problem = runner.read_file(junit_path, MAX_JUNIT_BYTES)
        else:
            data, read_problem = read_result_file(Path(junit_path))
        extra["facts"] = ProcessFacts(exit_code=result.exit_code, timed_out=result.timed_out, root=root,
                                      leftover_processes=leftover, result_problem=read_problem)
        problem: str | None
        cases, problem = parse_junit_bytes(data) if not read_problem else ([], None)
        if data is None and not read_problem:
            problem = "no JUnit report was written"
        if probe is not None:
            if probe_result is None:  # the local backend read the file on the host: the probe runs alone
                res = runner.exec(probe.argv, timeout_s=probe.timeout_s, output_dir=work, env=probe.env, workdir=root)
                probe_result = res, res.stdout.whole()
            extra["heldout"] = self._judge_probe(*probe_result, work)
            extra["heldout_file"] = str(work / "heldout.json")
        return cases, problem, result, extra

    def _probe_command(self, root: str, python: str, docker: bool) -> ProbeCommand:
        """The held-out inputs, after the tests (nothing of this run can be in the pytest output a
        chooser reads), in a fresh interpreter; the comparison happens on the host, on plain data."""
        probe = "/verifier/guard/ra_probe.py" if docker else str(self.guard_dir / "ra_probe.py")
        flags = ["-I"] if self.site_packages else ["-I", "-S"]
        return ProbeCommand(argv=[python, *flags, probe], timeout_s=min(60.0, self.spec.test_timeout_s),
                            env={"RA_PROBE": json.dumps(self._heldout.request(root)), "HOME": "/tmp",
                                 "PYTHONDONTWRITEBYTECODE": "1"})

    def _judge_probe(self, res: CommandResult, stdout: str, work: Path) -> HeldoutResult:
        data, problem = parse_probe_output(stdout)
        if res.timed_out:
            data, problem = None, "the held-out probe timed out"
        result = judge_heldout(self._heldout, data, problem)
        (work / "heldout.json").write_text(result.model_dump_json(indent=1))
        return result

    def _runner(self, tree: Path, key: PoolKey):
        if self.backend == "local":
            return LocalRunner(self.limits, workdir=tree)
        from docker.types import Mount

        mounts = [Mount("/workspace", str(tree), type="bind", read_only=True),
                  Mount("/verifier/guard", str(self.guard_dir), type="bind", read_only=True)]
        # Started from the image id the run recorded, so a re-tagged image cannot slip in.
        return HardenedContainer(self.client, key.environment_id.removeprefix("docker:"), mounts=mounts,
                                 limits=self.limits, user=container_user(),
                                 labels={**self.labels, "org.repair-agent.role": "verifier",
                                         PRISTINE_LABEL: key.pristine_tree_sha256},
                                 extra_tmpfs={RESULT_DIR: f"rw,nosuid,nodev,noexec,size={RESULT_DIR_BYTES},mode=1777"})

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
        snap = Path(self._snap.root)
        restored, refused = [], []
        for rel in tree_files(tree):
            path = tree / rel
            if rel in self._snap.protected_sha256:
                continue
            if path.is_symlink() or self.spec.is_protected(rel) or glob_match(rel, REFUSED_INFRASTRUCTURE):
                refused.append(rel)
                path.unlink()
        for rel, digest in self._snap.protected_sha256.items():
            path = tree / rel
            if path.is_symlink() or not path.is_file() or sha256_file(path) != digest:
                if path.is_symlink() or path.exists():
                    path.unlink()
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(snap / rel, path)
                restored.append(rel)
        return restored, refused


def _made(value: T | None, why: str) -> T:
    if value is None:
        raise RuntimeError(why)
    return value


def _guard_records(res: CommandResult) -> GuardRecords:
    return GuardRecords.parse(res.stderr.whole())
