"""Hostile candidate code at run time: hangs, fork bombs and output floods inside the verifier's
containers. None may reach awaiting_release_confirmation, and none may hurt the host. A fork bomb
needs a grant first (the gate finds os.fork); it is then run with that grant."""
from __future__ import annotations

import difflib
import json
import time
from pathlib import Path

import pytest

from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import load_manifest
from repair_agent.loop.state import StopReason
from verifier.isolation import Limits

ROOT = Path(__file__).resolve().parents[1]
PRICING = ROOT / "sandbox_repos/discount_shop/src/discount_shop/pricing.py"
FIX_LINE = "    discounted = price * (1 - discount)\n"


def patch_pricing(insert_after_fix: str) -> str:
    """The real fix plus hostile code run at import time."""
    old = PRICING.read_text().splitlines(keepends=True)
    new = [l.replace("price * (1 - discount)", "price * (1 - discount / 100)") for l in old] + insert_after_fix.splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, "a/src/discount_shop/pricing.py", "b/src/discount_shop/pricing.py"))


HANG = "\nwhile True:\n    pass\n"
FORK_BOMB = "\nimport os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
FLOOD = "\nprint('x' * 50_000_000)\n"


class PatchThenTest:
    name = "hostile-runtime"

    def __init__(self, diff: str):
        self.script = [{"tool": "apply_patch", "diff": diff}, {"tool": "run_target_test"},
                       {"tool": "stop", "reason": "done"}]

    def choose(self, view):
        return self.script[min(len(view.evidence), len(self.script) - 1)]


@pytest.fixture
def quick_scenario(tmp_path):
    """discount-bug with a 5 s test deadline, so a hang costs seconds, not minutes."""
    manifest = tmp_path / "quick.scenario.toml"
    manifest.write_text(f"""
name = "discount-bug-quick"
repo = "{ROOT / 'sandbox_repos/discount_shop'}"
heldout = "{ROOT / 'sandbox_repos/discount-bug.heldout.toml'}"
[goal]
text = "fix the discount"
failure_signature = "assert 100 == 90"
[acceptance]
target_tests = ["tests/test_pricing.py::test_ten_percent_discount"]
test_timeout_s = 5
""")
    return load_manifest(manifest)


def run_data(rec) -> tuple[dict, dict]:
    """The run_target_test evidence the chooser saw, and what the held-out probe said about it (kept on
    the host, named by the evidence: never part of the chooser's view)."""
    journal = [json.loads(line) for line in (Path(rec.run_dir) / "journal.jsonl").read_text().splitlines()]
    result = [r for r in journal if r.get("event") == "step"
              and r.get("result", {}).get("tool") == "run_target_test"][0]["result"]
    assert "heldout" not in result["data"] and "correctness" not in result["data"]
    return result, json.loads(Path(result["data"]["behaviour_file"]).read_text())


@pytest.mark.docker
@pytest.mark.parametrize("payload, expect", [(HANG, "timeout"), (FLOOD, "flood")], ids=["hang", "flood"])
def test_runtime_hostility_is_contained(docker_client, sandbox_image, runs_dir, quick_scenario, payload, expect):
    """A hang and a flood need no grant (the gate finds nothing in `while True` or `print`)."""
    started = time.monotonic()
    rec = execute_run(quick_scenario, PatchThenTest(patch_pricing(payload)), runs_dir=runs_dir, client=docker_client)
    elapsed = time.monotonic() - started
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.u_trajectory[-1] > 0
    result, behaviour = run_data(rec)
    data = result["data"]
    if expect == "timeout":
        assert result["status"] == "timeout"
        assert data["timed_out"] is True and "timed out" in " ".join(data["problems"])
        assert elapsed < 60  # a 5 s test deadline and the probe's own budget, plus container starts: not a hang
        # The probe is not run after a suite that ran out of time (the container was reset): nothing
        # is judged, and nothing is correct.
        assert behaviour["heldout"]["ok"] is False and "not run" in behaviour["heldout"]["problem"]
        assert behaviour["correctness"] is None
        assert data["duration_s"] < 45, data["duration_s"]
    else:
        # pytest captures the flood, and the probe's standard streams go nowhere: the fix is real, so
        # it is judged "correct" (the flood switched nothing off), and the host keeps almost nothing.
        assert result["status"] == "ok"
        assert behaviour["heldout"]["ok"] is True and behaviour["correctness"] == "correct"
        kept = sum(f.stat().st_size for f in Path(rec.run_dir).rglob("*") if f.is_file())
        assert kept < Limits().run_keep_cap + 4 * 1024 * 1024, kept
    assert docker_client.ping()  # the engine (and the host) are fine


@pytest.mark.docker
def test_fork_bomb_is_refused_and_contained_once_granted(docker_client, sandbox_image, runs_dir, quick_scenario,
                                                          tmp_path):
    """The gate refuses os.fork (process) before anything runs; granted anyway, the bomb runs into the
    container's pid limit and the test deadline, and the engine and the host are fine."""
    from verifier import Verifier
    from verifier.gate import review

    diff = patch_pricing(FORK_BOMB)
    rec = execute_run(quick_scenario, PatchThenTest(diff), backend="local", runs_dir=runs_dir)
    assert rec.status is StopReason.AUTHORIZATION_REQUIRED and rec.u_trajectory == [3, 3]
    assert "process at src/discount_shop/pricing.py:" in rec.detail and "os.fork" in rec.detail
    keys = tuple(review(diff, quick_scenario.repo, quick_scenario.spec).grants_needed)
    # No held-out probe here (the hang above shows the probe's own bounds): only pytest, its 5 s deadline
    # and the container's pid limit stand between the bomb and the host.
    verifier = Verifier(quick_scenario.spec, quick_scenario.repo, tmp_path / "verifier", backend="docker",
                        client=docker_client, image=sandbox_image, granted=keys, pool_size=1)
    try:
        verifier.prepare()
        started = time.monotonic()
        verdict = verifier.run_tests(diff, "target_test")
        elapsed = time.monotonic() - started
    finally:
        verifier.close()
    assert verdict.pytest is not None  # granted: it ran
    assert verdict.timed_out and not verdict.ok and verdict.correctness is None
    assert any("timed out" in p for p in verdict.problems)
    assert elapsed < 45, elapsed  # the test deadline and a container reset, not the bomb's
    assert docker_client.ping()


@pytest.mark.docker
def test_one_budget_bounds_every_stream_of_a_run(docker_client, sandbox_image, tmp_path):
    """Eight 2 MB streams (stdout and stderr of four commands) under one 3 MiB budget: the host keeps
    3 MiB in all, while each stream's true size and hash are still recorded."""
    from verifier.isolation import HardenedContainer, KeepBudget

    budget = KeepBudget(3 * 1024 * 1024)
    box = HardenedContainer(docker_client, sandbox_image, budget=budget)
    try:
        for _ in range(4):
            res = box.exec(["sh", "-c", "head -c 2000000 /dev/zero; head -c 2000000 /dev/zero >&2"], timeout_s=30,
                           output_dir=tmp_path)
            assert res.stdout.true_bytes == res.stderr.true_bytes == 2_000_000
    finally:
        box.close()
    kept = sum(f.stat().st_size for f in tmp_path.iterdir())
    assert kept == budget.used == budget.total
