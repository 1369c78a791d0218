"""Where the search chooser ranks a scenario's reference fix, replayed from a run without containers.

    .venv/bin/python bench/search_replay.py RUN_DIR [RUN_DIR ...] [--budget 12] [--seed 0] [--top 8]

Each RUN_DIR is a run of any chooser on a scenario with a `reference_fix` (a sweep's run
directories will do). From its journal only the first target-test observation (the failure and
the spectrum localization) and the View's goal and authorization are taken. The search chooser is
then driven step by step against the scenario's buggy tree on the host: a read or a search is
answered from the tree as the sandbox would (`sed -n`, `git grep -n -F`), an applied candidate
counts as right when it turns the file into the reference fix's text, and a wrong one as a failed
full suite (two steps, as in a run); a batch of candidates (`try_patches`) costs one step, and counts
as right when one of them is (then three more: apply, full suite, scope check). No test runs, so a
candidate that only the full suite would refuse is not told apart, but a wrong one that the
observation's mutation analysis found clean with the same behaviour digest as the reference (it did
what the reference does on every test the analysis checked) is taken to pass the full suite too: it
ends the replay as a plausible repair, as it would end the run. The replay measures the ranking, the
sweep measures the repairs.

Printed per run: the rank of the right candidate when the first candidate was proposed (or why it
has none: the line was never read, or no catalogue edit makes it), the best-ranked candidates, and
whether the replayed run would reach the right candidate within the budget.
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import json
import sys
from pathlib import Path

from unidiff import PatchSet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifier import diff_sha256  # noqa: E402
from repair_agent.loop.actions import ApplyPatch, ReadFile, Search, Stop, TryPatches  # noqa: E402
from repair_agent.choosers.search.failure import writable_path  # noqa: E402
from repair_agent.choosers.search.mutants import fix_lines  # noqa: E402
from repair_agent.choosers.search.patch import render_patch  # noqa: E402
from repair_agent.choosers.search import Candidate, SearchChooser  # noqa: E402
from repair_agent.choosers.search.chooser import STEPS_FOR_A_RIGHT_CANDIDATE  # noqa: E402
from repair_agent.loop.journal import StepRecord, evidence_by_id, read_records  # noqa: E402
from repair_agent.scenarios.scenario import Scenario, load_manifest  # noqa: E402
from repair_agent.loop.state import Evidence, SearchHit, TryResult, View  # noqa: E402



def apply_diff(text: str, diff: str) -> str:
    """`text` (one file) with the hunks of a unified diff applied at their stated lines."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    for hunk in (h for patched in PatchSet(diff) for h in patched):
        # A hunk with no old lines states the line it follows; any other its first old line.
        start = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1
        out.extend(lines[at:start])
        at = start
        for row in hunk:
            if row.is_context:
                out.append(lines[at])
                at += 1
            elif row.is_removed:
                at += 1
            elif row.is_added:
                out.append(row.value)
    return "".join(out + lines[at:])


def diff_path(diff: str) -> str:
    patch = PatchSet(diff)
    if not patch:
        raise ValueError("no file in the reference fix")
    return patch[0].path


def with_candidate(text: str, c: Candidate) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:c.line - 1] + list(c.new_lines) + lines[c.line - 1 + c.span:])


def _evidence(n: int, action, status: str, output: str, data: dict | None = None) -> Evidence:
    failed_tries = tuple(TryResult(diff_sha256=diff_sha256(d), ok=False, targets_ok=False)
                         for d in action.diffs) if isinstance(action, TryPatches) else ()
    return Evidence(id=f"R{n}", step=n, tool=action.tool, status=status, source="replay",
                    started_at="2026-01-01T00:00:00+00:00", duration_s=0.0, summary=f"{action.tool} {status}",
                    output=output, diff_sha256="0" * 64, fingerprint=hashlib.sha256(output.encode()).hexdigest(),
                    result_sha256="r", data=data or {}, action=action, tries=failed_tries,
                    hits=SearchHit.of_grep(output, capped=False) if isinstance(action, Search) else ())


def _search(tree: Path, query: str, glob: str | None) -> str:
    hits = []
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree).as_posix()
        if not p.is_file() or ".git/" in rel or "__pycache__" in rel or (glob and not fnmatch.fnmatch(rel, glob)):
            continue
        try:
            for i, line in enumerate(p.read_text().splitlines(), 1):
                if query in line:
                    hits.append(f"{rel}:{i}:{line}")
        except (UnicodeDecodeError, OSError):
            continue
    return "\n".join(hits) + ("\n" if hits else "")


def replay(run_dir: Path, budget: int, seed: int, top: int, spectrum_top: int | None = None) -> dict | None:
    """None when the run has no target-test observation to start from (it ended before one)."""
    if not (run_dir / "journal.jsonl").is_file() or not (run_dir / "journal.jsonl").read_text().strip():
        return None
    records = read_records(run_dir / "journal.jsonl")
    setup = json.loads((run_dir / "journal.jsonl").read_text().splitlines()[0])
    scenario = load_manifest(Path(setup["manifest"]))
    evidence = evidence_by_id(records)
    steps = [r for r in records if isinstance(r, StepRecord)]
    first = next((r for r in steps if r.evidence is not None and r.evidence.tool == "run_target_test"), None)
    if first is None or first.evidence is None:
        return None
    observed = first.evidence
    loc = observed.localization
    if spectrum_top is not None and loc is not None:   # as if the observation had listed fewer lines
        observed = observed.model_copy(update={"localization": loc.model_copy(update={"lines": loc.lines[:spectrum_top]})})
    return simulate(scenario, first.view.view(evidence), observed, budget, seed, top)


def simulate(scenario: Scenario, view0: View, first: Evidence, budget: int, seed: int, top: int) -> dict:
    """The search chooser driven from the first target-test observation `first` (see the module's docstring)."""
    if scenario.reference_fix is None:
        raise SystemExit(f"{scenario.name}: no reference fix")
    fix = scenario.reference_fix.read_text()
    fix_path = diff_path(fix)
    tree = Path(scenario.repo)
    original = (tree / fix_path).read_text()
    fixed = apply_diff(original, fix)
    chooser = SearchChooser(seed=seed)

    def is_right(c: Candidate) -> bool:
        return c.path == fix_path and same_program(with_candidate(original, c), fixed)

    clean = _clean_fixes(first, view0.authorization.writable)
    # the wrong edits that behaved as the reference did: the tests cannot tell them from it
    digests = {b for c, b in clean.values() if b is not None and is_right(c)}
    same = {e for e, (_, b) in clean.items() if b in digests}
    evs = [first]
    used, applied, tried_keys = 1, None, []
    first_rank: object = None
    first_candidates: list[dict] = []
    right: dict = {}
    top_list: list[str] = []
    outcome = "out of budget"
    while used < budget:
        fields = {**view0.view_fields(), "steps_left": budget - used, "step": used + 1}
        view = View(**fields, evidence=tuple(evs))
        action = chooser.choose(view).proposal
        if isinstance(action, Stop):
            outcome = f"hand-off: {action.reason}"
            break
        if isinstance(action, ReadFile):
            path = tree / action.path
            lines = path.read_text().splitlines(keepends=True) if path.is_file() else []
            if applied is not None and applied.path == action.path:
                lines = with_candidate("".join(lines), applied).splitlines(keepends=True)
            lo, hi = action.start_line or 1, action.end_line or len(lines)
            evs.append(_evidence(used + 1, action, "ok", "".join(lines[lo - 1:hi])))
            used += 1
        elif isinstance(action, Search):
            evs.append(_evidence(used + 1, action, "ok", _search(tree, action.query, action.path_glob)))
            used += 1
        elif isinstance(action, (ApplyPatch, TryPatches)):
            plan = chooser.last_plan
            done = {c.key for c, _ in plan.tried} if plan else set()
            ranked = chooser.last_candidates
            cand = next(c for c in ranked if c.key not in done)
            if isinstance(action, TryPatches):   # the batch's candidates, by the whole diff each renders to
                batch = [c for c in ranked if c.key not in done and render_patch(plan.known, None, c) in action.diffs]
                tried_keys += [c.label() for c in batch]
                # the first of the batch to pass its targets is applied: the right one, or a clean wrong one
                passing = next((c for c in batch if is_right(c) or _edit(c) in same), None)
                if passing is not None:
                    cost = 1 + STEPS_FOR_A_RIGHT_CANDIDATE   # the batch, then apply, full suite, scope check
                    outcome = _verdict(is_right(passing), used + cost <= budget)
                    used += cost
                    break
                evs.append(_evidence(used + 1, action, "failed", ""))
                used += 1
                continue
            if first_rank is None:
                first_rank = _right_rank(ranked, original, fixed, fix_path, plan)
                top_list = [f"{c.score:5.1f} {c.label()}" for c in ranked[:top]]
                right = _right_facts(ranked, first_rank, first)
                # what a fitting harness re-weighs: each candidate's base score and features, the right one marked
                first_candidates = [{"base": c.base, "features": c.features, "right": i == first_rank}
                                    for i, c in enumerate(ranked, 1)]
            tried_keys.append(cand.label())
            if is_right(cand) or _edit(cand) in same:
                cost = STEPS_FOR_A_RIGHT_CANDIDATE   # apply, full suite, scope check (as the chooser counts)
                outcome = _verdict(is_right(cand), used + cost <= budget)
                used += cost
                break
            evs.append(_evidence(used + 1, action, "ok", ""))
            full = _run_full()
            evs.append(_evidence(used + 2, full, "failed", "the full suite fails", {"targets_ok": False}))
            applied = cand
            used += 2
        else:
            outcome = f"unexpected action {action.tool}"
            break
    if first_rank is None:
        plan = chooser.last_plan
        first_rank = _right_rank(chooser.last_candidates, original, fixed, fix_path, plan) if plan else "no plan"
    return {"scenario": scenario.name, "rank": first_rank, "outcome": outcome, "steps": used,
            "tried": tried_keys, "top": top_list, "right": right, "candidates": first_candidates,
            "reads": [f"{e.action.path}:{e.action.start_line}-{e.action.end_line}" for e in evs
                      if isinstance(e.action, ReadFile)]}


PLAUSIBLE = "plausible: a clean fix that is not the reference"


Edit = tuple[str, int, int, tuple[str, ...]]


def _edit(c: Candidate) -> Edit:
    return c.path, c.line, c.span, tuple(t.rstrip() for t in c.new_lines)


def _clean_fixes(first: Evidence, writable: tuple[str, ...]) -> dict[Edit, tuple[Candidate, str | None]]:
    """The edits the observation's mutation analysis found clean, each with its behaviour digest."""
    loc = first.localization
    if loc is None or loc.mutation is None:
        return {}
    out: dict[Edit, tuple[Candidate, str | None]] = {}
    for fx in loc.mutation.fixes:
        rel = writable_path(fx.path, writable)
        if rel and fx.clean:
            c = Candidate(rel, fx.line, fix_lines(fx.text), "mutant", fx.what, span=fx.span)
            out[_edit(c)] = (c, fx.behaviour)
    return out


def _verdict(right: bool, in_budget: bool) -> str:
    if not right:
        return PLAUSIBLE
    return "right candidate tried" if in_budget else "right candidate, too few steps"


def _run_full():
    from repair_agent.loop.actions import RunFullSuite
    return RunFullSuite()


def same_program(text: str, fixed: str) -> bool:
    """The same text, or the same syntax tree (a blank line or a comment apart): `git apply` would
    give a different file, the interpreter the same program."""
    if text == fixed:
        return True
    try:
        return ast.dump(ast.parse(text)) == ast.dump(ast.parse(fixed))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _right_facts(ranked: list[Candidate], rank: object, first: Evidence) -> dict:
    """The right candidate's score and kind, and how suspicious the spectrum found its line (its
    score and its rank among the lines listed), next to the best candidate's score."""
    if not isinstance(rank, int):
        return {}
    c = ranked[rank - 1]
    lines = first.localization.lines if first.localization else ()
    at = next((i for i, s in enumerate(lines, 1) if (s.path, s.line) == (c.path, c.line)), None)
    return {"score": round(c.score, 2), "kind": c.kind, "best": round(ranked[0].score, 2),
            "line_score": lines[at - 1].score if at else None, "line_rank": at,
            "lines_at_or_above": sum(s.score >= lines[at - 1].score for s in lines) if at else None}


def _right_rank(ranked: list[Candidate], original: str, fixed: str, path: str, plan) -> object:
    for i, c in enumerate(ranked, 1):
        if c.path == path and same_program(with_candidate(original, c), fixed):
            return i
    old = original.splitlines()
    new = fixed.splitlines()
    changed = next((i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)) + 1)
    known = plan.known.get(path, {}) if plan else {}
    return f"none of {len(ranked)} (line {changed} {'read' if changed in known else 'not read'})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("--budget", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=6)
    p.add_argument("--json", help="also write the rows to this file")
    p.add_argument("--spectrum-top", type=int, help="keep only this many of the observation's suspicious lines")
    args = p.parse_args()
    rows = []
    for run in args.runs:
        row = replay(Path(run), args.budget, args.seed, args.top, args.spectrum_top)
        if row is None:
            print(f"{Path(run).name}: skipped, no target-test observation in its journal")
            continue
        rows.append(row)
        print(f"{row['scenario']:<34} rank {row['rank']!s:<28} {row['outcome']} ({row['steps']} steps)")
        for t in row["top"]:
            print(f"      {t}")
    solved = sum(r["outcome"] == "right candidate tried" for r in rows)
    plausible = sum(r["outcome"] == PLAUSIBLE for r in rows)
    print(f"\nright candidate reached within budget {args.budget}: {solved}/{len(rows)}; a clean wrong one first: {plausible}")
    if args.json:
        Path(args.json).write_text(json.dumps([{k: v for k, v in r.items() if k != "candidates"} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
