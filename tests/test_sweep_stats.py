"""The sampling side of a sweep's summary, on results built the way the sweep writes them.

No containers: each line is a `SweepResult` dumped as results.jsonl holds it, and the checks call
the same summary code the sweep calls (`summarize`, `render_markdown`, `write_summary`)."""
from __future__ import annotations

import json
import math

import pytest

from repair_agent.sweep import statistics as stats
from repair_agent.sweep.html import render_sweep_html
from helpers import HANDOFF, SCENARIOS, cell_lines, sweep_line
from repair_agent.sweep import RESULTS, SweepSummary, load_results, render_markdown, summarize, write_summary

line = sweep_line


def success(summary: SweepSummary, a: str, b: str) -> stats.Comparison:
    (found,) = [c for c in summary.comparisons if (c.a, c.b, c.metric) == (a, b, "success_rate")]
    return found


# ----------------------------------------------------------------------------------- the maths
def test_wilson_interval_known_values_and_width_at_the_edges():
    half = stats.wilson(0.5, 10)
    assert (half.low, half.high) == pytest.approx((0.2366, 0.7634), abs=1e-4)   # the textbook 5 of 10
    none, every = stats.wilson(0.0, 28), stats.wilson(1.0, 28)
    # 0/28 and 28/28 still leave room: a percentile bootstrap would give the single point.
    assert none.low == 0.0 and none.high == pytest.approx(0.1206, abs=1e-4)
    assert every.high == 1.0 and every.low == pytest.approx(0.8794, abs=1e-4)
    assert stats.wilson(0.5, 0) is None


def test_the_sign_test_is_exact():
    assert stats.sign_test(0, 0) == 1.0
    assert stats.sign_test(1, 0) == 1.0                         # one differing scenario says nothing
    assert stats.sign_test(5, 0) == pytest.approx(2 / 32)       # five of five: still not below 0.05
    assert stats.sign_test(6, 0) == pytest.approx(2 / 64)
    assert stats.sign_test(4, 3) == 1.0
    # Against the binomial tail summed by hand for 12 higher, 3 lower.
    tail = sum(math.comb(15, i) for i in range(4)) / 2 ** 15
    assert stats.sign_test(12, 3) == pytest.approx(2 * tail) == stats.sign_test(3, 12)


# ------------------------------------------------------------------------ the three cases
def test_a_deterministic_pair_one_scenario_apart_in_28_is_unmeasured_by_sampling():
    base = set(SCENARIOS[:21])
    summary = summarize(cell_lines("a", base) + cell_lines("b", base | {SCENARIOS[21]}))
    x = success(summary, "a@12", "b@12")
    # Every seed agrees, so the band is 0 and +1/28 clears it; the scenarios do not.
    assert x.difference == pytest.approx(1 / 28, abs=1e-6) and x.band == 0.0
    assert (x.paired.scenarios, x.paired.b_higher, x.paired.b_lower, x.paired.p_value) == (28, 1, 0, 1.0)
    assert x.verdict == "unmeasured" and x.unmeasured_by == ["sampling"]
    assert stats.fmt_verdict(x) == "unmeasured (not clear of sampling)"


def test_a_large_paired_difference_is_up():
    summary = summarize(cell_lines("a", set(SCENARIOS[:5])) + cell_lines("b", set(SCENARIOS[:20])))
    x = success(summary, "a@12", "b@12")
    assert (x.paired.b_higher, x.paired.b_lower) == (15, 0) and x.paired.p_value < 0.001 and x.paired.clears
    assert x.verdict == "up" and x.unmeasured_by == []
    down = summarize(cell_lines("a", set(SCENARIOS[:20])) + cell_lines("b", set(SCENARIOS[:5])))
    assert success(down, "a@12", "b@12").verdict == "down"


def test_when_seeds_disagree_the_band_wins():
    # a: seed 0 repairs everything, seeds 1 and 2 nothing (band 1.0); b repairs everything.
    noisy = {0: set(SCENARIOS), 1: set(), 2: set()}
    summary = summarize(cell_lines("a", noisy) + cell_lines("b", set(SCENARIOS)))
    x = success(summary, "a@12", "b@12")
    # Every scenario is higher under b (28 to 0, far past the sign test), yet the seeds of a alone
    # move the figure by the whole scale: the difference is inside the band.
    assert x.paired.clears and (x.paired.b_higher, x.paired.b_lower) == (28, 0)
    assert x.band == 1.0 and x.difference == pytest.approx(2 / 3, abs=1e-6)
    assert x.verdict == "unmeasured" and x.unmeasured_by == ["band"]
    assert stats.fmt_verdict(x) == "unmeasured (inside the band)"


def test_one_seed_has_no_band_and_says_so():
    summary = summarize(cell_lines("a", set(SCENARIOS[:5]), seeds=1) + cell_lines("b", set(SCENARIOS), seeds=1))
    x = success(summary, "a@12", "b@12")
    assert x.band is None and x.paired.clears and x.unmeasured_by == ["band"]
    assert stats.fmt_verdict(x) == "unmeasured (no band: one seed)"
    assert stats.NO_BAND_NOTE in render_markdown(summary)
    three = summarize(cell_lines("a", set(SCENARIOS[:5])) + cell_lines("b", set(SCENARIOS)))
    assert stats.NO_BAND_NOTE not in render_markdown(three) and success(three, "a@12", "b@12").verdict == "up"


def test_a_cost_figure_whose_scenarios_disagree_with_its_difference_is_unmeasured():
    # Equal medians overall, yet every scenario but none takes more steps under b: no direction to report.
    a = [line(s, "a", seed, True, steps=6) for seed in range(3) for s in SCENARIOS]
    b = [line(s, "b", seed, True, steps=6 if i < 14 else 7) for seed in range(3) for i, s in enumerate(SCENARIOS)]
    summary = summarize(a + b)
    (x,) = [c for c in summary.comparisons if c.metric == "median_steps"]
    assert x.difference == pytest.approx(0.5) and x.band == 0.0
    assert x.paired.b_higher == 14 and x.paired.clears and x.verdict == "up"
    flat = [line(s, "b", seed, True, steps=6 if i < 20 else 9) for seed in range(3) for i, s in enumerate(SCENARIOS)]
    (y,) = [c for c in summarize(a + flat).comparisons if c.metric == "median_steps"]
    assert y.difference == 0.0 and y.paired.b_higher == 8 and y.paired.p_value < 0.05
    assert y.unmeasured_by == ["band", "sampling"] and "disagree" in stats.fmt_verdict(y)


# -------------------------------------------------------------------- intervals, resolution
def test_the_interval_counts_scenarios_not_runs():
    """Three seeds of a deterministic chooser are one observation per scenario, not three."""
    greens = set(SCENARIOS[:21])
    (one,) = summarize(cell_lines("a", greens, seeds=1)).cells
    (three,) = summarize(cell_lines("a", greens, seeds=3)).cells
    assert one.success_rate == three.success_rate == 0.75
    assert three.intervals["success_rate"] == one.intervals["success_rate"]
    interval = three.intervals["success_rate"]
    over_runs = stats.wilson(0.75, 84)
    assert interval.high - interval.low > over_runs.high - over_runs.low
    assert (interval.low, interval.high) == pytest.approx((0.5664, 0.8732), abs=1e-4)  # 21 of 28, by hand
    assert three.resolution == stats.Resolution(scenarios=28, one_scenario=round(1 / 28, 6))


def test_a_scenario_whose_seeds_split_counts_as_its_share_and_the_interval_stays_conservative():
    split = {0: set(SCENARIOS[:14]), 1: set(SCENARIOS[:14]), 2: set(SCENARIOS)}
    (cell,) = summarize(cell_lines("a", split)).cells
    assert cell.per_scenario[SCENARIOS[0]]["success_rate"] == 1.0
    assert cell.per_scenario[SCENARIOS[27]]["success_rate"] == pytest.approx(1 / 3, abs=1e-6)
    interval = cell.intervals["success_rate"]
    # Wilson's p(1 − p) bounds the variance of each scenario's share: the interval is at least as wide
    # as the normal interval built from the shares' own spread.
    shares = [v["success_rate"] for v in cell.per_scenario.values()]
    mean = sum(shares) / 28
    sd = math.sqrt(sum((x - mean) ** 2 for x in shares) / 27 / 28)
    assert interval.high - interval.low >= 2 * stats.Z95 * sd
    assert interval.low < cell.success_rate < interval.high


# ------------------------------------------------------------------ correct vs plausible
def test_correct_sits_next_to_success_with_plausible_and_unchecked_counted():
    rows = []
    for seed in range(3):
        for i, s in enumerate(SCENARIOS):
            if i < 18:
                rows.append(line(s, "a", seed, True, correctness="correct"))
            elif i < 21:
                rows.append(line(s, "a", seed, True, correctness="plausible"))
            elif i < 23:
                rows.append(line(s, "a", seed, True, correctness="unchecked"))
            elif i < 25:  # scenarios that want a hand-off and get one: correct, with no patch to check
                rows.append(line(s, "a", seed, False, expected=HANDOFF, status=HANDOFF))
            else:
                rows.append(line(s, "a", seed, False))
    summary = summarize(rows)
    (cell,) = summary.cells
    assert cell.success_rate == pytest.approx(25 / 28)
    assert cell.correct_rate == pytest.approx(20 / 28)
    assert cell.correctness == stats.CorrectnessCounts(green=69, correct=54, plausible=9, unchecked=6, unrecorded=0)
    assert set(cell.intervals) == {"success_rate", "correct_rate", "evidence_complete_rate"}
    md = render_markdown(summary)
    assert "- a@12: 69 green: 54 correct, 9 plausible only, 6 unchecked" in md
    row = next(r for r in md.splitlines() if r.startswith("| a | 12 |"))
    assert "| 1/28 = 0.036 | 0.8929 (0.73–0.96) |" in row and "| 0.7143 (0.53–0.85) |" in row


def test_results_without_a_correctness_field_still_summarise(tmp_path):
    lines = cell_lines("a", set(SCENARIOS[:21])) + cell_lines("b", set(SCENARIOS[:21]))
    # results.jsonl as written before `correctness` was recorded, read back as the sweep reads it
    path = tmp_path / RESULTS
    path.write_text("".join(json.dumps(r.model_dump(exclude={"correctness"})) + "\n" for r in lines))
    old = load_results(path)
    assert len(old) == len(lines) and all(r.correctness is None for r in old)
    summary = summarize(old)
    for cell in summary.cells:
        assert cell.success_rate == 0.75 and cell.correct_rate is None
        assert "correct_rate" not in cell.intervals and cell.correctness.unrecorded == 63
    assert not [c for c in summary.comparisons if c.metric == "correct_rate"]  # nothing to compare
    assert "63 green; correctness not recorded" in render_markdown(summary)


# ---------------------------------------------------------------- typed, written, rendered
def test_summary_json_holds_typed_intervals_verdicts_and_resolution(tmp_path):
    rows = cell_lines("a", set(SCENARIOS[:5])) + cell_lines("b", set(SCENARIOS[:20]))
    summary = write_summary(rows, tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert SweepSummary.read(tmp_path / "summary.json") == summary  # read back through the same shape
    for cell in written["cells"]:
        typed = stats.CellStatistics.model_validate(cell)
        assert typed.resolution.scenarios == 28 and set(typed.per_scenario) == set(SCENARIOS)
        assert typed.intervals["success_rate"].method == "wilson over scenarios"
    comparisons = [stats.Comparison.model_validate(c) for c in written["comparisons"]]
    assert {c.metric for c in comparisons} >= {"success_rate", "correct_rate", "evidence_complete_rate"}
    assert all(c.paired is not None and c.paired.scenarios == 28 for c in comparisons)
    md = (tmp_path / "summary.md").read_text()
    assert "| a@12 → b@12 | success_rate | 0.1786 | 0.7143 | +0.5357 (+15.0 scenarios) | 0.0000 | " \
           "15 higher, 0 lower of 28; p < 0.001 | up |" in md
    assert "seed 003" not in md and "verifier/rubric.py" not in md    # words for a newcomer, no internals
    html = (tmp_path / "summary.html").read_text()
    assert 'id="explanation"' in html and "<b>95% interval</b>" in html and 'id="no-band"' not in html
    assert html.count('class="interval"') == 2 and "1/28 = 0.036" in html
    assert "15 higher, 0 lower of 28; p &lt; 0.001" in html


def test_html_names_what_an_unmeasured_comparison_failed(tmp_path):
    base = set(SCENARIOS[:21])
    summary = summarize(cell_lines("a", base, seeds=1) + cell_lines("b", base | {SCENARIOS[21]}, seeds=1))
    html = render_sweep_html(summary, tmp_path).read_text()
    assert 'id="no-band"' in html and "no run-to-run band exists" in html
    assert '<span class="muted reason">no band: one seed; not clear of sampling</span>' in html


# ------------------------------------------------------------------------------ the command
@pytest.mark.parametrize("seeds", [None, "1"])
def test_the_command_defaults_to_three_seeds_and_says_when_there_is_no_band(tmp_path, seeds):
    """A broken manifest is reported without running anything: the command's own path, no containers."""
    import subprocess
    import sys

    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "no-goal.scenario.toml").write_text('name = "no-goal"\nrepo = "wordy"\n')
    out = tmp_path / "sweep"
    args = [sys.executable, "-m", "repair_agent", "sweep", "--scenarios-dir", str(scenarios), "--scenarios", "no-goal",
            "--budgets", "4", "--workers", "1", "--out", str(out)] + (["--seeds", seeds] if seeds else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["seed"] for r in lines) == ([0] if seeds else [0, 1, 2])
    assert ("no run-to-run band exists" in done.stderr) == (seeds == "1")
