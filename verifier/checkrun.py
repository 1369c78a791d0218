"""The mechanics of one check in its fresh container: the suite as a person would run it, what
the host then sees for itself, and the held-out probe in each environment of the check.

Docker: the check's tree (the verifier's pristine copy with the diff applied, protected files
restored, canaries added) is mounted read-only at a random path and copied into a tmpfs at an
ordinary path (checkenv.CheckLayout), where `python -m pytest` runs and may write what it
likes — bounded by the tmpfs, never on the host. The JUnit file is read inside the container
after every process of the check has ended, and the reader then becomes the first probe. The
local backend (no isolation at all) runs the same steps on the host, with one environment.
"""
from __future__ import annotations

import json
import secrets
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .behaviour import EnvironmentRun, rows_of
from .checkenv import CheckLayout, Perturbation
from .heldout import parse_probe_output
from .isolation import CommandResult, HardenedContainer, LocalRunner
from .junit import MAX_JUNIT_BYTES, TestCase, parse_junit_bytes, read_result_file

# Copy the read-only source tree to a fresh directory, go there, become the command.
COPY_THEN_RUN = 'set -e; cd "$2"; rm -rf ./* ./.[!.]* ./..?*; cp -a "$1"/. .; shift 2; exec "$@"'
PROBE_CASE_TIMEOUT_S = 2.0
PROBE_BUDGET_S = 30.0
CLOCK_SHIFT_SEEN_S = 180 * 86400  # a shifted clock moves years; anything under half a year did not take


class SuiteRun(BaseModel):
    """What one pytest run left: its result, the JUnit cases, and what the host saw."""

    result: CommandResult | None
    cases: list[TestCase] = []
    junit_problem: str | None = None
    read_problem: str | None = None
    leftover: list[str] = []
    first_probe: EnvironmentRun | None = None   # docker: the probe that the JUnit reader became


def probe_request(cases: list[dict[str, Any]], paths: list[str], setup: str, root: str) -> dict[str, Any]:
    return {"root": root, "paths": paths, "setup": setup, "cases": cases,
            "case_timeout_s": PROBE_CASE_TIMEOUT_S, "budget_s": PROBE_BUDGET_S}


def _probe_argv(probe: str, request_file: str, env: Perturbation) -> list[str]:
    argv = ["python3", *env.python_flags, probe, request_file]
    return ["faketime", "-f", env.clock_shift, *argv] if env.clock_shift else argv


def _environment_run(env: Perturbation, res: CommandResult | None, stdout: str, host_clock: float) -> EnvironmentRun:
    data, problem = parse_probe_output(stdout)
    if res is not None and res.timed_out:
        data, problem = None, "the held-out probe timed out"
    elif data is None and res is not None and res.exit_code not in (0, None):
        tail = res.stderr.text.strip().splitlines()[-1:] or [""]
        problem = f"{problem}; exit code {res.exit_code}: {tail[0][:200]}"
    shifted = None
    if env.clock_shift and data is not None and isinstance(data.get("clock"), (int, float)):
        shifted = abs(float(data["clock"]) - host_clock) > CLOCK_SHIFT_SEEN_S
    return EnvironmentRun(name=env.name, describe=env.describe, rows=rows_of(data), problem=problem,
                          clock_shifted=shifted)


class DockerCheck:
    """One check in its container (see the module docstring)."""

    def __init__(self, runner: HardenedContainer, layout: CheckLayout, work: Path, tools: Path,
                 import_roots: tuple[str, ...] = ()):
        self.runner, self.layout, self.work, self.tools = runner, layout, work, tools
        # An environment's editable install points where the tree was when it was built; the tree
        # is elsewhere now, so its import roots go on the path wherever it is (as a person's
        # PYTHONPATH would). The isolated environment ignores it: the probe adds the roots it needs.
        self.envs = [env.model_copy(update={"env": {**env.env, "PYTHONPATH": ":".join(
                         f"{env.root}/{r}".removesuffix("/.") for r in import_roots)}}) if import_roots else env
                     for env in layout.perturbations()]

    def suite(self, args: list[str], timeout_s: float, probe_cases: dict[str, Any] | None) -> SuiteRun:
        layout = self.layout
        result = self.runner.exec(["sh", "-c", COPY_THEN_RUN, "sh", layout.source, layout.root,
                                   "python3", "-m", "pytest", *args],
                                  timeout_s=timeout_s, output_dir=self.work, env=self.envs[0].env, workdir="/")
        leftover = [] if result.timed_out else self.runner.end_processes()
        first = None
        if probe_cases is not None and not result.timed_out:
            env = self.envs[0]
            request = self._request(probe_cases, env.root)
            data, read_problem, res, stdout = self.runner.read_file_then(
                layout.junit, MAX_JUNIT_BYTES, _probe_argv(layout.probe, request, env),
                timeout_s=PROBE_BUDGET_S + 15, output_dir=self.work, env=env.env, workdir="/", budgeted=False)
            first = _environment_run(env, res, stdout, _now())
        else:
            data, read_problem = self.runner.read_file(layout.junit, MAX_JUNIT_BYTES)
        cases, junit_problem = parse_junit_bytes(data) if not read_problem else ([], None)
        return SuiteRun(result=result, cases=cases, junit_problem=junit_problem, read_problem=read_problem,
                        leftover=leftover, first_probe=first)

    def probes(self, probe_cases: dict[str, Any], *, fresh: bool, skip_first: bool = False) -> list[EnvironmentRun]:
        """The probe in every environment (the first one already done when `skip_first`): in parallel,
        each as its own user. `fresh`: the tree is copied anew from the source for each (after the
        source changed on the host, e.g. the reference fix applied), else the suite's copy is used
        where the environment's root is the suite's."""
        envs = self.envs[1:] if skip_first else self.envs
        results: dict[str, EnvironmentRun] = {}
        if fresh and envs and envs[0].root == self.layout.root:
            # The copy the other environments may also read, made before they start.
            results[envs[0].name] = self._probe(envs[0], probe_cases, copy=True)
            envs = envs[1:]
            fresh_roots = {self.layout.root}
        else:
            fresh_roots = set()
        threads = [threading.Thread(target=lambda e=e: results.__setitem__(
            e.name, self._probe(e, probe_cases, copy=e.root != self.layout.root or (fresh and e.root not in fresh_roots))))
            for e in envs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        order = [e.name for e in (self.envs[1:] if skip_first else self.envs)]
        return [results[name] for name in order]

    def _probe(self, env: Perturbation, probe_cases: dict[str, Any], *, copy: bool) -> EnvironmentRun:
        argv = _probe_argv(self.layout.probe, self._request(probe_cases, env.root), env)
        if copy:
            argv = ["sh", "-c", COPY_THEN_RUN, "sh", self.layout.source, env.root, *argv]
        # The probe's streams go nowhere but its own result line: its output is the verifier's.
        res = self.runner.exec(argv, timeout_s=PROBE_BUDGET_S + 15, output_dir=self.work, env=env.env,
                               workdir="/" if copy else env.root, user=env.user, budgeted=False)
        if env.clock_shift and res.exit_code == 127 and "faketime" in res.stderr.text:
            # No libfaketime in this image: the same environment on the real clock, said as such.
            unshifted = env.model_copy(update={"clock_shift": ""})
            run = self._probe(unshifted, probe_cases, copy=copy)
            return run.model_copy(update={"clock_shifted": False, "describe": env.describe + " (clock NOT shifted)"})
        return _environment_run(env, res, res.stdout.whole(), _now())

    def _request(self, probe_cases: dict[str, Any], root: str) -> str:
        """The request file, in the read-only tools mount (written on the host; the probe gets its path)."""
        name = f"{secrets.token_hex(6)}.json"
        (self.tools / name).write_text(json.dumps({**probe_cases, "root": root}))
        return f"{self.layout.tools}/{name}"


class LocalCheck:
    """The same steps as plain local processes on the host: NOT isolated, one environment."""

    def __init__(self, runner: LocalRunner, tree: Path, out: Path, probe: Path, work: Path, env: Perturbation):
        self.runner, self.tree, self.out, self.probe, self.work = runner, tree, out, probe, work
        self.envs = [env]

    def suite(self, args: list[str], timeout_s: float, probe_cases: dict[str, Any] | None) -> SuiteRun:
        import sys

        junit = self.out / "junit.xml"
        args = [a.replace("{junit}", str(junit)) for a in args]
        result = self.runner.exec([sys.executable, "-m", "pytest", *args], timeout_s=timeout_s,
                                  output_dir=self.work, workdir=self.tree,
                                  env={"PYTHONDONTWRITEBYTECODE": "1"})
        data, read_problem = read_result_file(junit)
        cases, junit_problem = parse_junit_bytes(data) if not read_problem else ([], None)
        first = self.probes(probe_cases, fresh=False)[0] if probe_cases is not None else None
        return SuiteRun(result=result, cases=cases, junit_problem=junit_problem, read_problem=read_problem,
                        first_probe=first)

    def probes(self, probe_cases: dict[str, Any], *, fresh: bool, skip_first: bool = False) -> list[EnvironmentRun]:
        import sys

        if skip_first:
            return []
        request = self.work / f"probe-{secrets.token_hex(4)}.json"
        request.write_text(json.dumps({**probe_cases, "root": str(self.tree)}))
        res = self.runner.exec([sys.executable, str(self.probe), str(request)], timeout_s=PROBE_BUDGET_S + 15,
                               output_dir=self.work, workdir=self.tree)
        return [_environment_run(self.envs[0], res, res.stdout.whole(), _now())]


def _now() -> float:
    import time

    return time.time()
