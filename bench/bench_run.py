"""A whole discount-bug run vs. the same container work done with the docker CLI alone, and the
controller's own share of a run. Ratios, not seconds: these machines are noisy.

    .venv/bin/python bench/bench_run.py [--repeat 5]

Two floors, both driving the docker CLI directly:

- three containers ("the same work" as the run's design): one hardened sandbox container with
  the run's four execs (search, read, apply, diff), then two fresh hardened verification
  containers, each running pytest (target test, then the full suite) and the held-out probe on
  a copy of the repository with the fix applied;
- one container (the least anything could cost): the same execs in ONE hardened container —
  copy the repo in, search, read, apply the fix, target test + probe, full suite + probe,
  git diff. This is the floor a run is held to (target: <= 1.3x).

    .venv/bin/python bench/bench_run.py --against REF [--repeat 8]

times the whole `repair-agent run discount-bug` process (import to exit) of this tree and of git
REF (checked out in a temporary worktree) in interleaved pairs, and prints the median ratio.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.choosers import BaselineChooser  # noqa: E402
from repair_agent.run import execute_run  # noqa: E402
from repair_agent.sandbox.image import ensure_sandbox_image  # noqa: E402
from repair_agent.scenario import resolve  # noqa: E402
from verifier.heldout import HeldoutSpec  # noqa: E402

REPO = ROOT / "sandbox_repos/discount_shop"
HARDENING = ["--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
             "--pids-limit", "256", "--memory", "1g", "--memory-swap", "1g", "--cpus", "1", "--read-only",
             "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m", "--init", "--user", "10001:10001"]
TARGET = "tests/test_pricing.py::test_ten_percent_discount"
PROBE = ["-v", f"{ROOT}/verifier/probe.py:/verifier/probe.py:ro"]


def probe_cmd() -> list[str]:
    request = HeldoutSpec.load(ROOT / "sandbox_repos/discount-bug.heldout.toml").request("/workspace")
    import json

    return ["-e", f"RA_PROBE={json.dumps(request)}"], ["python3", "-I", "-S", "/verifier/probe.py"]


def sh(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, check=False, **kw)


def cli_equivalent(image: str, fix: str, tmp: Path) -> float:
    start = time.perf_counter()
    ws = tmp / "ws"
    shutil.copytree(REPO, ws)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"]):
        sh(*cmd, cwd=ws)
    sh("chown", "-R", "10001:10001", str(ws))
    box = sh("docker", "run", "-d", *HARDENING, "-v", f"{ws}:/workspace", "-w", "/workspace", image,
             "sleep", "infinity").stdout.decode().strip()
    (ws / ".git/fix.diff").write_text(fix)
    for cmd in (["git", "grep", "-n", "-F", "-e", "price * (1 - discount)"],
                ["sed", "-n", "34,40p", "src/discount_shop/pricing.py"],
                ["git", "apply", ".git/fix.diff"], ["sh", "-c", "git add -A && git diff --cached HEAD"]):
        sh("docker", "exec", box, "timeout", "30s", *cmd)
    sh("docker", "rm", "-f", box)
    for targets in ([TARGET], []):
        tree, out = tmp / f"tree{len(targets)}", tmp / f"out{len(targets)}"
        shutil.copytree(REPO, tree)
        sh("git", "apply", str(ws / ".git/fix.diff"), cwd=tree)
        out.mkdir()
        out.chmod(0o777)
        c = sh("docker", "run", "-d", *HARDENING, "-v", f"{tree}:/workspace:ro", "-v", f"{out}:/out",
               *PROBE, "-w", "/workspace", image, "sleep", "infinity").stdout.decode().strip()
        sh("docker", "exec", c, "timeout", "120s", "python3", "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--junitxml=/out/junit.xml", *targets)
        env, probe = probe_cmd()
        sh("docker", "exec", *env, c, "timeout", "30s", *probe)
        sh("docker", "rm", "-f", c)
    return time.perf_counter() - start


def one_container_floor(image: str, fix: str, tmp: Path) -> float:
    start = time.perf_counter()
    ws = tmp / "ws1"
    shutil.copytree(REPO, ws)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"]):
        sh(*cmd, cwd=ws)
    sh("chown", "-R", "10001:10001", str(ws))
    (ws / ".git/fix.diff").write_text(fix)
    box = sh("docker", "run", "-d", *HARDENING, "-v", f"{ws}:/workspace", "-w", "/workspace", *PROBE, image,
             "sleep", "infinity").stdout.decode().strip()
    pytest = ["python3", "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=/tmp/junit.xml"]
    env, probe = probe_cmd()
    for cmd in (["git", "grep", "-n", "-F", "-e", "price * (1 - discount)"],
                ["sed", "-n", "34,40p", "src/discount_shop/pricing.py"],
                ["git", "apply", ".git/fix.diff"], [*pytest, TARGET], probe, pytest, probe,
                ["sh", "-c", "git add -A && git diff --cached HEAD"]):
        sh("docker", "exec", "-e", "PYTHONDONTWRITEBYTECODE=1", *env, box, "timeout", "120s", *cmd)
    sh("docker", "rm", "-f", box)
    return time.perf_counter() - start


def whole_process(tree: Path, runs: Path) -> float:
    """`repair-agent run discount-bug` as a user waits for it: a fresh interpreter, import to exit."""
    start = time.perf_counter()
    proc = sh(sys.executable, "-m", "repair_agent", "run", "discount-bug", "--runs-dir", str(runs), cwd=tree)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"run in {tree} failed ({proc.returncode}): {proc.stdout.decode()[-800:]}")
    return elapsed


def against(ref: str, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "other"
        sh("git", "worktree", "add", "--detach", str(other), ref, cwd=ROOT)
        try:
            runs_here, runs_there = Path(tmp) / "runs-here", Path(tmp) / "runs-there"
            whole_process(ROOT, runs_here), whole_process(other, runs_there)  # warm caches on both sides
            pairs = []
            for i in range(repeat):
                first, second = (ROOT, other) if i % 2 == 0 else (other, ROOT)
                times = {first: whole_process(first, runs_here if first == ROOT else runs_there)}
                times[second] = whole_process(second, runs_here if second == ROOT else runs_there)
                pairs.append((times[ROOT], times[other]))
        finally:
            sh("git", "worktree", "remove", "--force", str(other), cwd=ROOT)
    ratio = statistics.median(a / b for a, b in pairs)
    print(f"whole `repair-agent run discount-bug` process, {repeat} interleaved pairs (this tree / {ref}):")
    print("  " + "  ".join(f"{a:.2f}/{b:.2f}" for a, b in pairs))
    print(f"  median ratio {ratio:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="REF", help="compare the whole process with git REF instead")
    args = parser.parse_args()
    if args.against:
        return against(args.against, args.repeat)
    client = docker.from_env()
    image = ensure_sandbox_image(client)
    scenario = resolve("discount-bug")
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        warm = execute_run(scenario, BaselineChooser(scenario.baseline), runs_dir=runs, client=client)  # fills the baseline cache
        fix = (Path(warm.run_dir) / "candidate.diff").read_text()
        ours, cli, one, controller, journal = [], [], [], [], []
        for i in range(args.repeat):
            rec = execute_run(scenario, BaselineChooser(scenario.baseline), runs_dir=runs, client=client)
            assert rec.status.value == "awaiting_release_confirmation", rec.detail
            ours.append(rec.wall_s)
            t = rec.timing
            controller.append((t["loop_s"] - t["chooser_s"] - t["tools_s"] - t["journal_s"]) / rec.wall_s)
            journal.append(t["journal_s"] / rec.wall_s)
            work = Path(tmp) / f"cli{i}"
            work.mkdir()
            cli.append(cli_equivalent(image, fix, work))
            one.append(one_container_floor(image, fix, work))
    o, c, c1 = statistics.median(ours), statistics.median(cli), statistics.median(one)
    # Each ratio is the median of per-pair ratios: a pair shares the machine's load of its moment.
    r3 = statistics.median(a / b for a, b in zip(ours, cli))
    r1 = statistics.median(a / b for a, b in zip(ours, one))
    print(f"median of {args.repeat} runs (baseline chooser, docker sandbox, warm image and baseline cache)")
    print(f"  repair-agent run discount-bug   {o:6.3f}s")
    print(f"  three-container docker-CLI floor {c:6.3f}s")
    print(f"  one-container docker-CLI floor   {c1:6.3f}s")
    print(f"  ratio to the three-container floor {r3:5.2f}x")
    print(f"  ratio to the one-container floor   {r1:5.2f}x   (target: <= 1.30x)")
    print("  per pair (run / 3-container / 1-container, s): "
          + "  ".join(f"{a:.2f}/{b:.2f}/{d:.2f}" for a, b, d in zip(ours, cli, one)))
    print(f"  controller's own share of a run  {100 * statistics.median(controller):5.2f}%  (target: < 2%)")
    print(f"  journal (fsync) share of a run   {100 * statistics.median(journal):5.2f}%")


if __name__ == "__main__":
    main()
