"""The executor: runs one validated action by its schema. Check actions are served by the verifier,
so a chooser cannot pick a weaker test command."""
from __future__ import annotations

import threading
import time
from typing import Any, Literal

from pydantic import BaseModel

from verifier import ScopeVerdict, TestVerdict, Verifier, diff_sha256
from verifier.isolation import CommandResult

from .actions import (ApplyPatch, CheckDiff, ReadFile, RunFullSuite, RunTargetTest, Search, _Action)
from .localization import Localization, localize
from .sandbox import Sandbox


class ToolOutcome(BaseModel):
    status: Literal["ok", "error", "timeout", "failed"]
    source: str
    summary: str
    output: str = ""
    raw_error: str | None = None
    duration_s: float
    data: dict[str, Any] = {}
    new_diff: str | None = None  # set when the action changed the working tree
    verdict: TestVerdict | ScopeVerdict | None = None
    localization: Localization | None = None  # target test only: a hint for choosers, never part of a verdict


def _command_status(res: CommandResult, ok_codes=(0,)) -> str:
    return "timeout" if res.timed_out else ("ok" if res.exit_code in ok_codes else "error")


def _command_data(res: CommandResult) -> dict:
    return {"exit_code": res.exit_code, "timed_out": res.timed_out,
            "stdout_bytes": res.stdout.true_bytes, "stdout_sha256": res.stdout.sha256,
            "stdout_truncated": res.stdout.truncated, "stdout_file": res.stdout.kept_path,
            "stderr_bytes": res.stderr.true_bytes, "stderr_file": res.stderr.kept_path}


PYTEST_EXCERPT_CHARS = 6000


def pytest_excerpt(stdout: str, limit: int = PYTEST_EXCERPT_CHARS) -> str:
    """What a chooser needs to localize a failure: the FAILURES section (tracebacks with each
    frame's file:line and the assertion's values) from its start, and the short summary at the
    end, within `limit` characters. Collection-progress noise before the section is dropped."""
    start = stdout.find("= FAILURES =")
    if start < 0:
        start = stdout.find("= ERRORS =")
    text = stdout[stdout.rfind("\n", 0, start) + 1:] if start >= 0 else stdout
    if len(text) <= limit:
        return text
    tail = min(1500, limit // 3)
    head = limit - tail
    return f"{text[:head]}\n... [{len(text) - head - tail} chars omitted] ...\n{text[-tail:]}"


class Executor:
    def __init__(self, sandbox: Sandbox, verifier: Verifier, *, localize: bool = True, mutate: bool = False,
                 hidden_tests: bool = False):
        self.sandbox, self.verifier = sandbox, verifier
        # The targets are hidden tests (SWE-bench's protocol): the chooser learns which tests pass and
        # pytest's one-line failure messages, never pytest's output, which quotes the tests' source;
        # and there is no localization (it runs the targets in the chooser's workspace, where they are not).
        self.hidden_tests = hidden_tests
        self.localize = localize and not hidden_tests  # spectrum-based localization with the target-test observation of the given tree
        self.mutate = mutate      # and the mutation analysis after it (a chooser asks for it)
        self.source = f"sandbox:{sandbox.kind}"

    def dispatch(self, action: _Action, current_diff: str) -> ToolOutcome:
        started = time.monotonic()
        outcome = self._dispatch(action, current_diff)
        outcome.duration_s = round(time.monotonic() - started, 4)
        return outcome

    def _dispatch(self, action: _Action, current_diff: str) -> ToolOutcome:
        if isinstance(action, Search):
            res = self.sandbox.search(action.query, action.path_glob)
            status = _command_status(res, ok_codes=(0, 1))  # git grep: 1 means no match
            hits = res.stdout.text.count("\n")
            summary = (f"{hits} matching line(s) for {action.query!r}" if res.exit_code == 0 else
                       f"no match for {action.query!r}" if res.exit_code == 1 else
                       f"search failed (exit {res.exit_code})")
            return self._from_command(res, status, summary)
        if isinstance(action, ReadFile):
            res = self.sandbox.read_file(action.path, action.start_line, action.end_line,
                                         line_numbers=action.line_numbers)
            status = _command_status(res)
            summary = (f"read {action.path} ({res.stdout.true_bytes} bytes)" if status == "ok"
                       else f"could not read {action.path}")
            return self._from_command(res, status, summary)
        if isinstance(action, ApplyPatch):
            res, new_diff = self.sandbox.apply_patch_and_diff(action.diff)
            status = _command_status(res)
            if status != "ok" or new_diff is None:
                return self._from_command(res, status, "patch did not apply; the working tree is unchanged")
            out = self._from_command(res, status, f"patch applied; diff is now {diff_sha256(new_diff)[:12]}")
            out.output, out.new_diff = "", new_diff  # its stdout is the new diff, kept as new_diff
            return out
        if isinstance(action, (RunTargetTest, RunFullSuite)):
            kind = "target_test" if isinstance(action, RunTargetTest) else "full_suite"
            spectrum: list[Localization] = []
            tracer = None
            if kind == "target_test" and self.localize and not current_diff.strip():
                # On the tree as given (where a chooser localizes before patching), alongside the
                # verifier's check, in the agent's own sandbox: nothing it finds reaches the verdict.
                spec = self.verifier.spec
                tracer = threading.Thread(target=lambda: spectrum.append(localize(
                    self.sandbox, spec.target_tests, spec.writable + tuple(self.verifier.granted),
                    suite=spec.pass_to_pass, mutate=self.mutate)), daemon=True)
                tracer.start()
            try:
                verdict = self.verifier.run_tests(current_diff, kind)
            finally:
                if tracer is not None:
                    tracer.join()
            failures = "\n".join(f"{k}: {v}" for k, v in verdict.failing.items())
            output = "\n".join(filter(None, [verdict.summary, failures, *verdict.problems]))
            pytest = None if self.hidden_tests else verdict.pytest
            if pytest is not None:
                output += "\n--- pytest output (failures) ---\n" + pytest_excerpt(pytest.stdout.text)
            return ToolOutcome(status="ok" if verdict.ok else ("timeout" if verdict.timed_out else "failed"),
                               source=f"verifier:{self.verifier.backend}", summary=verdict.summary,
                               output=output, duration_s=0.0, verdict=verdict,
                               localization=spectrum[0] if spectrum else None,
                               raw_error=(pytest.stderr.text[-2000:] or None) if pytest else verdict.apply_error,
                               # What the held-out probe said (held-out checks, generated inputs,
                               # correctness) stays out of the chooser's view: it is an independent
                               # measure, read from behaviour_file after the stop.
                               data={**verdict.model_dump(mode="json", exclude={"pytest", "behaviour", "correctness"}),
                                     "pytest": _command_data(pytest) if pytest else None})
        if isinstance(action, CheckDiff):
            verdict = self.verifier.check_scope(current_diff)
            lines = [f"{f.kind} {f.path} (+{f.added} -{f.removed})" for f in verdict.files]
            lines += [f"VIOLATION {v.path}: {v.rule} — {v.detail}" for v in verdict.violations]
            summary = (f"diff scope ok: {len(verdict.files)} file(s), +{verdict.added_lines} -{verdict.removed_lines}"
                       if verdict.ok else f"diff scope violated: {len(verdict.violations)} problem(s)")
            return ToolOutcome(status="ok" if verdict.ok else "failed", source="verifier:scope", summary=summary,
                               output="\n".join(lines), duration_s=0.0, verdict=verdict,
                               data=verdict.model_dump(mode="json"))
        raise TypeError(f"no tool for {type(action).__name__}")

    def _from_command(self, res: CommandResult, status: str, summary: str) -> ToolOutcome:
        output = res.stdout.text
        if res.stdout.truncated:
            output += (f"\n[output capped: {res.stdout.true_bytes} bytes in all, sha256 {res.stdout.sha256[:16]}…, "
                       f"kept in {res.stdout.kept_path}]")
        raw_error = res.stderr.text or None
        if res.timed_out:
            summary = f"TIMED OUT: {summary}"
            raw_error = (raw_error or "") + "\n[the command was killed at its deadline; this is not an empty result]"
        return ToolOutcome(status=status, source=self.source, summary=summary, output=output,
                           raw_error=raw_error, duration_s=res.duration_s, data=_command_data(res))
