"""Hostile candidate code at run time: hangs, fork bombs and output floods inside the verifier's
containers. None may reach awaiting_release_confirmation, and none may hurt the host."""
from __future__ import annotations

import difflib
import json
import time
from pathlib import Path

import pytest

from repair_agent.run import execute_run
from repair_agent.scenario import load_manifest
from repair_agent.state import StopReason

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


@pytest.mark.docker
@pytest.mark.parametrize("payload, expect", [(HANG, "timeout"), (FORK_BOMB, "timeout"), (FLOOD, "flood")],
                         ids=["hang", "fork-bomb", "flood"])
def test_runtime_hostility_is_contained(docker_client, sandbox_image, runs_dir, quick_scenario, payload, expect):
    started = time.monotonic()
    rec = execute_run(quick_scenario, PatchThenTest(patch_pricing(payload)), runs_dir=runs_dir, client=docker_client)
    elapsed = time.monotonic() - started
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.u_trajectory[-1] > 0
    report = json.loads((Path(rec.run_dir) / "report.json").read_text())
    target = [e for e in report["evidence"] if e["tool"] == "run_target_test"][0]
    assert target["status"] in ("timeout", "failed")
    journal = [json.loads(l) for l in (Path(rec.run_dir) / "journal.jsonl").read_text().splitlines()]
    data = [r for r in journal if r.get("event") == "step" and r.get("result", {}).get("tool") == "run_target_test"][0]
    data = data["result"]["data"]
    if expect == "timeout":
        assert data["timed_out"] is True and "timed out" in " ".join(data["problems"])
        assert elapsed < 60  # two 5 s deadlines plus container starts, not a hang
        # The held-out probe, which imports the hanging module too, is ended by its own 5 s deadline
        # (not by the longer one of the result reader it shares an exec with).
        assert data["heldout"]["problem"] == "the held-out probe timed out"
        assert data["duration_s"] < 30, data["duration_s"]
    else:
        # pytest captures the flood; the held-out probe's interpreter does not: its stream is capped
        # on the host, and the buggy behaviour still fails the held-out checks.
        assert data["heldout"]["ok"] is False
    assert docker_client.ping()  # the engine (and the host) are fine
