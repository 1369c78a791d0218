"""The executor: runs one validated action by its schema. Check actions are served by the verifier,
so a chooser cannot pick a weaker test command."""
from __future__ import annotations

import threading
import time
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from verifier import ScopeVerdict, TestVerdict, Verifier, diff_sha256
from verifier.isolation import CommandResult

from .actions import (ApplyPatch, CheckDiff, ReadFile, ReplaceInFile, RunFullSuite, RunTargetTest, Search, TryPatches,
                      BaseAction)
from ..hints.localization import Localization, localize
from ..sandbox import Sandbox
from .edit_text import failed_hunk, git_apply_errors, nearest_lines, replacement_diff
from .state import SearchHit, TryResult


class CommandData(BaseModel):
    """What the journal keeps of a sandbox command beside the output it showed: sizes, a hash, and
    where the whole output was kept when it was too long to show."""

    exit_code: int | None
    timed_out: bool
    stdout_bytes: int
    stdout_sha256: str
    stdout_truncated: bool
    stdout_file: str | None
    stderr_bytes: int
    stderr_file: str | None

    @classmethod
    def of(cls, res: CommandResult) -> "CommandData":
        return cls(exit_code=res.exit_code, timed_out=res.timed_out, stdout_bytes=res.stdout.true_bytes,
                   stdout_sha256=res.stdout.sha256, stdout_truncated=res.stdout.truncated,
                   stdout_file=res.stdout.kept_path, stderr_bytes=res.stderr.true_bytes,
                   stderr_file=res.stderr.kept_path)


class ToolOutcome(BaseModel):
    """One action's result, typed per tool: a sandbox command (search, read, patch) carries its
    `command`; a check carries the verifier's `verdict` (and, for tests, the pytest command)."""

    status: Literal["ok", "error", "timeout", "failed"]
    source: str
    summary: str
    output: str = ""
    raw_error: str | None = None
    duration_s: float
    command: CommandData | None = None
    capped: bool = False  # `output` is not the command's whole output (see Observation.capped)
    hits: tuple[SearchHit, ...] = ()  # search only: the lines found
    applied_diff: str | None = None  # replace_in_file: the diff it became, which a resume re-applies
    new_diff: str | None = None  # set when the action changed the working tree
    verdict: TestVerdict | ScopeVerdict | None = None
    localization: Localization | None = None  # target test only: a hint for choosers, never part of a verdict
    failing: dict[str, str] = {}  # test runs only: each test not passing -> why (the verdict's)
    targets_ok: bool | None = None  # test runs only: whether the target tests passed
    tries: tuple[TryResult, ...] = ()  # try_patches only: each candidate's result

    def journal_data(self) -> dict[str, Any]:
        """The observation's `data` as journaled: a command's record, or the verdict's fields (a test
        run's without pytest's own output, and without what the held-out probe said: an independent
        measure, read from behaviour_file after the stop, kept out of the chooser's view)."""
        command = self.command.model_dump() if self.command is not None else None
        if isinstance(self.verdict, TestVerdict):
            return {**self.verdict.model_dump(mode="json", exclude={"pytest", "behaviour", "correctness"}),
                    "pytest": command}
        if isinstance(self.verdict, ScopeVerdict):
            return self.verdict.model_dump(mode="json")
        if self.tries:
            return {"tries": [t.model_dump(mode="json") for t in self.tries]}
        data = command or {}
        return {**data, "applied_diff": self.applied_diff} if self.applied_diff is not None else data


def _command_status(res: CommandResult, ok_codes=(0,)) -> str:
    return "timeout" if res.timed_out else ("ok" if res.exit_code in ok_codes else "error")


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


class Edit(NamedTuple):
    """What authorization settled for an edit: the diff to apply (replace_in_file's, computed from the
    tree), or the observation that takes the place of running it (a malformed diff, no unique match)."""
    diff: str | None = None
    observation: ToolOutcome | None = None


# Scope-check rules that say the diff cannot be read one way only: nothing in it can run, so the
# chooser is told and may send a better one; no person's grant could make it acceptable.
MALFORMED_RULES = frozenset({"unparsable", "empty", "ambiguous-diff"})


def malformed_diff(parse_error: str | None, details: list[str]) -> ToolOutcome:
    """The observation for a diff the scope check could not read one way only: nothing was applied."""
    detail = parse_error or (details[0] if details else "no file changes found")
    hint = ""
    if "git apply reads added" in detail:
        hint = ("\nA hunk without context lines that only adds lines reads to git as creating a new file. "
                "Include unchanged lines (starting with a space) around the change, copied from the file.")
    why = (f"your diff is malformed: {detail[:1500]}\nNothing was applied.{hint}\nSend a unified diff with "
           "--- a/PATH, +++ b/PATH, @@ headers and context lines, or use replace_in_file {path, old, new}.")
    return ToolOutcome(status="error", source="controller:diff-check", summary="your diff is malformed; nothing was "
                       "applied", raw_error=why, duration_s=0.0)


def unreadable_candidate(n: int, malformed: ToolOutcome) -> ToolOutcome:
    """A try_patches step whose candidate `n` is a malformed diff: nothing ran, and the chooser is told which."""
    return malformed.model_copy(update={"summary": f"candidate {n}: {malformed.summary}; no candidate was run",
                                        "raw_error": f"candidate {n}: {malformed.raw_error}\nNo candidate was run."})


class Executor:
    def __init__(self, sandbox: Sandbox, verifier: Verifier, *, localize: bool = True, mutate: bool = False,
                 hidden_tests: bool = False, goal: str = ""):
        self.sandbox, self.verifier = sandbox, verifier
        # The targets are hidden tests (SWE-bench's protocol): the chooser learns which tests pass and
        # pytest's one-line failure messages, never pytest's output, which quotes the tests' source;
        # and there is no localization (it runs the targets in the chooser's workspace, where they are not).
        self.hidden_tests = hidden_tests
        self.localize = localize and not hidden_tests  # spectrum-based localization with the target-test observation of the given tree
        self.mutate = mutate      # and the mutation analysis after it (a chooser asks for it)
        self.goal = goal          # whose stated examples the mutation analysis evaluates on its fixes
        self.source = f"sandbox:{sandbox.kind}"

    def dispatch(self, action: BaseAction, current_diff: str, edit_diff: str | None = None) -> ToolOutcome:
        """`edit_diff`: for replace_in_file, the diff the controller authorized (see replacement)."""
        started = time.monotonic()
        outcome = self._dispatch(action, current_diff, edit_diff)
        outcome.duration_s = round(time.monotonic() - started, 4)
        return outcome

    def file_text(self, path: str) -> tuple[str | None, str]:
        """The whole file as it is in the working tree, or (None, why it could not be read)."""
        res = self.sandbox.read_file(path)
        if not res.ok or res.timed_out:
            return None, f"could not read {path}: {res.stderr.text.strip()[:500] or f'exit {res.exit_code}'}"
        if res.stdout.truncated:
            return None, (f"{path} ({res.stdout.true_bytes} bytes) is larger than one read returns whole; "
                          "edit it with apply_patch")
        return res.stdout.text, ""

    def replacement(self, action: ReplaceInFile) -> tuple[str | None, ToolOutcome | None]:
        """replace_in_file as a unified diff, which the controller authorizes like any patch, or the
        observation saying why there is none (no match, several matches, an unreadable file)."""
        started = time.monotonic()
        text, problem = self.file_text(action.path)
        diff = None
        if text is not None:
            diff, problem = replacement_diff(action.path, text, action.old, action.new)
        if diff is not None:
            return diff, None
        return None, ToolOutcome(status="error", source=self.source, summary=problem.split("\n", 1)[0][:300],
                                 raw_error=problem, duration_s=round(time.monotonic() - started, 4))

    def _apply(self, diff: str, applied: str) -> ToolOutcome:
        res, new_diff = self.sandbox.apply_patch_and_diff(diff)
        status = _command_status(res)
        if status != "ok" or new_diff is None:
            out = self._from_command(res, status, "patch did not apply; the working tree is unchanged")
            out.raw_error = git_apply_errors(out.raw_error or "") or out.raw_error
            if (hunk := failed_hunk(diff, res.stderr.text)) is not None:
                text, _ = self.file_text(hunk[0])
                if text is not None:
                    out.raw_error = f"{out.raw_error}\n{nearest_lines(text, hunk[1], hunk[0])}"
            return out
        out = self._from_command(res, status, f"{applied}; diff is now {diff_sha256(new_diff)[:12]}")
        # Its stdout is the new diff, kept as new_diff; git's "Applied patch ... cleanly" is no error.
        out.output, out.new_diff, out.raw_error = "", new_diff, None
        return out

    def _dispatch(self, action: BaseAction, current_diff: str, edit_diff: str | None) -> ToolOutcome:
        if isinstance(action, Search):
            res = self.sandbox.search(action.query, action.path_glob)
            status = _command_status(res, ok_codes=(0, 1))  # git grep: 1 means no match
            hits = res.stdout.text.count("\n")
            summary = (f"{hits} matching line(s) for {action.query!r}" if res.exit_code == 0 else
                       f"no match for {action.query!r}" if res.exit_code == 1 else
                       f"search failed (exit {res.exit_code})")
            out = self._from_command(res, status, summary)
            out.hits = SearchHit.of_grep(res.stdout.text, res.stdout.truncated) if res.exit_code == 0 else ()
            return out
        if isinstance(action, ReadFile):
            res = self.sandbox.read_file(action.path, action.start_line, action.end_line,
                                         line_numbers=action.line_numbers)
            status = _command_status(res)
            summary = (f"read {action.path} ({res.stdout.true_bytes} bytes)" if status == "ok"
                       else f"could not read {action.path}")
            return self._from_command(res, status, summary)
        if isinstance(action, ApplyPatch):
            return self._apply(action.diff, "patch applied")
        if isinstance(action, ReplaceInFile):
            if edit_diff is None:
                raise ValueError("replace_in_file is dispatched with the diff the controller authorized")
            out = self._apply(edit_diff, f"replaced in {action.path}")
            out.applied_diff = edit_diff  # what a resume re-applies, as for apply_patch
            if out.status == "ok":
                out.output = edit_diff  # the change as a diff: the model sees exactly what it did
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
                    suite=spec.pass_to_pass, mutate=self.mutate, goal=self.goal)), daemon=True)
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
                               failing=dict(verdict.failing), targets_ok=verdict.targets_ok,
                               localization=spectrum[0] if spectrum else None,
                               raw_error=(pytest.stderr.text[-2000:] or None) if pytest else verdict.apply_error,
                               command=CommandData.of(pytest) if pytest else None)
        if isinstance(action, TryPatches):
            return self._try_patches(action.diffs)
        if isinstance(action, CheckDiff):
            verdict = self.verifier.check_scope(current_diff)
            lines = [f"{f.kind} {f.path} (+{f.added} -{f.removed})" for f in verdict.files]
            lines += [f"VIOLATION {v.path}: {v.rule} — {v.detail}" for v in verdict.violations]
            summary = (f"diff scope ok: {len(verdict.files)} file(s), +{verdict.added_lines} -{verdict.removed_lines}"
                       if verdict.ok else f"diff scope violated: {len(verdict.violations)} problem(s)")
            return ToolOutcome(status="ok" if verdict.ok else "failed", source="verifier:scope", summary=summary,
                               output="\n".join(lines), duration_s=0.0, verdict=verdict)
        raise TypeError(f"no tool for {type(action).__name__}")

    def _try_patches(self, diffs: tuple[str, ...]) -> ToolOutcome:
        """The verifier's check of each diff, one after another: its target tests, and the whole suite
        only when they pass (most candidates fail the targets, and a real project's suite takes
        seconds); the working tree is not touched. What a chooser learns of each is what the same
        check would show it, without pytest's output; the verdicts decide no condition (the diff a
        condition is about is the current one), so each is a screening check: a test that hangs is
        cut at a limit fitted to the suite's speed."""
        tries, lines = [], []
        for n, diff in enumerate(diffs, 1):
            verdict = self.verifier.run_tests(diff, "target_test", screen=True)
            if verdict.targets_ok:
                verdict = self.verifier.run_tests(diff, "full_suite", screen=True)
            tried = TryResult(diff_sha256=diff_sha256(diff), ok=verdict.ok, targets_ok=verdict.targets_ok,
                              timed_out=verdict.timed_out, summary=verdict.summary,
                              failing=dict(verdict.failing), problems=tuple(verdict.problems))
            tries.append(tried)
            word = "PASSED" if verdict.ok else "TIMED OUT" if verdict.timed_out else "failed"
            lines.append(f"candidate {n} (diff {tried.diff_sha256[:12]}): {word}: {verdict.summary}")
            lines += [f"  {test}: {why[:300]}" for test, why in list(verdict.failing.items())[:10]]
            lines += [f"  {problem[:300]}" for problem in verdict.problems[:3]]
        passed = [n for n, t in enumerate(tries, 1) if t.ok]
        summary = (f"{len(passed)} of {len(tries)} candidate(s) pass the full suite"
                   + (f": candidate {', '.join(map(str, passed))}" if passed else ""))
        return ToolOutcome(status="ok" if passed else "failed", source=f"verifier:{self.verifier.backend}",
                           summary=summary, output="\n".join(lines), duration_s=0.0, tries=tuple(tries))

    def _from_command(self, res: CommandResult, status: str, summary: str) -> ToolOutcome:
        output = res.stdout.text
        if res.stdout.truncated:
            output += (f"\n[output capped: {res.stdout.true_bytes} bytes in all, sha256 {res.stdout.sha256[:16]}…, "
                       f"kept in {res.stdout.kept_path}]")
        # stderr only when the command failed: a successful read's warnings are not an error to act on
        # (the whole stderr stays in the journal's data: stderr_bytes, stderr_file).
        raw_error = (res.stderr.text or None) if status != "ok" else None
        if res.timed_out:
            summary = f"TIMED OUT: {summary}"
            raw_error = (raw_error or "") + "\n[the command was killed at its deadline; this is not an empty result]"
        return ToolOutcome(status=status, source=self.source, summary=summary, output=output, capped=res.stdout.truncated,
                           raw_error=raw_error, duration_s=res.duration_s, command=CommandData.of(res))
