"""A scenario a user writes for their own repository: nothing is discount-specific."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import USER_MANIFEST, make_user_scenario

def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_user_scenarios_are_listed_from_a_directory(tmp_path):
    make_user_scenario(tmp_path)
    proc = cli("scenarios", "--json", "--scenarios-dir", str(tmp_path))
    names = {s["name"]: s for s in json.loads(proc.stdout)}
    assert {"discount-bug", "word-count"} <= names.keys()
    assert names["word-count"]["repo"] == str((tmp_path / "wordy").resolve())


@pytest.mark.docker
def test_a_user_scenario_runs_end_to_end_in_docker(docker_client, sandbox_image, tmp_path):
    manifest = make_user_scenario(tmp_path)
    proc = cli("run", str(manifest), "--json", "--runs-dir", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["scenario"] == "word-count" and out["u_trajectory"][0] == 3 and out["u_trajectory"][-1] == 0
    report = json.loads((Path(out["run_dir"]) / "report.json").read_text())
    assert [v["summary"] for v in report["verdicts"]][:2] == ["target_test: 1/1 passed", "full_suite: 3/3 passed"]
    assert "text.split()" in (Path(out["run_dir"]) / "candidate.diff").read_text()


def test_without_a_baseline_recipe_the_baseline_hands_over(tmp_path):
    manifest = make_user_scenario(tmp_path)
    manifest.write_text(USER_MANIFEST.split("[baseline]")[0])
    proc = cli("run", str(manifest), "--json", "--sandbox", "local", "--runs-dir", str(tmp_path / "runs"))
    out = json.loads(proc.stdout)
    assert proc.returncode == 10 and "no [baseline] recipe" in out["detail"]


def test_a_scenario_by_name_is_the_one_the_listing_picks(tmp_path):
    from repair_agent.scenarios.scenario import discover, resolve

    manifest = make_user_scenario(tmp_path)
    # Before it in the listing's order, a broken manifest of the same name (skipped); after it, a
    # second valid one (the first wins).
    (tmp_path / "0-broken.scenario.toml").write_text('name = "word-count"\nrepo = "no-such-dir"\n')
    (tmp_path / "zz-second.scenario.toml").write_text(manifest.read_text().replace('repo = "', 'repo = "./'))
    found, errors = discover([tmp_path])
    assert [e.manifest.name for e in errors] == ["0-broken.scenario.toml"]
    picked = resolve("word-count", [tmp_path]).manifest_path
    assert picked == found["word-count"].manifest_path and Path(picked).name == manifest.name
