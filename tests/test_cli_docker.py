"""The README's promise, through the CLI a user types, in Docker."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import wait_until

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
    assert docker_client.containers.list(all=True, filters={"label": f"org.repair-agent.run={out['run_id']}"}, ignore_removed=True) == []


def test_the_verifier_never_imports_the_agent_side():
    for path in (ROOT / "verifier").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "repair_agent" for n in names), f"{path.name} imports {names}"


HANGING_PLUGIN = """
import time

class Hangs:
    name = "hangs"
    def choose(self, view):
        if view.step == 1:
            return {"tool": "search", "query": "apply_discount"}
        time.sleep(3600)  # a model call that never returns

def make():
    return Hangs()
"""


def _start_hanging_run(tmp_path, *extra):
    (tmp_path / "hanging_plugin.py").write_text(HANGING_PLUGIN)
    return subprocess.Popen([sys.executable, "-m", "repair_agent", "run", "discount-bug", "--chooser",
                             "hanging_plugin:make", "--runs-dir", str(tmp_path / "runs"), "--json", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})


def _journaled_steps(runs: Path) -> int:
    """Whole step lines in the runs' journals (a line being written is not one yet)."""
    count = 0
    for path in runs.glob("*/journal.jsonl"):
        for line in path.read_text().splitlines():
            try:
                count += json.loads(line).get("event") == "step"
            except ValueError:
                pass
    return count


def _containers_of(client, pid: int) -> list:
    from verifier.isolation import LABEL, OWNER_LABEL

    return client.containers.list(all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={pid}"]}, ignore_removed=True)


@pytest.mark.docker
def test_a_hung_chooser_meets_the_deadline_and_the_process_exits(docker_client, sandbox_image, tmp_path):
    import time

    started = time.monotonic()
    proc = _start_hanging_run(tmp_path, "--deadline", "4")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 12, err
    assert json.loads(out)["status"] == "deadline"
    assert time.monotonic() - started < 45  # the hung thread does not keep the process alive
    assert _containers_of(docker_client, proc.pid) == []


@pytest.mark.docker
def test_ctrl_c_keeps_the_evidence_and_removes_the_containers(docker_client, sandbox_image, tmp_path):
    import signal

    proc = _start_hanging_run(tmp_path)
    wait_until(lambda: list((tmp_path / "runs").glob("*/outputs/*")), 60, "step 1 to run in the sandbox")
    # Step 2 is the hung chooser: wait until the run has journaled step 1 and asks again.
    wait_until(lambda: _journaled_steps(tmp_path / "runs") >= 1, 60, "step 1's journal line")
    assert _containers_of(docker_client, proc.pid), "the run's sandbox should be up"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 17, err
    record = json.loads(out)
    assert record["status"] == "dependency_failure" and "interrupted" in record["detail"]
    journal = [json.loads(l) for l in (Path(record["run_dir"]) / "journal.jsonl").read_text().splitlines()]
    assert journal[-1]["event"] == "stop" and any(r.get("result", {}).get("id") == "E1" for r in journal)
    assert (Path(record["run_dir"]) / "report.md").is_file()
    assert _containers_of(docker_client, proc.pid) == []


@pytest.mark.docker
def test_cleanup_removes_leftovers_of_dead_runs_but_not_live_ones(docker_client, sandbox_image, tmp_path):
    from verifier.isolation import HardenedContainer

    # A process that dies without cleaning up (as after kill -9) leaves its container behind.
    crash = ("import docker, os; from verifier.isolation import HardenedContainer; "
             f"HardenedContainer(docker.from_env(), {sandbox_image!r}, labels={{'org.repair-agent.role': 'crashed'}}); "
             "os._exit(0)")
    subprocess.run([sys.executable, "-c", crash], check=True, cwd=ROOT, timeout=60)
    live = HardenedContainer(docker_client, sandbox_image, labels={"org.repair-agent.role": "live"})
    try:
        crashed = docker_client.containers.list(all=True, filters={"label": "org.repair-agent.role=crashed"}, ignore_removed=True)
        assert len(crashed) == 1
        proc = subprocess.run([sys.executable, "-m", "repair_agent", "cleanup"], capture_output=True, text=True)
        assert proc.returncode == 0 and "removed" in proc.stdout
        assert docker_client.containers.list(all=True, filters={"label": "org.repair-agent.role=crashed"}, ignore_removed=True) == []
        assert docker_client.containers.list(all=True, filters={"label": "org.repair-agent.role=live"}, ignore_removed=True)  # kept
    finally:
        live.close()


def _run_and_watch_the_engine(docker_client, tmp_path, *run_args: str) -> tuple[str, list[str], list]:
    """`repair-agent run ...` that must end with the usage error: its stderr, the engine's actions on
    the containers the process owned, and those still there."""
    import time

    since = int(time.time()) - 1
    proc = subprocess.Popen([sys.executable, "-m", "repair_agent", "run", *run_args, "--runs-dir",
                             str(tmp_path / "runs")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2, stderr
    owner = f"org.repair-agent.owner-pid={proc.pid}"
    events = docker_client.events(since=since, until=int(time.time()) + 1, decode=True,
                                  filters={"type": "container", "label": owner})
    return stderr, [e["Action"] for e in events], docker_client.containers.list(all=True, filters={"label": owner})


@pytest.mark.docker
def test_a_run_that_never_starts_removes_the_sandbox_it_began(docker_client, sandbox_image, tmp_path):
    # The sandbox container is started before the chooser is made: a chooser that cannot be
    # loaded ends the command, and the container it began must not outlive it.
    stderr, actions, left = _run_and_watch_the_engine(docker_client, tmp_path, "discount-bug", "--chooser",
                                                      "no_such_module_here:make")
    assert "no_such_module_here" in stderr, stderr
    assert "start" in actions and "destroy" in actions, actions  # it had begun, and it is gone
    assert left == []
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []  # no empty run left


@pytest.mark.docker
def test_a_manifest_refused_after_its_sandbox_began_leaves_no_container(docker_client, sandbox_image, tmp_path):
    # A scenario named on the command line has its container asked for before its manifest is
    # validated; a manifest that then fails validation ends the command with the usage error, its
    # raw text kept, and the container that had begun removed.
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "half-written.scenario.toml").write_text('name = "half-written"\nrepo = "nowhere"\n')  # no goal
    stderr, actions, left = _run_and_watch_the_engine(docker_client, tmp_path,
                                                      str(scenarios / "half-written.scenario.toml"))
    assert "half-written" in stderr, stderr
    assert "create" in actions and "destroy" in actions, actions
    assert left == []
    kept = [p.name for p in (tmp_path / "runs").iterdir()]
    assert len(kept) == 1 and "invalid-manifest" in kept[0], kept  # only the refused manifest's record
    assert "nowhere" in (tmp_path / "runs" / kept[0] / "journal.jsonl").read_text()
