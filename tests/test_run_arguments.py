"""What `run` refuses before a run exists, what a journal refuses to write, and how `runs` tells a
live run from a killed one — through the real CLI, with real processes and files."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repair_agent.loop.journal import Journal, JournalError, StartRecord
from repair_agent.lifecycle.run import initial_state
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import Budget

ROOT = Path(__file__).resolve().parents[1]

SLOW = '''\
import time

from repair_agent.choosers import BaselineChooser
from repair_agent.scenarios.scenario import resolve


class Slow:
    """The discount-bug baseline, which first waits: the run is alive and has no run.json yet."""
    name = "slow"

    def __init__(self):
        self.inner = BaselineChooser(resolve("discount-bug").baseline)

    def choose(self, view):
        time.sleep(60)
        return self.inner.choose(view)
'''


def cli(runs: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, **kw)


@pytest.mark.parametrize("options, said", [
    (["--max-steps", "-1"], "--max-steps -1"),
    (["--max-steps", "0"], "--max-steps 0"),
    (["--deadline", "-5"], "--deadline -5"),
    (["--max-steps", "3", "--reserve", "3"], "(--reserve 3) must be below the run's steps (--max-steps 3)"),
])
def test_bad_budget_options_are_refused_before_a_run_directory_exists(tmp_path, options, said):
    runs = tmp_path / "runs"
    proc = cli(runs, "run", "discount-bug", "--sandbox", "local", *options)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr[-2000:]
    # (--reserve is checked against the scenario's steps, once it is read: still no run.)
    assert not runs.exists() or not any(runs.iterdir()), list(runs.iterdir())


def test_an_unknown_scenario_leaves_no_run_directory(tmp_path):
    runs = tmp_path / "runs"
    proc = cli(runs, "run", "no-such-scenario", "--sandbox", "local")
    assert proc.returncode == 2 and "unknown scenario 'no-such-scenario'" in proc.stderr
    assert not runs.exists() or not any(runs.iterdir())
    # A manifest that exists but does not load still leaves its record.
    broken = tmp_path / "broken.scenario.toml"
    broken.write_text('name = "Broken Name"\n')
    proc = cli(runs, "run", str(broken), "--sandbox", "local")
    assert proc.returncode == 2 and "kept in" in proc.stderr
    assert [p.name.split("-", 1)[1][:16] for p in runs.iterdir()] == ["invalid-manifest"]


def test_a_record_that_would_not_read_back_is_not_written(tmp_path):
    scenario = resolve("discount-bug")
    # Built without validation, as a model_copy(update=...) would: -1 steps.
    budget = Budget.model_construct(**{**scenario.budget.model_dump(), "max_steps": -1})
    state = initial_state(scenario, budget)
    journal = Journal(tmp_path / "journal.jsonl")
    with pytest.raises(JournalError, match="would not read back"):
        journal.write(StartRecord(state_after=state, state_after_hash=state.hash, u=state.u))
    journal.close()
    assert (tmp_path / "journal.jsonl").read_text() == ""


def test_runs_says_running_for_a_live_run_and_killed_once_its_process_is_gone(tmp_path):
    runs = tmp_path / "runs"
    (tmp_path / "slow_chooser.py").write_text(SLOW)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = subprocess.Popen([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs), "run", "discount-bug",
                            "--sandbox", "local", "--chooser", "slow_chooser:Slow"], cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        rows: list = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not rows:
            time.sleep(1)
            rows = json.loads(cli(runs, "runs", "--json").stdout or "[]")
        assert [r["status"] for r in rows] == ["running"], rows
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    rows = json.loads(cli(runs, "runs", "--json").stdout)
    assert [r["status"] for r in rows] == ["killed"], rows
