"""The search chooser: repairs without being told the fix.

Real runs on real repositories: a small repository written here with one bug per scenario (local
backend, for speed), and discount-bug end to end in Docker.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from repair_agent.choosers import load_chooser
from repair_agent.choosers.search import (Candidate, SearchChooser, functions_in, line_mutations, parse_failure,
                                          render_patch, unanchored_end)
from repair_agent.loop.journal import StepRecord, evidence_by_id, read_journal, read_records
from repair_agent.loop.plain import consult
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import load_manifest, resolve
from repair_agent.loop.state import StopReason, View
from verifier.rubric import rubric_from_journal

from helpers import runs_dir_with_cache

ROOT = Path(__file__).resolve().parents[1]

TEXTBITS = '''\
"""Small text and list helpers."""


def first_n(items, n):
    """The first ``n`` items."""
    if n < 0:
        raise ValueError("n must not be negative")
    return items[:n - 1]


def word_count(text):
    """Number of whitespace-separated words; None counts as no text."""
    words = text.split()
    return len(words)


def shout(text):
    """Upper case with an exclamation mark."""
    return text.upper()


def is_adult(age):
    """18 and older."""
    return age > 18
'''

TESTS = '''\
from textbits import first_n, is_adult, shout, word_count


def test_first_n():
    assert first_n([1, 2, 3], 2) == [1, 2]


def test_first_n_zero():
    assert first_n([1, 2, 3], 0) == [] or True


def test_first_n_negative():
    import pytest
    with pytest.raises(ValueError):
        first_n([1], -1)


def test_word_count():
    assert word_count("a b  c") == 3


def test_word_count_none():
    assert word_count(None) == 0


def test_shout():
    assert shout("hi") == "HI!"


def test_is_adult():
    assert is_adult(18) is True


def test_is_child():
    assert is_adult(17) is False
'''

BUGS = {  # scenario -> (target test, goal)
    "slice": ("test_first_n", "first_n(items, n) must return the first n items"),
    "none": ("test_word_count_none", "word_count(None) must be 0"),
    "boundary": ("test_is_adult", "is_adult must be true from 18 on"),
    "unfixable": ("test_shout", "shout must add an exclamation mark"),
}


@pytest.fixture(scope="module")
def textbits(tmp_path_factory) -> Path:
    """A repository with four bugs, one per scenario manifest next to it."""
    root = tmp_path_factory.mktemp("textbits")
    repo = root / "textbits"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (repo / "src/textbits.py").write_text(TEXTBITS)
    (repo / "tests/test_textbits.py").write_text(TESTS)
    for name, (test, goal) in BUGS.items():
        (root / f"{name}.scenario.toml").write_text(
            f'name = "tb-{name}"\nrepo = "textbits"\n[goal]\ntext = "{goal}"\nfailure_signature = "x"\n'
            f'[acceptance]\ntarget_tests = ["tests/test_textbits.py::{test}"]\nwritable = ["src/**"]\n'
            f'[budget]\nmax_steps = 12\n')
    return root


def run_search(manifest: Path, runs_dir: Path, seed: int = 0, **kw):
    return execute_run(load_manifest(manifest), SearchChooser(seed), backend="local", runs_dir=runs_dir, **kw)


@pytest.fixture(scope="module")
def unfixable(textbits, tmp_path_factory, baseline_cache):
    """The run on the bug no candidate fixes (seed 0): one run, read by the hand-off test and the replay test."""
    runs = runs_dir_with_cache(tmp_path_factory.mktemp("unfixable") / "runs", baseline_cache)
    return run_search(textbits / "unfixable.scenario.toml", runs)


def steps(record) -> list[dict]:
    return [r for r in read_journal(Path(record.run_dir) / "journal.jsonl") if r.get("event") == "step"]


def shown_view(record, step: int) -> View:
    """The View the chooser got at `step`, rebuilt from the journal (evidence is journaled by id)."""
    records = read_records(Path(record.run_dir) / "journal.jsonl")
    line = next(r for r in records if isinstance(r, StepRecord) and r.step == step)
    return line.view.view(evidence_by_id(records))


# -- the mutation catalogue ------------------------------------------------------------------------
def _whats(line: str) -> set[str]:
    return {what for _, what, _ in line_mutations(line)}


def test_catalogue_covers_operators_constants_units_swaps_and_bounds():
    assert {"< -> <=", "< -> >"} <= _whats("    if n < 0:\n")
    assert {"+ -> -", "1 -> 2", "drop + 1"} <= _whats("    return total + 1\n")
    assert {"3 -> 4", "3 -> 2"} <= _whats("    return f(3)\n")
    muts = {what: new for _, what, new in line_mutations("    discounted = price * (1 - discount)\n")}
    assert muts["discount -> discount / 100"] == "    discounted = price * (1 - discount / 100)"
    assert {"* -> /", "- -> +", "price -> price / 100"} <= muts.keys()
    assert "swap arguments a, b" in _whats("    return combine(a, b)\n")
    slices = {new for kind, _, new in line_mutations("    return items[:n - 1]\n") if kind in ("slice", "constant")}
    assert "    return items[:n]" in slices and "    return items[:n - 2]" in slices
    assert {"    return items[:n + 1]", "    return items[:n - 1]"} <= {new for k, _, new in line_mutations("    return items[:n]\n") if k == "slice"}
    assert "drop / 100" in _whats("    return rate / 100\n")
    assert "and -> or" in _whats("    return a and b\n")
    # strings, comments and docstrings are not code
    assert line_mutations("    # x < 1\n") == [] and line_mutations('    """a < b"""\n') == []
    # every mutation of a whole statement still parses
    for line in ("    if n < 0:\n", "    return items[:n - 1]\n", "    x = f(a, b) + 2 * c\n"):
        for _, what, new in line_mutations(line):
            ast.parse(new.strip() + (" pass" if new.rstrip().endswith(":") else "")), what


def test_guards_and_function_extent():
    lines = dict(enumerate(TEXTBITS.splitlines(keepends=True), start=1))
    fns = {f.name: f for f in functions_in(1, TEXTBITS.splitlines(keepends=True))}
    wc = fns["word_count"]
    assert wc.params == ["text"] and lines[wc.body_line].strip() == "words = text.split()"
    assert lines[wc.end_line].strip() == "return len(words)"


def test_render_patch_reverts_the_previous_candidate_and_applies(tmp_path):
    """Each patch goes from the tree as it is (the previous candidate applied) to the next one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src/textbits.py").write_text(TEXTBITS)
    known = {"src/textbits.py": {n: l for n, l in enumerate(TEXTBITS.splitlines(keepends=True), start=1) if n <= 16}}
    first = Candidate("src/textbits.py", 9, ("    return items[:n]\n",), "slice", "x")
    guard = Candidate("src/textbits.py", 14, ("    if text is None:\n", "        return 0\n",
                                              "    words = text.split()\n"), "none-guard", "y")

    def apply(diff: str) -> None:
        (tmp_path / "p.diff").write_text(diff)
        subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, capture_output=True)

    apply(render_patch(known, None, guard))
    apply(render_patch(known, guard, first))   # reverts the 2-line guard, shifts nothing wrongly
    text = (tmp_path / "src/textbits.py").read_text()
    assert "return items[:n]\n" in text and "if text is None" not in text
    apply(render_patch(known, first, guard))
    text = (tmp_path / "src/textbits.py").read_text()
    assert "return items[:n - 1]" in text and "if text is None:\n        return 0\n    words" in text


def test_an_edit_on_the_last_line_read_waits_for_the_line_after_it(tmp_path):
    """git apply anchors a hunk with no line after its edit to the end of the file: such a patch
    does not apply, and the candidate would be lost. The chooser reads on first."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src/textbits.py").write_text(TEXTBITS)
    lines = dict(enumerate(TEXTBITS.splitlines(keepends=True), start=1))
    known = {"src/textbits.py": {n: t for n, t in lines.items() if n <= 9}}   # a window ending on the bug
    fix = Candidate("src/textbits.py", 9, ("    return items[:n]\n",), "slice", "x")

    def applies(diff: str) -> bool:
        (tmp_path / "p.diff").write_text(diff)
        return subprocess.run(["git", "apply", "--recount", "p.diff"], cwd=tmp_path, capture_output=True).returncode == 0

    assert not applies(render_patch(known, None, fix))   # the defect the guard is for
    assert unanchored_end(known, {}, None, fix) == ("src/textbits.py", 10)
    assert unanchored_end(known, {}, fix, None) == ("src/textbits.py", 10)   # reverting it too
    assert unanchored_end(known, {"src/textbits.py": 9}, None, fix) is None   # a window that ends the file
    above = Candidate("src/textbits.py", 9, ("    n = max(n, 0)\n", lines[9]), "none-guard", "y")
    assert unanchored_end(known, {}, None, above) is None   # the read line stays last, as context
    known["src/textbits.py"].update({n: lines[n] for n in (10, 11)})
    assert unanchored_end(known, {}, None, fix) is None
    assert applies(render_patch(known, None, fix))
    assert "return items[:n]\n" in (tmp_path / "src/textbits.py").read_text()


# -- localization on real tool output ------------------------------------------------------------
def test_localizes_from_a_traceback_frame_and_guards_none(textbits, runs_dir):
    rec = run_search(textbits / "none.scenario.toml", runs_dir)
    assert rec.status == StopReason.AWAITING_RELEASE_CONFIRMATION, rec.detail
    s = steps(rec)
    view = shown_view(rec, 2)
    failure = parse_failure(view.evidence[0], view.goal.text, view.authorization.writable)
    assert failure.frames == [("src/textbits.py", 13)] and failure.exception == "AttributeError"
    assert "none" in failure.hints
    # no search needed: the frame names the file and line, one read around it
    assert s[1]["proposal"] == {"tool": "read_file", "path": "src/textbits.py", "start_line": 1, "end_line": 27}
    assert "if text is None:" in (Path(rec.run_dir) / "candidate.diff").read_text()


def test_localizes_from_the_spectrum_and_without_it_by_searching_the_asserted_call(textbits, runs_dir):
    rec = run_search(textbits / "slice.scenario.toml", runs_dir)
    assert rec.status == StopReason.AWAITING_RELEASE_CONFIRMATION, rec.detail
    s = steps(rec)
    loc = s[0]["result"]["localization"]
    # the failing target runs first_n's two body lines; the passing first_n tests run them too, less often
    assert {(x["path"], x["line"]) for x in loc["lines"]} >= {("src/textbits.py", 6), ("src/textbits.py", 8)}
    assert loc["lines"][0]["line"] == 8   # `return items[:n - 1]`: no passing test reaches it
    # one read around the suspicious lines, no search
    assert s[1]["proposal"] == {"tool": "read_file", "path": "src/textbits.py", "start_line": 1, "end_line": 18}
    assert "items[:n]" in (Path(rec.run_dir) / "candidate.diff").read_text()
    # Without a localization (e.g. the traced run failed) the chooser searches for the asserted call.
    view = shown_view(rec, 2)
    first = view.evidence[0].model_copy(update={"localization": None})
    blind = view.model_copy(update={"evidence": (first,)})
    assert SearchChooser(0).choose(blind).proposal.model_dump() == {"tool": "search", "query": "def first_n(",
                                                           "path_glob": "src/**"}


def test_boundary_bug_repaired_checked_by_the_full_suite_with_complete_evidence(textbits, runs_dir):
    rec = run_search(textbits / "boundary.scenario.toml", runs_dir)
    assert rec.status == StopReason.AWAITING_RELEASE_CONFIRMATION, rec.detail
    tools = [x["proposal"]["tool"] for x in steps(rec)]
    # the full suite decides the candidate and, with its targets passing, completes the evidence:
    # no separate target-test run on the final diff
    assert tools[-3:] == ["apply_patch", "run_full_suite", "check_diff"]
    suite = steps(rec)[-2]["result"]
    assert suite["status"] == "ok" and suite["data"]["targets_ok"] is True
    rubric = rubric_from_journal(Path(rec.run_dir) / "journal.jsonl")
    assert rubric.complete and rubric.target_passed_on_final_diff
    diff = (Path(rec.run_dir) / "candidate.diff").read_text()
    assert "+    return age >= 18\n" in diff or "+    return age > 17\n" in diff  # equal for ints


# -- the seed orders candidates, nothing else ----------------------------------------------------
def test_same_seed_same_proposals_other_seed_same_candidates(textbits, runs_dir):
    manifest = textbits / "slice.scenario.toml"
    a, b = run_search(manifest, runs_dir, seed=3), run_search(manifest, runs_dir, seed=3)
    assert [x["proposal"] for x in steps(a)] == [x["proposal"] for x in steps(b)]
    # The candidates ranked from one real view: the same set under every seed, in a seed-dependent order.
    view = shown_view(a, 3)  # after the read, before the first patch
    ranked = {}
    for seed in range(6):
        chooser = SearchChooser(seed)
        chooser.choose(view)
        ranked[seed] = [c.key for c in chooser.last_candidates]
    assert all(sorted(r) == sorted(ranked[0]) for r in ranked.values()) and len(ranked[0]) > 3
    assert len({tuple(r) for r in ranked.values()}) > 1
    scores = {}
    for seed, keys in ranked.items():  # the order of scores (tiers) never changes
        chooser = SearchChooser(seed)
        chooser.choose(view)
        scores[seed] = [int(c.score) for c in chooser.last_candidates]
    assert all(s == scores[0] for s in scores.values())


# -- what it cannot fix, it hands over -----------------------------------------------------------
def test_hands_off_with_what_it_learned(unfixable):
    rec = unfixable
    assert rec.status == StopReason.HANDOFF_REQUESTED and rec.exit_code == 10
    stop = steps(rec)[-1]["proposal"]
    assert stop["tool"] == "stop"
    assert "candidates tried (" in stop["summary"] and "target test still fails" in stop["summary"]
    assert "suspicious lines (spectrum, relative score): src/textbits.py:19 (1.00)" in stop["summary"]
    assert rec.steps_used <= 12


def test_an_observation_it_cannot_read_is_a_chooser_error_not_a_hand_off(unfixable):
    """A bug in a rule must not pass for a hand-off: the exception reaches the controller's reader,
    which the controller ends chooser_error with (test_controller.py), the traceback kept."""
    view = shown_view(unfixable, 2)
    broken = view.evidence[-1].model_copy(update={"action": "[1, 2]"})  # JSON, but no action object
    reply = consult(SearchChooser(0), view.model_copy(update={"evidence": (*view.evidence[:-1], broken)}), {})
    assert reply.failure == "raised" and "AttributeError" in reply.detail
    assert reply.traceback is not None and "in _replay" in reply.traceback


def test_loader_seed_and_no_scenario(textbits):
    chooser = load_chooser("search", load_manifest(textbits / "slice.scenario.toml"), seed=7)
    assert isinstance(chooser, SearchChooser) and chooser.seed == 7 and chooser.name == "search"
    # the chooser is built from the seed alone: nothing of the scenario (recipe, reference fix) is kept
    assert set(vars(chooser)) == {"seed", "last_plan", "last_candidates", "_scored", "_rankings", "_patches"}


# -- discount-bug end to end in Docker, without the [baseline] recipe -----------------------------
@pytest.mark.docker
def test_discount_bug_in_docker_without_the_recipe(docker_client, sandbox_image, runs_dir):
    scenario = resolve("discount-bug")
    rec = execute_run(scenario, load_chooser("search", scenario), backend="docker", runs_dir=runs_dir,
                      client=docker_client)
    assert rec.status == StopReason.AWAITING_RELEASE_CONFIRMATION, rec.detail
    proposals = [x["proposal"] for x in steps(rec)]
    assert all(p.get("query") != scenario.baseline.search for p in proposals)
    assert [p["tool"] for p in proposals][0] == "run_target_test"
    # the search chooser asked for the mutation analysis: it ran in the hardened container, in full
    mutation = steps(rec)[0]["result"]["localization"]["mutation"]
    assert mutation["tried"] > 20 and mutation["cut"] == 0 and {m["line"] for m in mutation["lines"]}
    diff = (Path(rec.run_dir) / "candidate.diff").read_text()
    assert "-    discounted = price * (1 - discount)\n+    discounted = price * (1 - discount / 100)\n" in diff
    assert json.loads((Path(rec.run_dir) / "run.json").read_text())["chooser"] == "search"


def test_pytest_excerpt_keeps_the_failures_section_and_the_summary_within_its_cap():
    from repair_agent.loop.tools import PYTEST_EXCERPT_CHARS, pytest_excerpt

    body = ("=================== FAILURES ===================\n" + "x" * 20_000
            + "\n=========== short test summary info ===========\nFAILED tests/t.py::a - assert 1 == 2\n")
    out = pytest_excerpt("." * 50_000 + "\n" + body)
    assert out.startswith("=================== FAILURES") and out.endswith("assert 1 == 2\n")
    assert len(out) <= PYTEST_EXCERPT_CHARS + 100 and "chars omitted" in out
    assert pytest_excerpt("1 passed in 0.01s\n") == "1 passed in 0.01s\n"


def test_a_trap_is_reverted_and_the_next_candidate_tried(runs_dir):
    """stockroom-business-days-trap: the obvious one-line fix passes the visible target test and
    breaks other behaviour the suite covers: the next candidate's patch takes it out again. (The
    held-out checks also cover it, but they are never shown to a chooser.)"""
    applied = []

    def interrupt_at_the_next_candidate(progress):
        # the patch after the trap's is what this test reads; its suite may run into a candidate that
        # hangs, a check's whole time limit (the suite's, 120 s)
        applied.extend(["apply"] if progress.tool == "apply_patch" else [])
        if len(applied) == 2:
            raise KeyboardInterrupt

    rec = execute_run(resolve("stockroom-business-days-trap"), SearchChooser(0), backend="local",
                      runs_dir=runs_dir, max_steps=8, on_step=interrupt_at_the_next_candidate)   # one batch between
    s = steps(rec)
    tools = [x["proposal"]["tool"] for x in s]
    # after a patch the chooser runs the full suite at once: the trap turns the target green and fails there
    trap = next(i for i, x in enumerate(s) if x["proposal"]["tool"] in ("run_target_test", "run_full_suite")
                and x["result"]["status"] == "failed" and x["result"]["data"]["targets_ok"]
                and not set(x["result"]["data"]["failing"]) & set(s[0]["result"]["data"]["failing"]))
    assert all("heldout" not in x["result"]["data"] and "correctness" not in x["result"]["data"]
               for x in s if x["proposal"]["tool"] in ("run_target_test", "run_full_suite"))
    patch = max(i for i in range(trap) if tools[i] == "apply_patch")
    added = lambda i, sign: {l[1:] for l in s[i]["proposal"]["diff"].splitlines()
                             if l.startswith(sign) and not l.startswith(sign * 3)}
    # the trap's own edit: what its patch adds, less the original lines it restores from earlier candidates
    trapped = added(patch, "+") - set().union(*(added(i, "-") for i in range(patch) if tools[i] == "apply_patch"))
    after = next(i for i in range(trap + 1, len(s)) if tools[i] == "apply_patch")  # the next candidate
    assert trapped and trapped <= added(after, "-")
    assert rec.status == StopReason.AWAITING_RELEASE_CONFIRMATION or (
        rec.status == StopReason.HANDOFF_REQUESTED and "candidate" in s[-1]["proposal"].get("summary", "")) or (
        rec.status == StopReason.DEPENDENCY_FAILURE and "Ctrl-C" in rec.detail and tools[-1] == "apply_patch")


def test_replaying_a_view_ranks_once_however_many_patches_it_holds(unfixable, monkeypatch):
    import repair_agent.choosers.search.chooser as chooser_module

    rec = unfixable
    s = steps(rec)
    tools = [x["proposal"]["tool"] for x in s]
    # the candidates tried, one a step (apply_patch) and several a step (try_patches)
    patches = tools.count("apply_patch")
    batched = sum(len(x["proposal"]["diffs"]) for x in s if x["proposal"]["tool"] == "try_patches")
    assert patches >= 1 and batched >= 2 and patches + batched >= 3
    calls = []
    real = chooser_module.scored_candidates
    monkeypatch.setattr(chooser_module, "scored_candidates", lambda *a, **k: calls.append(1) or real(*a, **k))
    chooser = SearchChooser(0)
    # the view right after the last try: it holds every patch, and nothing learned since
    k = max(i for i, t in enumerate(tools) if t in ("apply_patch", "try_patches")) + 2
    view = shown_view(rec, k)
    proposal = chooser.choose(view).proposal
    # every past patch identified, and the same proposal as in the run, from one scoring (what the
    # failed tries showed only reorders it)
    assert proposal.model_dump() == s[k - 1]["proposal"] and len(calls) == 1
    chooser.choose(view)
    assert len(calls) == 1   # and none again for the same evidence


GEO_MANIFEST = '''
name = "geo"
repo = "geo"
[goal]
text = "area is w times h"
failure_signature = "assert 5 == 6"
[acceptance]
target_tests = ["tests/test_geo.py::test_area"]
writable = ["src/**"]
protected = ["src/geo/core.py"]
[budget]
max_steps = 12
'''


def test_a_candidate_in_a_protected_file_is_passed_over_not_proposed(tmp_path):
    """The spectrum's best line is in a file the run may not edit (as an in-package test folder is
    under the default `**`): the chooser moves on to its next candidate instead of proposing a patch
    the controller must refuse (which ended the run with authorization_required)."""
    repo = tmp_path / "geo"
    (repo / "src/geo").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (repo / "src/geo/__init__.py").write_text("")
    (repo / "src/geo/core.py").write_text("from .frozen import clip\n\n\ndef area(w, h):\n    return clip(w + h)\n\n\n"
                                          "def perimeter(w, h):\n    return 2 * (w + h)\n")
    (repo / "src/geo/frozen.py").write_text("def clip(x):\n    if x < 0:\n        return 0\n    return x\n")
    (repo / "tests/test_geo.py").write_text("from geo.core import area, perimeter\n\n\ndef test_area():\n"
                                            "    assert area(2, 3) == 6\n\n\ndef test_perimeter():\n"
                                            "    assert perimeter(2, 3) == 10\n")
    (tmp_path / "geo.scenario.toml").write_text(GEO_MANIFEST)
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(tmp_path / "runs"), "run",
                           str(tmp_path / "geo.scenario.toml"), "--chooser", "search", "--sandbox", "local", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    record = json.loads(proc.stdout)
    assert record["status"] != "authorization_required", record["detail"]
    patches = [r["proposal"]["diff"] for r in read_journal(Path(record["run_dir"]) / "journal.jsonl")
               if r.get("event") == "step" and r["proposal"]["tool"] == "apply_patch"]
    assert patches and not any("src/geo/core.py" in diff for diff in patches), patches
