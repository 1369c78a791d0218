"""The state machine: from the View, the next action (test, localize, apply, check, hand off)."""
from __future__ import annotations

import re

from ...loop.actions import (MAX_TRIES_PER_STEP, ApplyPatch, CheckDiff, ReadFile, RunFullSuite, RunTargetTest, Search,
                             Stop, TryPatches)
from ...loop.state import View
from ..base import ChooserDescription, ChooserStep
from .catalogue import Candidate
from .failure import parse_failure, writable_path
from .patch import render_patch, unanchored_end
from .ranking import order, scored_candidates
from .plan import Plan
from ...in_sandbox.statement_edits import source_lines
from .reads import clean_fix_lines, find_quoted_pattern, read_enclosing_def, read_goal_function

WINDOW_BEFORE, WINDOW_AFTER = 30, 14   # a read around a traceback frame (the enclosing def is usually above)
DEF_WINDOW = 45                        # a read from a `def` line found by search
MAX_SEARCHES = 3
UNITTEST_METHOD = re.compile(r"(?:assert|fail)(?:[A-Z]|$)")   # assertEqual: unittest's, never the repository's
STEPS_FOR_A_CANDIDATE = 3              # apply, full suite (it runs the target tests too), check_diff
# A full suite that passes also shows the target tests passing on that diff (the verifier reports
# them in its verdict), so no separate target run follows: a right candidate costs three steps.
STEPS_FOR_A_RIGHT_CANDIDATE = 3
WINDOW_BEFORE_SUSPECT, WINDOW_AFTER_SUSPECT = 25, 10   # around a cluster of suspicious lines (the def is above)
CLUSTER_SHARE = 0.5                    # lines at least this suspicious, relative to the line read for
MIN_SUSPICION = 0.3                    # relative to the best line: below it, searching by name is better
MAX_SUSPECT_SPAN = 80
CLUSTER_GAP = 25                       # suspicious lines this close belong to one stretch of code
TIED_SUSPICION = 0.9                   # as suspicious as the best line, give or take: read before trying
MAX_TIED_READS = 2
ANCHOR_READ = 6                        # lines read after a window's last line, so a hunk there applies


def _cluster(suspicious: dict[tuple[str, int], float], path: str, line: int) -> tuple[int, int]:
    """The first and last fairly suspicious lines near `line` in `path`: usually the body of one
    function, whose `def` the read window's margin above then shows. The cluster grows along a chain
    of such lines no more than CLUSTER_GAP apart (one function's body runs in one stretch), within
    MAX_SUSPECT_SPAN around `line`."""
    top = suspicious[(path, line)]
    near = sorted(n for (p, n), v in suspicious.items()
                  if p == path and v >= top * CLUSTER_SHARE and abs(n - line) <= MAX_SUSPECT_SPAN)
    lo = hi = line
    for n in near:                      # forwards from `line`
        if hi < n <= hi + CLUSTER_GAP and n - lo <= MAX_SUSPECT_SPAN:
            hi = n
    for n in reversed(near):            # and backwards
        if hi - MAX_SUSPECT_SPAN <= n < lo and n >= lo - CLUSTER_GAP:
            lo = n
    return lo, hi


def _read_mutant_fix(plan: Plan):
    """A window around the line of a mutant that turned every failing target green and broke no
    passing test, when it was not read yet: the likeliest place of all (at most MAX_TIED_READS)."""
    if len(plan.reads) >= MAX_TIED_READS:
        return None
    for path, line in clean_fix_lines(plan.failure):
        if line not in plan.known.get(path, {}):
            return ReadFile(path=path, start_line=max(1, line - WINDOW_BEFORE_SUSPECT), end_line=line + WINDOW_AFTER_SUSPECT)
    return None


def _unpatched(applied: Candidate | None, path: str, line: int) -> bool:
    """Does this line of the tree read the same as the original? Only the candidate on the tree
    differs from it (each patch reverts the one before): its line, and the lines after a
    candidate that inserted some."""
    if applied is None or applied.path != path:
        return True
    return line < applied.line or (len(applied.new_lines) == 1 and line != applied.line)


class SearchChooser:
    name = "search"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.last_plan: Plan | None = None
        self.last_candidates: list[Candidate] = []
        # Pure caches of derived facts, keyed by everything they are computed from: replaying a
        # View never re-ranks or re-renders what an earlier step already did.
        self._scored: dict[str, list[Candidate]] = {}
        self._rankings: dict[tuple, list[Candidate]] = {}
        self._patches: dict[tuple[str, str | None, str], Candidate | None] = {}

    def describe(self) -> ChooserDescription:
        # The target-test observation brings the mutation analysis too.
        return ChooserDescription(name=self.name, seed=self.seed, mutation_analysis=True)

    # The single entry point: one proposal from the View. An exception is a bug in this chooser and
    # ends the run as chooser_error (with its traceback), never as a hand-off.
    def choose(self, view: View) -> ChooserStep:
        return ChooserStep(proposal=self._choose(view))

    def _choose(self, view: View):
        plan = self._replay(view)
        self.last_plan = plan
        if plan.failure is None:
            return RunTargetTest()
        # A candidate is on the tree: finish checking it.
        if plan.applied is not None and plan.awaiting:
            return {"full": RunFullSuite, "target": RunTargetTest, "check": CheckDiff}[plan.awaiting]()
        candidates = self._ranked(plan, view)
        self.last_candidates = candidates
        tried = {c.key for c, _ in plan.tried}
        # A candidate in a protected file (a test folder inside the package, under the default `**`)
        # would be refused and end the run: the next one is tried instead.
        untried = [c for c in candidates if c.key not in tried and view.authorization.may_edit(c.path)]
        # Before the first candidate: the code of a pattern the failure quotes, when one of its ranges
        # stops one short of a character of the input it rejected; then every place the spectrum
        # ranks as high as the best line (a wrapper and the function it calls often tie).
        if not plan.tried and plan.applied is None and view.steps_left > 2 * STEPS_FOR_A_CANDIDATE + 1:
            step = (_read_mutant_fix(plan) or find_quoted_pattern(plan, view.authorization.writable)
                    or self._read_tied_suspects(plan) or read_goal_function(plan, view)
                    or read_enclosing_def(plan))
            if step is not None:
                return step
        # Localize further while there is nothing to try and budget to try something later.
        if not untried and view.steps_left > STEPS_FOR_A_CANDIDATE + 1:
            step = self._localize(plan, view)
            if step is not None:
                return step
        if not untried:
            return self._handoff(plan, candidates, "no candidate patch left to try")
        if view.steps_left < STEPS_FOR_A_RIGHT_CANDIDATE:
            return self._handoff(plan, candidates, f"{view.steps_left} step(s) left: not enough to try and check "
                                 "another candidate")
        left = {u.key for u in untried}
        passed = [c for c in plan.passed if c.key in left]
        if passed:   # the verifier already passed it in a batch: apply it, then check it as usual
            return ApplyPatch(diff=render_patch(plan.known, plan.applied, passed[0]))
        gap = unanchored_end(plan.known, plan.eof, plan.applied, untried[0])
        if gap is not None and f"{gap[0]}:{gap[1]}" not in plan.reads \
                and view.steps_left > STEPS_FOR_A_RIGHT_CANDIDATE:
            # the edit is on the last line read: a hunk without a line after it would not apply
            return ReadFile(path=gap[0], start_line=gap[1], end_line=gap[1] + ANCHOR_READ - 1)
        # Once the best candidate has failed, the next ones are tried several to a step (try_patches):
        # two steps a try would leave a budget of 12 about four tries in all.
        if plan.tried and view.steps_left > STEPS_FOR_A_RIGHT_CANDIDATE:
            batch = [c for c in untried if unanchored_end(plan.known, plan.eof, None, c) is None][:MAX_TRIES_PER_STEP]
            if len(batch) > 1:
                return TryPatches(diffs=tuple(render_patch(plan.known, None, c) for c in batch))
        return ApplyPatch(diff=render_patch(plan.known, plan.applied, untried[0]))

    # -- localization --------------------------------------------------------------------------
    def _read_tied_suspects(self, plan: Plan):
        f = plan.failure
        unread_frame = any(line not in plan.known.get(path, {}) for path, line in f.frames)
        if len(plan.reads) >= MAX_TIED_READS or (unread_frame and not plan.reads):
            return None   # a traceback frame is read first (by the plain localization), then the spectrum's best
        return _read_suspects(plan, TIED_SUSPICION)

    def _localize(self, plan: Plan, view: View):
        f = plan.failure
        writable = view.authorization.writable
        # 1. the innermost traceback frames in scope, one window each
        for path, line in reversed(f.frames):
            if line not in plan.known.get(path, {}):
                key = f"{path}:{max(1, line - WINDOW_BEFORE)}"
                if key not in plan.reads:
                    return ReadFile(path=path, start_line=max(1, line - WINDOW_BEFORE), end_line=line + WINDOW_AFTER)
        # 2. the lines the failing tests run and passing tests do not (spectrum), most suspicious first
        step = _read_suspects(plan, MIN_SUSPICION)
        if step is not None:
            return step
        # 3. a `def` found by search
        for path, line in plan.search_hits:
            if line not in plan.known.get(path, {}) and f"{path}:{line}" not in plan.reads:
                return ReadFile(path=path, start_line=line, end_line=line + DEF_WINDOW)
        # 4. search for the functions the failing assertion calls
        glob = writable[0] if len(writable) == 1 else None
        if len(plan.searches) < MAX_SEARCHES:
            for name in (c for c in f.callees if not UNITTEST_METHOD.match(c)):
                for query in (f"def {name}(", f"class {name}"):
                    if query not in plan.searches:
                        if query.startswith("class") and any(s.startswith(f"def {name}(") and s in plan.searches
                                                             for s in plan.searches) and plan.search_hits:
                            continue
                        return Search(query=query, path_glob=glob)
        return None

    # -- candidates ----------------------------------------------------------------------------
    def _ranked(self, plan: Plan, view: View) -> list[Candidate]:
        # Candidates depend only on what was read, searched and parsed: one ranking per such state,
        # however many steps replay it (a pure cache: the answer is the same without it).
        # What failed tries showed only reorders them.
        key = plan.fingerprint(view.goal.text)
        if key not in self._scored:
            self._scored[key] = scored_candidates(plan.failure, plan.known, plan.search_hits, view.goal.text)
        order_key = (key, tuple(sorted(plan.effects.items())))
        if order_key not in self._rankings:
            self._rankings[order_key] = order(self._scored[key], self.seed, plan.effects)
        return self._rankings[order_key]

    # -- reading the evidence back -------------------------------------------------------------
    def _replay(self, view: View) -> Plan:
        plan = Plan()
        writable = view.authorization.writable
        for ev in view.evidence:
            action = ev.action
            tool = action.tool
            if tool == "run_target_test" and plan.failure is None:
                plan.failure = parse_failure(ev, view.goal.text, writable)
                plan.initial_failing = dict(ev.failing)
            elif isinstance(action, Search):
                plan.searches.append(action.query)
                for found in ev.hits:
                    if writable_path(found.path, writable) == found.path:
                        hit = (found.path, found.line)
                        plan.hits_by_query.setdefault(action.query, []).append((*hit, found.text))
                        if hit not in plan.search_hits:
                            plan.search_hits.append(hit)
            elif isinstance(action, ReadFile):
                start = action.start_line or 1
                plan.reads.append(f"{action.path}:{start}")
                if ev.status == "ok" and not ev.capped:
                    known = plan.known.setdefault(action.path, {})
                    got = source_lines(ev.output)   # as Python numbers lines: a page break is no line end
                    end = action.end_line
                    if end is None or len(got) < end - start + 1:   # the read ran past the file's end
                        plan.eof[action.path] = start + len(got) - 1
                    for i, text in enumerate(got):
                        if _unpatched(plan.applied, action.path, start + i):   # never learn a patched line
                            known.setdefault(start + i, text if text.endswith("\n") else text + "\n")
                    if not known:
                        del plan.known[action.path]
            elif isinstance(action, ApplyPatch):
                # Which candidate this was: recompute the ranking as it stood before this step.
                cand = self._candidate_for(action.diff, plan, view, plan.applied)
                if ev.status == "ok" and cand is not None:
                    # Straight to the full suite: it decides the target tests too, so a wrong candidate
                    # costs two steps and a right one three (a separate target run would add one).
                    plan.applied, plan.awaiting = cand, "full"
                elif cand is not None:
                    plan.tried.append((cand, "patch did not apply"))
            elif isinstance(action, TryPatches):
                for diff, result in zip(action.diffs, ev.tries):
                    cand = self._candidate_for(diff, plan, view, None)
                    if cand is None:
                        continue
                    if result.ok and result.targets_ok:
                        plan.passed.append(cand)
                        continue
                    effect = effect_of(plan.initial_failing, result.failing)
                    if effect is not None:
                        plan.effects[(cand.path, cand.line)] = max(effect, plan.effects.get((cand.path, cand.line), effect))
                    plan.tried.append((cand, "full suite fails (the target passes: a trap)" if result.targets_ok
                                       else "target test still fails"))
            elif tool in ("run_target_test", "run_full_suite", "check_diff") and plan.applied is not None:
                c = plan.applied
                passed = ev.status == "ok"
                if tool == "run_target_test":
                    if not passed and plan.awaiting:
                        plan.tried.append((c, "target test still fails")); plan.awaiting = None
                    elif passed and plan.awaiting == "target":
                        plan.awaiting = "check"
                elif tool == "run_full_suite":
                    targets_ok = ev.targets_ok
                    if passed and targets_ok is not False:
                        plan.awaiting = "check"
                    elif passed:   # the pass-to-pass tests pass, the targets do not: not a repair
                        plan.tried.append((c, "target test still fails")); plan.awaiting = None
                    else:
                        effect = effect_of(plan.initial_failing, ev.failing)
                        if effect is not None:
                            plan.effects[(c.path, c.line)] = max(effect, plan.effects.get((c.path, c.line), effect))
                        plan.tried.append((c, "full suite fails (the target passes: a trap)" if targets_ok
                                           else "target test still fails" if targets_ok is False
                                           else "full suite fails")); plan.awaiting = None
                else:
                    if not passed:
                        plan.tried.append((c, "diff out of scope")); plan.awaiting = None
        return plan

    def _candidate_for(self, diff: str, plan: Plan, view: View, base: Candidate | None) -> Candidate | None:
        """The candidate whose patch is `diff`, rendered on the tree holding `base` (None: the tree as
        given, as try_patches diffs are)."""
        key = (plan.fingerprint(view.goal.text), base.key if base else None, diff)
        if key not in self._patches:
            self._patches[key] = next((c for c in self._ranked(plan, view)
                                       if render_patch(plan.known, base, c) == diff), None)
        return self._patches[key]

    # -- handing over --------------------------------------------------------------------------
    def _handoff(self, plan: Plan, candidates: list[Candidate], why: str) -> Stop:
        f = plan.failure
        tried = "; ".join(f"{c.label()} -> {outcome}" for c, outcome in plan.tried) or "none"
        suspects = ", ".join(f"{p}:{l}" for p, l in f.frames) or "no traceback frame inside the writable scope"
        searched = ", ".join(plan.searches) or "nothing"
        spectrum = ", ".join(f"{p}:{n} ({v:.2f})" for (p, n), v in sorted(f.suspicious.items(), key=lambda kv: -kv[1])[:5])
        left = [c for c in candidates if c.key not in {t.key for t, _ in plan.tried}]
        summary = (f"failure: {f.message or f.exception or 'unknown'}; hints: {sorted(f.hints) or 'none'}. "
                   f"suspect frames: {suspects}; suspicious lines (spectrum, relative score): {spectrum or 'none'}; "
                   f"searched: {searched}; read: {', '.join(plan.reads) or 'nothing'}. "
                   f"candidates tried ({len(plan.tried)}): {tried}. untried candidates: {len(left)}"
                   + (f" (next: {left[0].label()})" if left else "")
                   + (f". The working tree still holds the last failed candidate {plan.applied.label()}."
                      if plan.applied is not None and plan.tried and plan.tried[-1][0] is plan.applied else "."))
        return Stop(reason=f"search chooser: {why}", summary=summary[:7900])


BROKEN_MARKERS = ("ImportError", "ModuleNotFoundError", "SyntaxError", "NameError", "collection")


def effect_of(before: dict[str, str], after: dict[str, str]) -> float | None:
    """What a wrong candidate says about its line, from the tests that failed before it (`before`)
    and after it (`after`), as a score bonus for the other edits of that line (mutation-based
    localization, as in Metallaxis, with the one try per line a small budget allows): +2 when one
    of the failing tests passes now and it broke at most as many as it mended, -2 when it changed
    nothing at all (each failing test fails as before, no other fails). A changed failure says
    little on its own (nearly any edit on the failing path changes it): 0. None when nothing can be
    told: no failure to compare, or a candidate that broke everything (an import error)."""
    if not before or not after:
        return None
    if len(after) > 3 * len(before) + 5 or any(m in msg for msg in after.values() for m in BROKEN_MARKERS
                                                 if not any(m in old for old in before.values())):
        return None
    mended = sum(test not in after for test in before)
    broke = len(set(after) - set(before))
    if mended:
        return 2.0 if broke <= mended else 0.0
    return -2.0 if after == before else 0.0


def _read_suspects(plan: Plan, min_score: float) -> ReadFile | None:
    """A window around the most suspicious unread lines of the spectrum scoring at least `min_score`."""
    f = plan.failure
    assert f is not None
    for (path, line), rel_score in sorted(f.suspicious.items(), key=lambda kv: (-kv[1], kv[0])):
        if rel_score < min_score:
            break
        if line not in plan.known.get(path, {}):
            lo, hi = _cluster(f.suspicious, path, line)
            start, end = max(1, lo - WINDOW_BEFORE_SUSPECT), hi + WINDOW_AFTER_SUSPECT
            known = plan.known.get(path, {})
            while start in known and start < line:   # the lines already read are not read again: the
                start, end = start + 1, end + 1       # window moves on, as long as it was
            if f"{path}:{start}" not in plan.reads:
                return ReadFile(path=path, start_line=start, end_line=end)
    return None
