"""`repair-agent compare`: two sweeps of the same scenarios, cell by cell, by the same rule as a
sweep's own comparisons. The sweeps are written by the sweep's own summary code from results
built the way the sweep writes them."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers import SCENARIOS, cell_lines
from repair_agent.sweep import summarize
from repair_agent.sweep.compare import compare_sweeps, render_comparison


def write(tmp_path, name: str, lines: list[dict]):
    out = tmp_path / name
    out.mkdir()
    (out / "summary.json").write_text(summarize(lines).to_json())
    return out


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", "compare", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_change_that_repairs_many_more_scenarios_reads_up_and_names_them(tmp_path):
    before = write(tmp_path, "before", cell_lines("search", set(SCENARIOS[:6])))
    after = write(tmp_path, "after", cell_lines("search", set(SCENARIOS[:6]) | set(SCENARIOS[10:20])))
    proc = cli(str(before), str(after / "summary.json"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["a"], out["b"]) == ("before", "after")
    (pair,) = out["pairs"]
    success = next(c for c in pair["comparisons"] if c["metric"] == "success_rate")
    assert success["verdict"] == "up" and success["paired"]["b_higher"] == 10 and success["paired"]["b_lower"] == 0
    moves = next(m for m in pair["moves"] if m["metric"] == "success_rate")
    assert moves["higher"] == SCENARIOS[10:20] and moves["lower"] == []
    table = cli(str(before), str(after)).stdout
    assert "| all: search@12 | 28 | success_rate |" in table and "| up |" in table and SCENARIOS[10] in table


def test_one_scenario_gained_and_one_lost_is_unmeasured_and_both_are_named(tmp_path):
    a = summarize(cell_lines("search", set(SCENARIOS[:10])))
    b = summarize(cell_lines("search", set(SCENARIOS[1:11])))
    comparison = compare_sweeps(a, b, a_label="old", b_label="new")
    success = next(c for c in comparison.pairs[0].comparisons if c.metric == "success_rate")
    assert success.difference == 0 and success.verdict == "unmeasured"
    moves = next(m for m in comparison.pairs[0].moves if m.metric == "success_rate")
    assert (moves.higher, moves.lower) == ([SCENARIOS[10]], [SCENARIOS[0]])
    text = render_comparison(comparison)
    assert f"higher in new: {SCENARIOS[10]}; lower: {SCENARIOS[0]}" in text


def test_cells_and_scenarios_in_one_sweep_only_are_reported_not_compared(tmp_path):
    a = summarize(cell_lines("search", set(SCENARIOS[:3])) + cell_lines("baseline", set(SCENARIOS[:3])))
    b = summarize([line for line in cell_lines("search", set(SCENARIOS[:3])) if line.scenario != SCENARIOS[27]])
    comparison = compare_sweeps(a, b)
    assert [(p.chooser, p.budget) for p in comparison.pairs] == [("search", 12)]
    assert comparison.cells_only_in_a == ["all: baseline@12"] and comparison.cells_only_in_b == []
    assert comparison.pairs[0].only_in_a == [SCENARIOS[27]]


def test_a_directory_without_a_summary_is_a_usage_error(tmp_path):
    proc = cli(str(tmp_path), str(tmp_path))
    assert proc.returncode == 2 and "not a sweep's output directory" in proc.stderr


def test_figures_are_over_the_shared_scenarios_and_the_left_out_ones_are_counted_and_named(tmp_path):
    """a ran all 28 scenarios and repaired the first 10; b ran only those 10 and repaired them all.
    The cells' own rates differ by 1 − 10/28, a change of the scenario set, not of the chooser:
    over the 10 shared scenarios both are 1.0, b − a is 0, and the 18 others are left out, named."""
    a_lines = cell_lines("search", set(SCENARIOS[:10]))
    before = write(tmp_path, "before", a_lines)
    after = write(tmp_path, "after", [line for line in a_lines if line.scenario in SCENARIOS[:10]])
    proc = cli(str(before), str(after), "--json")
    assert proc.returncode == 0, proc.stderr
    (pair,) = json.loads(proc.stdout)["pairs"]
    success = next(c for c in pair["comparisons"] if c["metric"] == "success_rate")
    assert (success["a_value"], success["b_value"], success["difference"]) == (1.0, 1.0, 0)
    assert pair["shared"] == 10 and pair["only_in_a"] == sorted(SCENARIOS[10:]) and pair["only_in_b"] == []
    table = cli(str(before), str(after)).stdout
    assert "| all: search@12 | 10 | success_rate | 1.0000 | 1.0000 | +0.0000 " in table
    assert f"- left out, only in before (18): {', '.join(sorted(SCENARIOS[10:]))}" in table
