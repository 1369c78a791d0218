"""The README's promise, through the CLI a user types, in Docker."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.docker
def test_run_discount_bug_json_in_docker(docker_client, sandbox_image, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "run", "discount-bug", "--json",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "awaiting_release_confirmation" and out["sandbox"]["kind"] == "docker"
    u = out["u_trajectory"]
    assert u[0] == 3 and u[-1] == 0 and all(b <= a for a, b in zip(u, u[1:]))
    assert out["steps_used"] <= out["max_steps"] == 8
    diff = (Path(out["run_dir"]) / "candidate.diff").read_text()
    import hashlib

    assert hashlib.sha256(diff.encode()).hexdigest() == out["diff_sha256"]
    assert docker_client.containers.list(all=True, filters={"label": f"org.repair-agent.run={out['run_id']}"}) == []


def test_the_verifier_never_imports_the_agent_side():
    for path in (ROOT / "verifier").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "repair_agent" for n in names), f"{path.name} imports {names}"
