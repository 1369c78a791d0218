"""Broken dependencies end in dependency_failure with a report; the verifier's second layer holds."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import docker
import pytest

from repair_agent.choosers import BaselineChooser
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from verifier.candidate_tree import restore_protected
from repair_agent.loop.state import StopReason
from verifier import AcceptanceSpec, Verifier
from verifier.isolation import LABEL, OWNER_LABEL

ROOT = Path(__file__).resolve().parents[1]
REPO = ROOT / "sandbox_repos/discount_shop"


def test_an_engine_that_does_not_answer_is_a_dependency_failure_with_a_report(runs_dir, tmp_path):
    dead = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41", timeout=2)
    rec = execute_run(resolve("discount-bug"), BaselineChooser(resolve("discount-bug").baseline), runs_dir=runs_dir, client=dead)
    assert rec.status is StopReason.DEPENDENCY_FAILURE and rec.exit_code == 17 and rec.steps_used == 0
    report = json.loads((Path(rec.run_dir) / "report.json").read_text())
    assert report["status"] == "dependency_failure" and "no-engine.sock" in report["why"]
    assert "sandbox, engine" in report["next_attempt"]


class KillsItsSandbox:
    """Hostile and clumsy: kills the run's own container between two steps."""

    name = "kills-sandbox"

    def __init__(self, client):
        self.client = client

    def choose(self, view):
        if view.step == 1:
            return {"tool": "search", "query": "apply_discount"}
        # Only this test process's sandbox: never another run's on the same engine.
        for c in self.client.containers.list(filters={"label": [LABEL, "org.repair-agent.role=sandbox",
                                                                f"{OWNER_LABEL}={os.getpid()}"]}, ignore_removed=True):
            c.kill()
        return {"tool": "read_file", "path": "src/discount_shop/pricing.py"}


@pytest.mark.docker
def test_a_container_that_dies_is_a_dependency_failure_not_a_test_failure(docker_client, sandbox_image, runs_dir):
    rec = execute_run(resolve("discount-bug"), KillsItsSandbox(docker_client), runs_dir=runs_dir, client=docker_client)
    assert rec.status is StopReason.DEPENDENCY_FAILURE, rec.detail
    assert rec.detail.startswith("sandbox or engine failure") and rec.exit_code == 17
    assert rec.steps_used == 2 and rec.u_trajectory == [3, 3, 3]
    stop = [json.loads(l) for l in (Path(rec.run_dir) / "journal.jsonl").read_text().splitlines()][-1]
    assert stop["event"] == "stop" and stop["extra"]["raw"]  # the raw engine error is kept


def test_verifier_restores_protected_files_and_refuses_added_infrastructure(tmp_path):
    """The layer under the scope check: even a tree that got past it is put right before tests run."""
    spec = AcceptanceSpec(scenario="discount-bug", target_tests=("tests/test_pricing.py::test_ten_percent_discount",))
    v = Verifier(spec, REPO, tmp_path / "v", backend="local")
    v.prepare()
    tree = tmp_path / "tree"
    shutil.copytree(v.snapshot.root, tree, copy_function=shutil.copyfile)
    for p in [tree, *tree.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    (tree / "tests/test_pricing.py").write_text("def test_ten_percent_discount():\n    assert True\n")
    (tree / "tests/conftest.py").write_text("import pytest\n")
    (tree / "src/sitecustomize.py").write_text("print('hi')\n")
    (tree / "src/evil.pth").write_text("import os\n")
    (tree / "pyproject.toml").unlink()
    restored, refused = restore_protected(tree, v.snapshot, v.spec)
    assert sorted(restored) == ["pyproject.toml", "tests/test_pricing.py"]
    assert sorted(refused) == ["src/evil.pth", "src/sitecustomize.py", "tests/conftest.py"]
    assert (tree / "tests/test_pricing.py").read_text() == (REPO / "tests/test_pricing.py").read_text()
    assert not (tree / "tests/conftest.py").exists()


def test_a_tampered_snapshot_stops_the_verifier(tmp_path):
    from verifier import VerifierCompromised

    spec = AcceptanceSpec(scenario="discount-bug", target_tests=("tests/test_pricing.py::test_ten_percent_discount",))
    v = Verifier(spec, REPO, tmp_path / "v", backend="local")
    v.prepare()
    target = Path(v.snapshot.root) / "tests/test_pricing.py"
    target.chmod(0o644)
    target.write_text("def test_ten_percent_discount():\n    assert True\n")
    with pytest.raises(VerifierCompromised):
        v.run_tests("", "target_test")
