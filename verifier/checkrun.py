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
import shlex
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
# The same for pytest, whose output goes to files first: a process it leaves behind (a detached
# child) holds those, not the exec's stream, so the exec ends when pytest does.
COPY_THEN_TEST = ('set -e; cd "$2"; rm -rf ./* ./.[!.]* ./..?*; cp -a "$1"/. .; out="$3"; shift 3; set +e; '
                  '"$@" > "$out.1" 2> "$out.2"; code=$?; cat "$out.1"; cat "$out.2" >&2; exit $code')
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
    runs: list[EnvironmentRun] = []   # the probe in each environment (none: no held-out file, or no time)


def probe_request(cases: list[dict[str, Any]], paths: list[str], setup: str, root: str) -> dict[str, Any]:
    return {"root": root, "paths": paths, "setup": setup, "cases": cases,
            "case_timeout_s": PROBE_CASE_TIMEOUT_S, "budget_s": PROBE_BUDGET_S}


def _probe_argv(probe: str, request_file: str, env: Perturbation) -> list[str]:
    return ["python3", *env.python_flags, probe, request_file]  # the check's own environment: no shift


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
    """One check in its container (see the module docstring). The perturbed environments' probes run
    in one exec, as another user, on their own copy of the tree, while pytest runs (the check's
    container has a core for each); the check's own probe runs after pytest, in its tree."""

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
        perturbed: list[list[EnvironmentRun] | BaseException] = []

        def beside() -> None:
            try:
                perturbed.append(self.perturbed(probe_cases))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the check's own thread
                perturbed.append(exc)
        side = threading.Thread(target=beside, daemon=True) if probe_cases is not None else None
        if side is not None:
            side.start()
        try:
            result = self.runner.exec(["sh", "-c", COPY_THEN_TEST, "sh", layout.source, layout.root,
                                       f"/tmp/{secrets.token_hex(6)}", "python3", "-m", "pytest", *args],
                                      timeout_s=timeout_s, output_dir=self.work, env=self.envs[0].env, workdir="/")
        finally:
            if side is not None:
                side.join()  # before looking for leftovers: the probes are not the check's leftovers
        if perturbed and isinstance(perturbed[0], BaseException) and not result.timed_out:
            raise perturbed[0]  # the engine failed beside the suite: a dependency failure, said as such
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
        others = perturbed[0] if perturbed and isinstance(perturbed[0], list) else None
        runs = [first, *others] if first is not None and others is not None else []
        return SuiteRun(result=result, cases=cases, junit_problem=junit_problem, read_problem=read_problem,
                        leftover=leftover, runs=runs)

    def probes_fresh(self, probe_cases: dict[str, Any]) -> list[EnvironmentRun]:
        """Every environment again on fresh copies of the source (after the host changed it: the
        reference fix applied), the check's and the perturbed ones at once."""
        env = self.envs[0]
        first: list[EnvironmentRun | BaseException] = []

        def check_env() -> None:
            argv = ["sh", "-c", COPY_THEN_RUN, "sh", self.layout.source, env.root,
                    *_probe_argv(self.layout.probe, self._request(probe_cases, env.root), env)]
            try:
                res = self.runner.exec(argv, timeout_s=PROBE_BUDGET_S + 15, output_dir=self.work, env=env.env,
                                       workdir="/", budgeted=False)
                first.append(_environment_run(env, res, res.stdout.whole(), _now()))
            except BaseException as exc:  # noqa: BLE001 - re-raised below, in the check's own thread
                first.append(exc)
        side = threading.Thread(target=check_env, daemon=True)
        side.start()
        try:
            others = self.perturbed(probe_cases)
        finally:
            side.join()
        if isinstance(first[0], BaseException):
            raise first[0]
        return [first[0], *others]

    def perturbed(self, probe_cases: dict[str, Any] | None) -> list[EnvironmentRun]:
        """The perturbed environments' probes in one exec as their user: the tree copied to their
        path, each probe started with exactly its environment (`env -i`), its clock shifted when the
        image has libfaketime, both at once; their result lines come back in order between
        separators only this exec knows."""
        envs = self.envs[1:]
        if probe_cases is None or not envs:
            return []
        separator = f"--{secrets.token_hex(8)}--"
        # libfaketime preloaded directly (the faketime command waits for every process its child
        # leaves behind, so a detached child would hold the check for its whole life).
        lines = ['FT=$(ls /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 2>/dev/null | head -n 1)']
        outs = [f"/tmp/{secrets.token_hex(6)}" for _ in envs]
        for env, out in zip(envs, outs):
            shift = shlex.quote(env.clock_shift) if env.clock_shift else ""
            clock = f'${{FT:+LD_PRELOAD=$FT}} ${{FT:+FAKETIME={shift}}}' if shift else ""
            variables = " ".join(shlex.quote(f"{k}={v}") for k, v in env.env.items())
            command = " ".join(shlex.quote(a) for a in ["python3", *env.python_flags, self.layout.probe,
                                                        self._request(probe_cases, env.root, env.cwd)])
            lines.append(f"(cd {shlex.quote(env.root)} && env -i {variables} {clock} {command} > {out} 2>/dev/null) &")
        lines.append("wait")
        lines += [f"echo {separator}; cat {out}" for out in outs]
        script = 'set -e; cd "$2"; rm -rf ./* ./.[!.]* ./..?*; cp -a "$1"/. .; set +e\n' + "\n".join(lines)
        res = self.runner.exec(["sh", "-c", script, "sh", self.layout.source, envs[0].root],
                               timeout_s=PROBE_BUDGET_S + 15, output_dir=self.work, workdir="/",
                               user=envs[0].user, budgeted=False)
        parts = res.stdout.whole().split(separator + "\n")[1:]
        parts += [""] * (len(envs) - len(parts))
        return [_environment_run(env, res, part, _now()) for env, part in zip(envs, parts)]

    def _request(self, probe_cases: dict[str, Any], root: str, cwd: str | None = None) -> str:
        """The request file, in the read-only tools mount (written on the host; the probe gets its path)."""
        name = f"{secrets.token_hex(6)}.json"
        (self.tools / name).write_text(json.dumps({**probe_cases, "root": root, "cwd": cwd}))
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
        runs = self.probes_fresh(probe_cases) if probe_cases is not None and not result.timed_out else []
        return SuiteRun(result=result, cases=cases, junit_problem=junit_problem, read_problem=read_problem, runs=runs)

    def probes_fresh(self, probe_cases: dict[str, Any]) -> list[EnvironmentRun]:
        import sys

        request = self.work / f"probe-{secrets.token_hex(4)}.json"
        request.write_text(json.dumps({**probe_cases, "root": str(self.tree)}))
        res = self.runner.exec([sys.executable, str(self.probe), str(request)], timeout_s=PROBE_BUDGET_S + 15,
                               output_dir=self.work, workdir=self.tree)
        return [_environment_run(self.envs[0], res, res.stdout.whole(), _now())]


def _now() -> float:
    import time

    return time.time()
