"""Fault injection with real containers. Every fault ends with its documented
exit, a report, no lost journal line (the hash chain verifies, the lines are counted) and no
container of the run left (`repair-agent cleanup --run RUN` afterwards removes none)."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import fix_diff, runs_dir_with_cache, skip_unless_present
from repair_agent.loop.state import StepProgress
from repair_agent.choosers import BaselineChooser
from repair_agent.loop.journal import read_journal, verify_chain
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason
from verifier import AcceptanceSpec, Verifier
from verifier.isolation import LABEL, OWNER_LABEL

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
RUN_LABEL = "org.repair-agent.run"


@pytest.fixture(scope="module")
def shared_runs(tmp_path_factory, baseline_cache):
    """One runs dir for the in-process faults, with the session's cache of pristine suites."""
    return runs_dir_with_cache(tmp_path_factory.mktemp("fault-runs") / "runs", baseline_cache)


def cli(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(TESTS), **(env or {})})


def assert_no_container_left(client, run_id: str) -> None:
    left = client.containers.list(all=True, filters={"label": [LABEL, f"{RUN_LABEL}={run_id}"]}, ignore_removed=True)
    assert left == [], [c.name for c in left]
    out = cli("cleanup", "--run", run_id)
    assert out.returncode == 0 and out.stdout.startswith("removed 0 container"), out.stdout + out.stderr


def assert_journal_whole(run_dir: Path, steps: int, stopped: bool = True, started: bool = True) -> list[dict]:
    """Every line complete and chained; setup + start + one line per step (+ stop). The returned
    records start at the start line, so records[k] is step k."""
    lines = (run_dir / "journal.jsonl").read_text().splitlines()
    records = list(read_journal(run_dir / "journal.jsonl"))
    assert len(lines) == len(records) == 2 * int(started) + steps + int(stopped), [r.get("event") for r in records]
    assert verify_chain(records) == []
    if started:
        assert [r["event"] for r in records[:2]] == ["setup", "start"]
        records = records[1:]
    else:
        assert all(r["event"] not in ("setup", "start") for r in records)
    assert [r["step"] for r in records if r["event"] == "step"] == list(range(1, steps + 1))
    return records


def report_of(rec) -> dict:
    return json.loads((Path(rec.report_dir or rec.run_dir) / "report.json").read_text())


class FaultAtStep:
    """The discount-bug baseline, which at step k first does something to its own sandbox."""

    name = "fault-at-step"

    def __init__(self, k: int, fault):
        self.k, self.fault, self.inner = k, fault, BaselineChooser(resolve("discount-bug").baseline)

    def choose(self, view):
        if view.step == self.k:
            self.fault()
        return self.inner.choose(view)


def own_sandbox(client):
    """This test process's sandbox container, found by the run's labels."""
    found = client.containers.list(filters={"label": [LABEL, "org.repair-agent.role=sandbox",
                                                      f"{OWNER_LABEL}={os.getpid()}"]}, ignore_removed=True)
    assert len(found) == 1, found
    return found[0]


# -- the sandbox container killed or paused mid-step ----------------------------------------------
@pytest.mark.docker
@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_sandbox_container_killed_or_paused_mid_step(docker_client, sandbox_image, shared_runs, fault):
    chooser = FaultAtStep(3, lambda: getattr(own_sandbox(docker_client), fault)())
    rec = execute_run(resolve("discount-bug"), chooser, runs_dir=shared_runs, client=docker_client)
    assert rec.status is StopReason.DEPENDENCY_FAILURE and rec.exit_code == 17, rec.detail
    assert rec.detail.startswith("sandbox or engine failure")
    assert report_of(rec)["status"] == "dependency_failure"
    records = assert_journal_whole(Path(rec.run_dir), steps=3)
    assert records[-1]["extra"]["raw"]  # the engine's own words are kept
    assert_no_container_left(docker_client, rec.run_id)


# -- the chooser raises, hangs, or answers after the deadline -------------------------------------
class Raises:
    name = "raises"

    def choose(self, view):
        raise RuntimeError("the plug-in broke")


class Hangs:
    name = "hangs"

    def __init__(self):
        self.release = threading.Event()

    def choose(self, view):
        self.release.wait(120)
        return {"tool": "search", "query": "x"}


class AnswersLate:
    """Answers step 2 with a patch, but only after the run's deadline has passed."""

    name = "late"

    def __init__(self, delay_s: float):
        self.delay_s, self.late = delay_s, None

    def choose(self, view):
        if view.step == 1:
            return {"tool": "search", "query": "apply_discount"}
        self.late = threading.current_thread()  # the thread that carries the late answer back
        time.sleep(self.delay_s)  # the model's own latency, not a wait for an event
        return {"tool": "apply_patch", "diff": fix_diff()}


@pytest.mark.docker
def test_a_chooser_that_raises_is_a_chooser_error(docker_client, sandbox_image, shared_runs):
    rec = execute_run(resolve("discount-bug"), Raises(), runs_dir=shared_runs, client=docker_client)
    assert rec.status is StopReason.CHOOSER_ERROR and "RuntimeError: the plug-in broke" in rec.detail
    records = assert_journal_whole(Path(rec.run_dir), steps=1)
    assert "the plug-in broke" in records[1]["proposal"]  # the raw error is the step's proposal
    assert "the plug-in broke" in records[-1]["extra"]["traceback"]
    assert report_of(rec)["exit_code"] == 19
    assert_no_container_left(docker_client, rec.run_id)


@pytest.mark.docker
def test_a_chooser_that_hangs_ends_at_the_deadline(docker_client, sandbox_image, shared_runs):
    chooser = Hangs()
    try:
        started = time.monotonic()
        rec = execute_run(resolve("discount-bug"), chooser, runs_dir=shared_runs, client=docker_client,
                          deadline_s=6)
        assert time.monotonic() - started < 60
    finally:
        chooser.release.set()
    assert rec.status is StopReason.DEADLINE and rec.exit_code == 12, rec.detail
    assert "did not answer" in rec.detail and report_of(rec)["status"] == "deadline"
    assert_journal_whole(Path(rec.run_dir), steps=1)
    assert_no_container_left(docker_client, rec.run_id)


@pytest.mark.docker
def test_an_answer_after_the_deadline_is_refused_and_changes_nothing(docker_client, sandbox_image, shared_runs):
    chooser = AnswersLate(delay_s=12)
    rec = execute_run(resolve("discount-bug"), chooser, runs_dir=shared_runs, client=docker_client, deadline_s=8)
    assert rec.status is StopReason.DEADLINE and rec.exit_code == 12, rec.detail
    run_dir = Path(rec.run_dir)
    before = (run_dir / "journal.jsonl").read_text()
    # The late patch arrives ... and goes nowhere: once the thread that carried it has ended,
    # nothing of it can still reach the journal.
    assert chooser.late is not None
    chooser.late.join(30)
    assert not chooser.late.is_alive()
    assert (run_dir / "journal.jsonl").read_text() == before
    assert_journal_whole(run_dir, steps=2)
    assert (run_dir / "candidate.diff").read_text() == "" and rec.u_trajectory[-1] == 3
    assert "discount / 100" not in (run_dir / "workspace/src/discount_shop/pricing.py").read_text()
    assert_no_container_left(docker_client, rec.run_id)


# -- the Docker daemon's socket becomes unreachable mid-run ----------------------------------------
class CuttableDockerProxy:
    """A unix socket forwarding to the real engine until `cut_file` exists; then every connection
    is closed and no new one is accepted, as if the daemon had gone away."""

    def __init__(self, path: Path, cut_file: Path, upstream: str = "/var/run/docker.sock"):
        self.path, self.cut_file, self.upstream = path, cut_file, upstream
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(64)
        self.server.settimeout(0.2)
        self.stopped = threading.Event()
        self.requests = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def cut(self) -> bool:
        return self.cut_file.exists()

    def _accept(self) -> None:
        while not self.stopped.is_set() and not self.cut:
            try:
                client, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.requests += 1
            threading.Thread(target=self._pump, args=(client,), daemon=True).start()
        self.server.close()

    def _pump(self, client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.upstream)
            while not self.cut and not self.stopped.is_set():
                ready, _, _ = select.select([client, upstream], [], [], 0.1)
                for src in ready:
                    data = src.recv(65536)
                    if not data or self.cut:
                        return
                    (upstream if src is client else client).sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(2)


@pytest.mark.docker
def test_the_engine_socket_going_away_mid_run(docker_client, sandbox_image, shared_runs, tmp_path):
    cut_file = tmp_path / "cut"
    proxy = CuttableDockerProxy(tmp_path / "docker.sock", cut_file)
    try:
        out = cli("run", "discount-bug", "--runs-dir", str(shared_runs), "--chooser",
                  "fault_choosers:cut_engine_at_step_3",
                  env={"DOCKER_HOST": f"unix://{tmp_path}/docker.sock", "RA_FAULT_CUT_FILE": str(cut_file)})
    finally:
        proxy.stop()
    assert out.returncode == 17, out.stdout + out.stderr
    assert "dependency_failure" in out.stdout and proxy.requests > 5 and cut_file.exists()
    run_dir = Path(next(l for l in out.stdout.splitlines() if l.startswith("report: ")).split()[1]).parent
    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "dependency_failure" and report["steps_used"] == 3
    records = assert_journal_whole(run_dir, steps=3)
    assert records[-1]["extra"]["raw"]
    # The engine was unreachable, so the run could not remove its sandbox (nor the verifier's
    # pooled, never-used check containers): it said so, and the next cleanup (the run's process is
    # gone) removes exactly the run's containers; then there is none.
    run_id = run_dir.name
    assert "could not remove this run's sandbox container" in out.stdout
    left = docker_client.containers.list(all=True, filters={"label": [LABEL, f"{RUN_LABEL}={run_id}"]}, ignore_removed=True)
    assert any(c.labels.get("org.repair-agent.role") != "verifier" for c in left)  # the sandbox
    first = cli("cleanup", "--run", run_id)
    assert first.stdout.startswith(f"removed {len(left)} container"), first.stdout + first.stderr
    assert_no_container_left(docker_client, run_id)


# -- the runs directory read-only or full ---------------------------------------------------------
@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:  # .ci/run runs as root (it installs Chromium with apt)
        skip_unless_present("mounting a tmpfs needs root; the read-only/full runs-dir faults need one")
    mounts = []

    def mount(name: str, options: str) -> Path:
        target = tmp_path / name
        target.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], check=True)
        mounts.append(target)
        return target

    yield mount
    for target in mounts:
        subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.mark.docker
def test_a_read_only_runs_dir_stops_at_once_with_the_report_in_the_fallback(docker_client, sandbox_image,
                                                                            small_tmpfs, tmp_path):
    runs = small_tmpfs("ro-runs", "size=2m,ro")
    fallback_tmp = tmp_path / "tmpdir"
    fallback_tmp.mkdir()
    out = cli("run", "discount-bug", "--runs-dir", str(runs), env={"TMPDIR": str(fallback_tmp)})
    assert out.returncode == 17, out.stdout + out.stderr
    assert "cannot be written" in out.stderr and "repair-agent-runs" in out.stderr  # said on stderr
    (run_dir,) = (fallback_tmp / "repair-agent-runs").iterdir()
    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "dependency_failure" and "cannot be written" in report["why"]
    assert report["extra"]["report_dir"] == str(run_dir)
    assert_journal_whole(run_dir, steps=0, started=False)  # nothing ran: the stop says why
    assert list(runs.iterdir()) == []
    assert_no_container_left(docker_client, run_dir.name)


@pytest.mark.docker
def test_a_runs_dir_that_fills_up_mid_run_loses_no_journal_line(docker_client, sandbox_image, shared_runs,
                                                                small_tmpfs, tmp_path, monkeypatch):
    runs = small_tmpfs("full-runs", "size=16m")
    if (shared_runs / ".cache").is_dir():  # the pristine suite's ids, so the run starts quickly
        shutil.copytree(shared_runs / ".cache", runs / ".cache")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR for the fallback directory

    def fill_disk_after_step_2(step: StepProgress) -> None:
        if step.step == 2:
            with open(runs / "filler", "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
                except OSError:
                    pass

    rec = execute_run(resolve("discount-bug"), BaselineChooser(resolve("discount-bug").baseline),
                      runs_dir=runs, client=docker_client, on_step=fill_disk_after_step_2)
    assert rec.status is StopReason.DEPENDENCY_FAILURE and rec.exit_code == 17, rec.detail
    assert rec.storage_error and rec.report_dir.startswith(str(tmp_path / "repair-agent-runs"))
    report = json.loads((Path(rec.report_dir) / "report.json").read_text())
    assert report["status"] == "dependency_failure" and report["extra"]["storage_error"]
    # Steps 1 and 2 were journaled before the disk filled: both lines are whole; nothing torn.
    lines = (Path(rec.run_dir) / "journal.jsonl").read_text().splitlines()
    records = list(read_journal(Path(rec.run_dir) / "journal.jsonl"))
    assert len(lines) == len(records) >= 3 and verify_chain(records) == []
    assert [r["step"] for r in records if r["event"] == "step"][:2] == [1, 2]
    assert_no_container_left(docker_client, rec.run_id)


# -- the controller process SIGKILLed while a verifier container runs -----------------------------
@pytest.mark.docker
def test_controller_sigkilled_while_a_verifier_container_runs(docker_client, sandbox_image, shared_runs):
    execute_run(resolve("discount-bug"), BaselineChooser(resolve("discount-bug").baseline), runs_dir=shared_runs,
                client=docker_client, max_steps=1)  # warms the cache: the only verifier container is a check's
    before = set(p.name for p in shared_runs.iterdir())
    proc = subprocess.Popen([sys.executable, "-m", "repair_agent.cli", "run", "discount-bug", "--runs-dir",
                             str(shared_runs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # The verifier keeps idle check containers ready from the start; wait for one that is
        # running a check (pytest inside it) after the patch step, then kill the controller.
        deadline = time.monotonic() + 180
        verifier = []
        while not verifier and time.monotonic() < deadline and proc.poll() is None:
            # The low-level API: containers.list() inspects each one and fails on one removed meanwhile.
            for c in docker_client.api.containers(filters={"label": [
                    LABEL, "org.repair-agent.role=verifier", f"{OWNER_LABEL}={proc.pid}"]}):
                try:
                    if any("pytest" in " ".join(p) for p in docker_client.api.top(c["Id"], ps_args="-o pid,args")
                           ["Processes"] or []):
                        verifier = [c]
                except Exception:  # removed meanwhile
                    pass
            time.sleep(0.02)
        assert verifier, "no verifier container ran a check"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (run_id,) = set(p.name for p in shared_runs.iterdir()) - before
    run_dir = shared_runs / run_id
    # Every complete line is kept and chains (the target test's step had not been written yet).
    records = assert_journal_whole(run_dir, steps=3, stopped=False)
    assert records[-1]["proposal"]["tool"] == "apply_patch"
    replay = cli("replay", str(run_dir))
    assert replay.returncode == 0 and "hash chain: OK" in replay.stdout, replay.stdout + replay.stderr
    # The dead run's sandbox and verifier containers are leftovers: cleanup removes them, then none.
    assert verifier[0]["Labels"].get(RUN_LABEL) == run_id
    first = cli("cleanup", "--run", run_id)
    removed = int(first.stdout.split()[1])
    assert first.stdout.startswith("removed ") and removed >= 2, first.stdout + first.stderr  # sandbox + checks
    assert_no_container_left(docker_client, run_id)
    # And the run is not lost: resume continues from the journal to the same ending as an
    # uninterrupted run (the journal named the chooser; the workspace is rebuilt from the patch).
    resumed = cli("resume", str(run_dir), "--runs-dir", str(shared_runs))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = json.loads((run_dir / "run.json").read_text())
    assert final["status"] == "awaiting_release_confirmation" and final["sessions"] == 2
    assert cli("replay", str(run_dir)).stdout.rstrip().endswith("hash chain: OK")
    assert_no_container_left(docker_client, run_id)


# -- two runs at once, and the baseline cache ------------------------------------------------------
@pytest.mark.docker
def test_two_runs_of_one_scenario_at_once_in_one_runs_dir(docker_client, sandbox_image, tmp_path):
    runs = tmp_path / "runs"  # an empty cache: both compute and store the baseline at the same time
    procs = [subprocess.Popen([sys.executable, "-m", "repair_agent.cli", "run", "discount-bug", "--runs-dir",
                               str(runs), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=400) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    records = [json.loads(out) for out, _ in results]
    assert records[0]["run_id"] != records[1]["run_id"]
    assert all(r["status"] == "awaiting_release_confirmation" for r in records)
    assert records[0]["diff_sha256"] == records[1]["diff_sha256"]
    (cache,) = (runs / ".cache/baselines").glob("*.json")
    assert json.loads(cache.read_text())["baseline_sha256"]
    for r in records:
        assert_journal_whole(Path(r["run_dir"]), steps=r["steps_used"])
        assert_no_container_left(docker_client, r["run_id"])


REPO = ROOT / "sandbox_repos/discount_shop"
SPEC = AcceptanceSpec(scenario="discount-bug", target_tests=("tests/test_pricing.py::test_ten_percent_discount",))


def _verifier(tmp_path, name):
    return Verifier(SPEC, REPO, tmp_path / name, backend="local", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "valid-but-wrong", "old-format"])
def test_a_damaged_baseline_cache_is_rebuilt_not_trusted(tmp_path, damage):
    first = _verifier(tmp_path, "v1")
    truth = first.prepare()
    (cache,) = (tmp_path / "cache/baselines").glob("*.json")
    text = cache.read_text()
    if damage == "garbage":
        cache.write_bytes(b"\x00\xff not json")
    elif damage == "truncated":
        cache.write_text(text[: len(text) // 2])
    elif damage == "valid-but-wrong":  # a hand edit: a failing test declared passing, valid JSON
        envelope = json.loads(text)
        envelope["baseline"]["pass_to_pass"] = envelope["baseline"]["pass_to_pass"][:-1]
        cache.write_text(json.dumps(envelope))
    else:  # the bare baseline an older version wrote, with no digest
        cache.write_text(json.dumps(json.loads(text)["baseline"]))
    second = _verifier(tmp_path, "v2")
    assert second.prepare() == truth
    assert second.cache_note and "rebuilt" in second.cache_note
    assert (cache.parent / f"{cache.name}.rejected").is_file()
    third = _verifier(tmp_path, "v3")
    assert third.prepare() == truth and third.cache_note is None  # the rebuilt file is trusted again
