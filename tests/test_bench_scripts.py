"""Every benchmark script runs once, for real, with tiny parameters: a rename or a typed record in
the package otherwise breaks a script nobody runs until the next measurement. What the scripts
measure is judged by hand (bench/README.md), not here; here they must run to the end and print
their result line.

Every file of bench/ must be listed below, with its tiny run or the script or test that runs it: a
new script that is not listed fails `test_every_bench_file_is_listed`.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import git_history
from repair_agent.loop.journal import StepRecord, read_records

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


@dataclass(frozen=True)
class TinyRun:
    """`bench/SCRIPT *args` (`{tmp}` is the test's temporary directory) must exit 0 and print `expect`
    (a regular expression). `docker`: the script drives containers."""
    args: tuple[str, ...]
    expect: str
    docker: bool = False


TINY_RUNS: dict[str, TinyRun] = {
    # One run of the small built-in scenario on each image, no warm-up, one sample of each cost (the
    # first build is left out: it removes and rebuilds a real project's environment image).
    "bench_env.py": TinyRun(("--repeat", "1", "--skip-first-build", "--no-warm-up", "--samples", "1",
                             "--scenario", "discount-bug"),
                            r"what the environment itself costs", docker=True),
    "bench_compile.py": TinyRun(("--mutants", "3", "--modules", "textwrap"), r"whole / apart, median of interleaved pairs"),
    "bench_failure_report.py": TinyRun(("--pairs", "1", "--runs", "3", "--depth", "3"), r"crash messages alike: True"),
    "bench_html.py": TinyRun(("--repeat", "1", "--sandbox", "local"), r"median run [\d.]+s; report.html cold"),
    "bench_mutation.py": TinyRun(("--repeat", "1", "--no-warm-up", "--sandbox", "local"),
                                 r"with / without the mutation analysis"),
    "bench_resume.py": TinyRun(("--repeat", "1", "--sandbox", "local"), r"resume start, after the patch"),
    # One pair, cold: the whole command, then the floor with the fix the command made.
    "bench_run.py": TinyRun(("--repeat", "1", "--no-warm-up"), r"whole-process ratio \(median\)", docker=True),
    "bench_sandbox.py": TinyRun(("--repeat", "1"), r"pytest \(48 tests\) in container", docker=True),
    "bench_scope.py": TinyRun(("--against", "HEAD", "--calls", "4", "--rounds", "1"), r"added per scope check"),
    "bench_sweep.py": TinyRun(("--runs", "1", "--pairs", "1", "--skip-subprocess", "--no-warm-up"),
                              r"speed-up 1 -> 2 workers", docker=True),
    # The home corpus only (no BugsInPy, no clones offline): what the table makes of its reference fixes.
    "fix_shapes.py": TinyRun(("--corpora", "home"), r"fix shapes measured: home \d+"),
    "gate_corpus.py": TinyRun(("--corpus", "home", "--repeat", "1"), r"all: 0 of \d+ reference fixes with findings"),
    "prompt_size.py": TinyRun(("--sandbox", "local"), r"largest proposal"),
}
# Files run by another script's tiny run or by a test of their own (which must mention them).
RUN_ELSEWHERE: dict[str, str] = {
    "search_corpus.py": "test_an_observation_replays_the_search_chooser",
    "observe.py": "test_an_observation_replays_the_search_chooser",        # search_corpus.py --chooser observe:Observe
    "search_replay.py": "test_an_observation_replays_the_search_chooser",
    "fit_search.py": "test_an_observation_replays_the_search_chooser",     # fits on the same observation
    "search_without_mutation.py": "bench_mutation.py",                     # its pairs' second chooser
    "fix_categories.py": "fix_shapes.py",                                  # its classifier of fix shapes
    "mutants.py": "tests/test_mutants.py",                                 # the importer's command line
    "imperfect_model.py": "test_the_imperfect_model_serves_a_reply",
    "import_corpus.py": "test_import_corpus_imports_one_commit",
    "rate_generated.py": "test_a_generated_set_is_rated_by_its_answer_key",
}


def run_script(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / name), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_every_bench_file_is_listed():
    present = {p.name for p in BENCH.glob("*.py")}
    listed = TINY_RUNS.keys() | RUN_ELSEWHERE.keys()
    assert not TINY_RUNS.keys() & RUN_ELSEWHERE.keys()
    assert present == listed, (f"bench/ files with no tiny run here: {sorted(present - listed)}; "
                               f"listed but gone: {sorted(listed - present)}")
    for name, where in RUN_ELSEWHERE.items():
        if where.startswith("tests/"):
            assert Path(name).stem in (ROOT / where).read_text(), (name, where)
        elif where.endswith(".py"):
            assert Path(name).stem in (BENCH / where).read_text() and where in listed, (name, where)
        else:
            assert where in globals(), (name, where)


def _marks(run: TinyRun) -> list:
    return [pytest.mark.docker] if run.docker else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(r), id=n) for n, r in TINY_RUNS.items()])
def test_a_bench_script_runs_with_tiny_parameters(name, tmp_path, request):
    run = TINY_RUNS[name]
    if run.docker:
        request.getfixturevalue("sandbox_image")
    proc = run_script(name, *(a.replace("{tmp}", str(tmp_path)) for a in run.args))
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0 and re.search(run.expect, proc.stdout), said[-3000:]


def test_an_observation_replays_the_search_chooser(tmp_path):
    """observe.py's chooser takes one observation (through search_corpus.py); search_replay.py ranks
    the search chooser's candidates from it without a container."""
    observed = run_script("search_corpus.py", "--only", "discount-bug", "--chooser", "observe:Observe",
                          "--runs-dir", str(tmp_path / "obs"))
    assert observed.returncode == 0 and re.search(r"solved \d+/1 at budget", observed.stdout), \
        observed.stdout[-2000:] + observed.stderr[-2000:]
    (run_dir,) = [p for p in (tmp_path / "obs").iterdir() if (p / "journal.jsonl").is_file()]
    # the observation the search chooser would get: with the mutation analysis (a plug-in that
    # does not ask for it in describe() gets none, and its replays would rank without it)
    (observation,) = [r.evidence for r in read_records(run_dir / "journal.jsonl")
                      if isinstance(r, StepRecord) and r.evidence is not None and r.evidence.tool == "run_target_test"]
    assert observation.localization is not None and observation.localization.mutation is not None
    assert any(fx.clean for fx in observation.localization.mutation.fixes)
    replayed = run_script("search_replay.py", str(run_dir), "--json", str(tmp_path / "replay.json"))
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
    assert "discount-bug" in replayed.stdout and (tmp_path / "replay.json").is_file(), replayed.stdout[-2000:]
    # fit_search.py: one round on that observation, reported as a held-out set too (counts only), no --write
    fitted = run_script("fit_search.py", "--tune", str(run_dir), "--report", str(run_dir),
                        "--rounds", "1")
    assert fitted.returncode == 0, fitted.stdout[-2000:] + fitted.stderr[-2000:]
    assert "tuning: 1 runs, 1 with the right candidate" in fitted.stdout, fitted.stdout[-2000:]
    assert re.search(r"1/1 -> 1/1", fitted.stdout) and "fit not kept" in fitted.stdout, fitted.stdout[-2000:]


def test_the_imperfect_model_serves_a_reply():
    """The script serves until it is interrupted: its base URL first, then Chat Completions replies."""
    proc = subprocess.Popen([sys.executable, str(BENCH / "imperfect_model.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), base_url
        body = {"model": "imperfect", "messages": [{"role": "system", "content": "You repair code."},
                                                   {"role": "user", "content": "# Goal (discount-bug)\nStep 1; 12 left"}]}
        request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            message = json.loads(reply.read())["choices"][0]["message"]
        # Nothing observed yet: a cautious model runs the target test first.
        assert message["tool_calls"][0]["function"]["name"] == "run_target_test", message
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, proc.stderr.read()[-2000:]


@pytest.mark.docker
def test_import_corpus_imports_one_commit(tmp_path, sandbox_image):
    """One fix commit of a tiny project through `import commit` (the SWE-bench half left out), then
    the table of its results."""
    project = tmp_path / "repos" / "tinycalc"
    (project / "tests").mkdir(parents=True)
    commit = git_history(project)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n")
    (project / "tests/test_calc.py").write_text("from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n")
    commit("calc")
    (project / "calc.py").write_text((project / "calc.py").read_text().replace("a - b", "a + b"))
    with (project / "tests/test_calc.py").open("a") as f:
        f.write("\n\ndef test_add():\n    from calc import add\n    assert add(2, 3) == 5\n")
    sha = commit("fix add")
    listing = tmp_path / "list.toml"
    listing.write_text(f'[[commit]]\nproject = "tinycalc"\nsha = "{sha}"\n')
    out = tmp_path / "out"
    proc = run_script("import_corpus.py", str(listing), "--repos", str(tmp_path / "repos"), "--out", str(out),
                      "--no-swebench")
    assert proc.returncode == 0 and "usable" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    table = run_script("import_corpus.py", str(listing), "--repos", str(tmp_path / "repos"), "--out", str(out),
                       "--table")
    assert table.returncode == 0 and f"`{sha[:12]}`" in table.stdout and "usable (1 target(s))" in table.stdout, \
        table.stdout[-2000:] + table.stderr[-2000:]


def test_the_listing_names_real_flags():
    """Each tiny run's flags are ones its script reads (a renamed flag fails here before it runs)."""
    for name, run in TINY_RUNS.items():
        text = (BENCH / name).read_text()
        for flag in (a for a in run.args if a.startswith("--")):
            assert f'"{flag}"' in text, (name, flag)



FIX = """--- a/m.py
+++ b/m.py
@@ -1,3 +1,3 @@
 def f(x):
-    return float(x)
+    return int(x)
 
"""


def test_a_generated_set_is_rated_by_its_answer_key(tmp_path):
    from repair_agent.sweep.jobs import SweepResult

    (tmp_path / "gen/bugs").mkdir(parents=True)
    sweep = tmp_path / "sweep"
    lines = []
    # the same change cut into another hunk and indented otherwise is exact; another green fix is not
    for name, status, diff in [("exact", "awaiting_release_confirmation", FIX.replace("@@ -1,3 +1,3 @@", "@@ -1,2 +1,2 @@")
                                .replace(" \n", "").replace("    return int", "  return int")),
                               ("other", "awaiting_release_confirmation", FIX.replace("int(x)", "round(x)")),
                               ("lost", "handoff_requested", None)]:
        (tmp_path / "gen/bugs" / f"{name}.fix.diff").write_text(FIX)
        run = sweep / "runs" / name
        run.mkdir(parents=True)
        if diff is not None:
            (run / "candidate.diff").write_text(diff)
        lines.append(SweepResult(scenario=name, chooser="search", budget=12, seed=0, status=status,
                                 run_dir=str(run)).model_dump_json())
    (sweep / "results.jsonl").write_text("\n".join(lines) + "\n")
    out = run_script("rate_generated.py", "--sets", str(tmp_path / "gen"), "--sweeps", str(sweep))
    assert out.returncode == 0, out.stderr
    assert f"{sweep}: exact 1, other 1, not green 1 of 3" in out.stdout
