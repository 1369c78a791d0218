"""`repair-agent sweep`: band logic, results file, selection, and real sweeps in Docker (small ones;
the long ones carry the `sweep` marker and run with `pytest -m sweep`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from repair_agent.choosers import load_chooser
from repair_agent.sweep.markdown import render_markdown
from repair_agent.sweep import (RESULTS, SCENARIO_ERROR, ResultsWriter, SweepResult, band, load_results,
                                select_scenarios, summarize, verdict)
from verifier.isolation import LABEL
from verifier.rubric import rubric_from_journal

from helpers import import_required, make_user_scenario, runs_dir_with_cache, wait_until

TESTS = Path(__file__).resolve().parent
SEEDED = "sweep_choosers:SeededCareful"


def cli(*args, cwd=None, timeout=600):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def sweep_dir(out: Path, cache: Path) -> Path:
    """A sweep's output directory whose runs share the session's pristine-suite cache (conftest's
    `baseline_cache`): the discount-bug suite runs once per session, not once per sweep."""
    runs_dir_with_cache(out / "runs", cache)
    return out


def read_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / RESULTS).read_text().splitlines()]


def containers_under(client, root: Path) -> list:
    """Managed containers with a mount under `root`: this test's runs, whoever their owner pid is."""
    return [c for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
            if any(str(m.get("Source", "")).startswith(str(root)) for m in c.attrs.get("Mounts", []))]


# ------------------------------------------------------------------------------ the band
def test_band_is_the_range_of_per_seed_values_and_needs_two_seeds():
    assert band([0.375, 0.4167]) == pytest.approx(0.0417)          # seed 003, budget 2, runs A and B
    assert band([1.0, 0.9583, 1.0]) == pytest.approx(0.0417)
    assert band([0.5]) is None and band([]) is None and band([None, 0.5]) is None


def test_a_difference_inside_the_band_is_unmeasured_outside_it_has_a_direction():
    # Seed 003: success at budget 6 was 1.0000 / 0.9583 (band 0.0417); at 8, 0.9583 / 0.9583.
    six, eight = (1.0 + 0.9583) / 2, 0.9583
    assert verdict(six, eight, band([1.0, 0.9583]), band([0.9583, 0.9583]))["verdict"] == "unmeasured"
    # The fall equal to the band is still inside it.
    assert verdict(1.0, 0.9583, 0.0417, 0.0)["verdict"] == "unmeasured"
    # Two to six: a gain of about 0.58 against a band of 0.0417 is measured.
    two = (0.375 + 0.4167) / 2
    gain = verdict(two, six, band([0.375, 0.4167]), band([1.0, 0.9583]))
    assert gain["verdict"] == "up" and gain["difference"] == pytest.approx(six - two) and gain["band"] == pytest.approx(0.0417)
    assert verdict(six, two, 0.0417, 0.0417)["verdict"] == "down"
    # The wider band of the two cells decides.
    assert verdict(0.5, 0.7, 0.0, 0.25)["verdict"] == "unmeasured"
    # No band (one seed): nothing is measured, not even a large difference.
    assert verdict(0.0, 1.0, None, 0.0) == {"difference": 1.0, "band": None, "verdict": "unmeasured"}
    # No difference with a zero band is no win either.
    assert verdict(1.0, 1.0, 0.0, 0.0)["verdict"] == "unmeasured"


def _line(scenario, seed, status, expected="awaiting_release_confirmation", budget=4, chooser="c", steps=3):
    return {"scenario": scenario, "kind": "k", "tags": ["t"], "expected": expected, "chooser": chooser,
            "budget": budget, "seed": seed, "status": status, "correct": status == expected, "steps": steps,
            "tokens": 0, "wall_s": 1.0, "run_dir": None, "detail": "", "rubric": None}


def test_summary_counts_expected_handoffs_as_correct_and_reports_them_apart():
    lines = [_line("a", 0, "awaiting_release_confirmation"), _line("a", 1, "step_budget"),
             _line("h", 0, "handoff_requested", expected="handoff_requested"),
             _line("h", 1, "awaiting_release_confirmation", expected="handoff_requested"),
             {**_line("broken", 0, SCENARIO_ERROR), "detail": "x.scenario.toml: field 'goal': Field required"}]
    summary = summarize([SweepResult(**x) for x in lines])
    (cell,) = summary.cells
    assert cell.n == 4 and cell.success_rate == 0.5
    assert (cell.repaired, cell.repair_runs, cell.handoffs_correct, cell.handoff_runs,
            cell.forced_green) == (1, 2, 1, 2, 1)
    assert cell.per_seed["0"]["success_rate"] == 1.0 and cell.per_seed["1"]["success_rate"] == 0.0
    assert cell.band == 1.0
    assert [b.model_dump() for b in summary.broken] == [
        {"scenario": "broken", "detail": "x.scenario.toml: field 'goal': Field required"}]


def test_a_chooser_crash_is_its_own_counted_outcome_listed_with_its_detail(tmp_path):
    crash = {**_line("a", 1, "chooser_error"), "detail": "the chooser raised KeyError: 'frames'"}
    lines = [SweepResult(**x) for x in (_line("a", 0, "awaiting_release_confirmation"), crash,
                                         _line("b", 0, "handoff_requested"))]
    summary = summarize(lines)
    (cell,) = summary.cells
    # a failed run in every rate, and counted apart: a bug in the chooser is not a hand-off
    assert cell.n == 3 and cell.success_rate == pytest.approx(1 / 3) and cell.chooser_errors == 1
    assert cell.exits == {"awaiting_release_confirmation": 1, "chooser_error": 1, "handoff_requested": 1}
    assert [(x.scenario, x.seed, x.detail) for x in summary.chooser_errors] == [
        ("a", 1, "the chooser raised KeyError: 'frames'")]
    text = render_markdown(summary)
    assert "## Chooser errors (counted as failed runs)" in text and "KeyError: 'frames'" in text
    assert "Chooser errors" not in render_markdown(summarize(lines[:1]))
    # the sweep's page lists them as its Markdown does
    from repair_agent.sweep.html import render_sweep_html

    page = render_sweep_html(summary, tmp_path).read_text()
    assert 'id="chooser-errors"' in page and "KeyError: &#39;frames&#39;" in page
    (tmp_path / "one").mkdir()
    assert 'id="chooser-errors"' not in render_sweep_html(summarize(lines[:1]), tmp_path / "one").read_text()


# ----------------------------------------------------------------------- results.jsonl
def test_a_torn_last_line_is_cut_off_and_the_next_line_starts_clean(tmp_path):
    path = tmp_path / RESULTS
    writer = ResultsWriter(path)
    writer.append(SweepResult(**_line("a", 0, "step_budget")))
    writer.append(SweepResult(**_line("a", 1, "step_budget")))
    writer.close()
    with open(path, "ab") as f:  # what a kill in the middle of a write would leave
        f.write(b'{"scenario": "a", "chooser": "c", "bud')
    assert [r.key for r in load_results(path)] == [("a", "c", 4, 0), ("a", "c", 4, 1)]
    assert path.read_bytes().endswith(b"\n") and len(path.read_text().splitlines()) == 2
    writer = ResultsWriter(path)
    writer.append(SweepResult(**_line("a", 2, "step_budget")))
    writer.close()
    assert [r.seed for r in load_results(path)] == [0, 1, 2]


# -------------------------------------------------------------------- selection, seeds
def test_selection_by_name_glob_and_tag_keeps_broken_manifests_as_reported_entries(tmp_path):
    make_user_scenario(tmp_path)
    (tmp_path / "broken.scenario.toml").write_text('name = "broken"\nrepo = "wordy"\n')
    dirs = [tmp_path]
    everything = select_scenarios(None, dirs)
    assert {"discount-bug", "word-count"} <= {s.name for s in everything.scenarios}
    assert "goal" in everything.broken["broken"]
    assert [s.name for s in select_scenarios(["word-*"], dirs).scenarios] == ["word-count"]
    assert select_scenarios(["bro*"], dirs).broken.keys() == {"broken"}
    with pytest.raises(ValueError, match="matches no scenario"):
        select_scenarios(["tag:no-such-tag"], dirs)


def test_load_chooser_passes_the_seed_to_choosers_that_take_one():
    seeded = load_chooser(SEEDED, seed=7)
    assert seeded.seed == 7
    plain = load_chooser("hostile_choosers:EditTestExpectation", seed=7)  # no seed parameter: still loads
    assert callable(plain.choose)


def test_the_local_executor_never_imports_ray():
    code = ("import sys; from repair_agent import cli, sweep; sweep.run_local; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------- real sweeps, Docker
SMALL_SWEEP = ["--scenarios", "discount-bug", "--chooser", "baseline", "--chooser", SEEDED, "--budgets", "2,8",
               "--seeds", "2", "--workers", "2"]


@pytest.fixture(scope="module")
def small_sweep(docker_client, sandbox_image, tmp_path_factory, baseline_cache) -> Path:
    """8 runs: baseline and a seed-dependent chooser, budgets 2 and 8, seeds 0 and 1, 2 workers, with
    the local executor. Run once: its own test reads everything of it, the Ray test its lines."""
    out = sweep_dir(tmp_path_factory.mktemp("small-sweep") / "sweep", baseline_cache)
    proc = cli("sweep", *SMALL_SWEEP, "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.mark.docker
def test_a_small_sweep_writes_results_summary_chart_and_a_verifier_side_rubric(docker_client, small_sweep):
    out = small_sweep
    lines = read_lines(out)
    by_key = {SweepResult.model_validate(r).key: r for r in lines}
    assert len(lines) == 8 and len(by_key) == 8
    for chooser in ("baseline", SEEDED):
        for seed in (0, 1):
            assert by_key[("discount-bug", chooser, 2, seed)]["status"] == "step_budget"
            ok = by_key[("discount-bug", chooser, 8, seed)]
            assert ok["status"] == "awaiting_release_confirmation" and ok["correct"] and ok["u_trajectory"][-1] == 0
            assert (Path(ok["run_dir"]) / "report.md").is_file() and Path(ok["run_dir"]).parent == out / "runs"
    # The rubric, from the journals: the baseline never sees the target fail before patching;
    # the seed-1 run of the careful chooser does, and its evidence is complete.
    assert by_key[("discount-bug", "baseline", 8, 0)]["rubric"]["target_failed_before_patch"] is False
    assert by_key[("discount-bug", "baseline", 8, 0)]["rubric"]["full_suite_on_final_diff"] is True
    assert by_key[("discount-bug", SEEDED, 8, 1)]["rubric"]["complete"] is True
    assert by_key[("discount-bug", SEEDED, 8, 0)]["rubric"]["complete"] is False
    # Recomputing the rubric from a journal on disk gives what the sweep recorded.
    careful = by_key[("discount-bug", SEEDED, 8, 1)]
    assert rubric_from_journal(Path(careful["run_dir"]) / "journal.jsonl").model_dump() == careful["rubric"]

    summary = json.loads((out / "summary.json").read_text())
    cells = {(c["chooser"], c["budget"]): c for c in summary["cells"]}
    assert cells[("baseline", 8)]["success_rate"] == 1.0 and cells[("baseline", 8)]["band"] == 0.0
    assert cells[(SEEDED, 8)]["evidence_complete_rate"] == 0.5 and cells[(SEEDED, 8)]["bands"]["evidence_complete_rate"] == 1.0
    comps = {(c["a"], c["b"], c["metric"]): c for c in summary["comparisons"]}
    # 0 → 1 clears the band (the baseline's seeds agree), but one scenario is no sample: a single
    # scenario that changed cannot be told from chance.
    two_to_eight = comps[("baseline@2", "baseline@8", "success_rate")]
    assert two_to_eight["verdict"] == "unmeasured" and two_to_eight["unmeasured_by"] == ["sampling"]
    assert (two_to_eight["paired"]["b_higher"], two_to_eight["paired"]["b_lower"]) == (1, 0)
    # Evidence completeness differs by 0.5 between the choosers at 8, inside the seeded chooser's band.
    evidence = comps[("baseline@8", f"{SEEDED}@8", "evidence_complete_rate")]
    assert evidence["verdict"] == "unmeasured" and "band" in evidence["unmeasured_by"]
    assert cells[("baseline", 8)]["resolution"] == {"scenarios": 1, "one_scenario": 1.0}
    md = (out / "summary.md").read_text()
    assert "unmeasured (not clear of sampling)" in md and "| baseline | 8 | 2 | 1/1 = 1.000 | 1.0000 (0.21–1.00) |" in md
    assert 'id="sweep-plot"' in (out / "summary.html").read_text()  # the chart, inline SVG
    assert len(summary["runs"]) == 8
    assert containers_under(docker_client, out) == []

    # Re-running the same sweep finds everything finished and runs nothing.
    again = cli("sweep", *SMALL_SWEEP, "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr
    outcome = json.loads(again.stdout)
    assert (outcome["ran"], outcome["skipped"], outcome["total"]) == (0, 8, 8)
    assert len(read_lines(out)) == 8


@pytest.mark.docker
def test_broken_scenarios_are_reported_and_the_others_still_run(docker_client, sandbox_image, tmp_path):
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    manifest = make_user_scenario(scenarios)
    # Unusable manifest: refused at load time, no run.
    (scenarios / "no-goal.scenario.toml").write_text('name = "no-goal"\nrepo = "wordy"\n')
    # Usable manifest whose target already passes on the pristine tree: the verifier refuses it.
    already = manifest.read_text().replace('name = "word-count"', 'name = "already-green"').replace(
        "tests/test_words.py::test_repeated_spaces", "tests/test_words.py::test_two_words")
    (scenarios / "already-green.scenario.toml").write_text(already)
    out = tmp_path / "sweep"
    proc = cli("sweep", "--scenarios-dir", str(scenarios), "--scenarios", "word-count", "already-green", "no-goal",
               "--budgets", "6", "--seeds", "1", "--workers", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no-goal is unusable" in proc.stderr
    by_scenario = {r["scenario"]: r for r in read_lines(out)}
    assert by_scenario["word-count"]["status"] == "awaiting_release_confirmation"
    assert by_scenario["already-green"]["status"] == "dependency_failure"
    assert "already pass" in by_scenario["already-green"]["detail"]
    assert by_scenario["no-goal"]["status"] == SCENARIO_ERROR and "goal" in by_scenario["no-goal"]["detail"]
    summary = json.loads((out / "summary.json").read_text())
    assert [b["scenario"] for b in summary["broken"]] == ["no-goal"]
    assert [b["scenario"] for b in summary["never_started"]] == ["already-green"]
    md = (out / "summary.md").read_text()
    assert "Broken scenarios" in md and "no-goal" in md and "already-green" in md
    assert containers_under(docker_client, tmp_path) == []

    # Fixed, the broken manifest runs when the sweep is resumed; finished runs are not redone.
    (scenarios / "no-goal.scenario.toml").write_text(manifest.read_text().replace('name = "word-count"',
                                                                                 'name = "no-goal"'))
    resumed = cli("sweep", "--scenarios-dir", str(scenarios), "--scenarios", "word-count", "already-green", "no-goal",
                  "--budgets", "6", "--seeds", "1", "--workers", "2", "--out", str(out), "--json")
    assert resumed.returncode == 0, resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert (outcome["ran"], outcome["skipped"]) == (1, 2)
    assert outcome["summary"]["broken"] == []
    statuses = {r["scenario"]: r["status"] for r in outcome["summary"]["runs"]}
    assert statuses["no-goal"] == "awaiting_release_confirmation"


@pytest.mark.docker
@pytest.mark.parametrize("executor", ["local", pytest.param("ray", marks=pytest.mark.sweep)])
def test_ctrl_c_leaves_no_container_and_no_torn_line_and_the_sweep_resumes(docker_client, sandbox_image, tmp_path,
                                                                           baseline_cache, executor):
    if executor == "ray":
        import_required("ray")
    out = sweep_dir(tmp_path / "sweep", baseline_cache)
    # Three seeds on two workers: when the first run ends, the second is mid-run and the third starts.
    args = ["sweep", "--scenarios", "discount-bug", "--budgets", "8", "--seeds", "3", "--workers", "2",
            "--executor", executor, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    proc = subprocess.Popen([sys.executable, "-m", "repair_agent", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    results = out / RESULTS
    # Interrupt once the first run has finished, while the next ones are mid-run (their run
    # directories exist and have no results line yet).
    def finished() -> int:
        return results.read_text().count("\n") if results.exists() else 0

    wait_until(lambda: finished() >= 1, 240, "the sweep's first results line")
    wait_until(lambda: len(list((out / "runs").glob("2*"))) > finished() or proc.poll() is not None, 60,
               "a run started after the first one finished")
    assert proc.poll() is None, "the sweep finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stdout + stderr
    assert "run the same command again" in stderr
    assert containers_under(docker_client, tmp_path) == []
    text = results.read_text()
    assert text.endswith("\n")
    first = [json.loads(line) for line in text.splitlines()]
    assert 1 <= len(first) < 3
    assert all(r["status"] == "awaiting_release_confirmation" for r in first)  # no interrupted run counted
    # Runs were cut mid-way (their run dirs exist without a results line) and cleaned up anyway.
    assert len(list((out / "runs").glob("2*"))) > len(first)

    resumed = cli(*args, "--json")
    assert resumed.returncode == 0, resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert outcome["skipped"] == len(first) and outcome["ran"] == 3 - len(first)
    lines = read_lines(out)
    assert sorted(r["seed"] for r in lines) == list(range(3))
    assert all(r["status"] == "awaiting_release_confirmation" for r in lines)
    assert lines[:len(first)] == first  # finished lines are kept as they were
    assert containers_under(docker_client, tmp_path) == []


@pytest.mark.docker
def test_the_ray_executor_gives_the_local_executors_results(docker_client, small_sweep, tmp_path, baseline_cache):
    """The seeded chooser's budget-8 cell of the small sweep again, on Ray: the same results lines."""
    import_required("ray")
    on_ray = cli("sweep", "--scenarios", "discount-bug", "--chooser", SEEDED, "--budgets", "8", "--seeds", "2",
                 "--workers", "2", "--out", str(sweep_dir(tmp_path / "ray", baseline_cache)), "--executor", "ray")
    assert on_ray.returncode == 0, on_ray.stderr

    def canonical(lines):
        return [r.deterministic() for r in sorted((SweepResult.model_validate(r) for r in lines), key=lambda r: r.key)]

    local_lines = canonical(r for r in read_lines(small_sweep) if r["chooser"] == SEEDED and r["budget"] == 8)
    ray_lines = canonical(read_lines(tmp_path / "ray"))
    assert len(local_lines) == 2 and local_lines == ray_lines
    # The seed matters to the seeded chooser at budget 8 (only seed 1 runs the target before patching,
    # so only its evidence is complete): identical results are not identical by accident.
    complete = {(r["chooser"], r["seed"]): r["rubric"]["complete"] for r in ray_lines}
    assert complete == {(SEEDED, 0): False, (SEEDED, 1): True}, complete
    assert {Path(r["run_dir"]).parent for r in read_lines(tmp_path / "ray")} == {tmp_path / "ray" / "runs"}
    assert containers_under(docker_client, tmp_path) == []


@pytest.mark.docker
@pytest.mark.sweep
def test_a_longer_sweep_grouped_by_kind(docker_client, sandbox_image, tmp_path):
    """Every budget of the issue, 3 seeds, two choosers, every scenario found (long: `pytest -m sweep`)."""
    out = tmp_path / "sweep"
    proc = cli("sweep", "--chooser", "baseline", "--chooser", SEEDED, "--budgets", "2,4,6,8,12", "--seeds", "3",
               "--group-by", "kind", "--out", str(out), timeout=3000)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["group_by"] == "kind" and summary["cells"]
    assert all(c["band"] is not None for c in summary["cells"])
    assert containers_under(docker_client, tmp_path) == []
