"""A damaged record on disk is damaged data, not a usage error, and hides no other run."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from repair_agent import cli
from repair_agent.choosers import load_chooser
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve


def test_one_corrupt_run_json_is_named_and_the_other_runs_are_listed(tmp_path, capsys):
    runs = tmp_path / "runs"
    scenario = resolve("discount-bug")
    good = execute_run(scenario, load_chooser("baseline", scenario), backend="local", runs_dir=runs,
                       max_steps=2)
    bad = runs / "20000101T000000Z-discount-bug-bad000"
    shutil.copytree(good.run_dir, bad, ignore=shutil.ignore_patterns("workspace", "verifier", "outputs"))
    record = json.loads((bad / "run.json").read_text())
    record["status"] = "finished-ish"  # not a StopReason: pydantic refuses it
    (bad / "run.json").write_text(json.dumps(record))

    assert cli.main(["--runs-dir", str(runs), "runs", "--json"]) == 1
    out = capsys.readouterr()
    assert [r["run_id"] for r in json.loads(out.out)] == [good.run_id]
    assert str(bad / "run.json") in out.err and "not a readable run record" in out.err

    # A journal line that is no journal record is damaged data, with its own exit code, not "usage".
    journal = bad / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    stop = json.loads(lines[-1])
    stop["status"] = "finished-ish"
    journal.write_text("".join(lines[:-1]) + json.dumps(stop) + "\n")
    assert cli.main(["--runs-dir", str(runs), "replay", bad.name]) == 1
    err = capsys.readouterr().err
    assert "does not read as its schema says" in err and "status" in err
    assert cli.main(["--runs-dir", str(runs), "replay", "no-such-run"]) == cli.USAGE_ERROR
    assert Path(good.run_dir).is_dir()


def test_a_reader_that_goes_away_ends_the_listing_quietly():
    """`repair-agent scenarios | head -1`: the pipe closes before the listing is written; the command
    ends without a traceback (the rest of its output goes nowhere), as `cat` would."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "repair_agent", "scenarios"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()   # the reader is gone before the first line
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert proc.returncode in (0, 141)
