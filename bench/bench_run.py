"""The user's wall time: the whole `repair-agent run discount-bug` command (a fresh process, import
to exit, warm image) against the least the same work can cost with the docker CLI alone, and the
controller's own share of a run. Ratios, not seconds: these machines are noisy.

    .venv/bin/python bench/bench_run.py [--repeat 8]

The floor is ONE hardened container driven by the docker CLI: copy the repo in, search, read,
apply the fix, target test + the held-out probe in three environments (as the verifier asks: the
held-out cases and the generated inputs; the second as another uid on a shifted clock, the third
isolated), full suite + the same probes, git diff, remove the container.
Each pair times the command and the floor back to back (alternating which goes first), and the
ratio printed is the median of the per-pair ratios: a pair shares the machine's load of its
moment. Both trees' bytecode caches are written first, as an installed package has them. The
run's own `wall_s` (in-process, from run.json) is printed beside it, to show what the process
costs outside `execute_run` (imports, set-up, teardown). Target: <= 1.3x.

    .venv/bin/python bench/bench_run.py --against REF [--repeat 8]

times the whole command of this tree and of git REF (checked out in a temporary worktree) in
interleaved pairs, and prints the median ratio.

    .venv/bin/python bench/bench_run.py --against REF --corpus sandbox_repos/real [--chooser search]

does the same for every scenario of a corpus (one interleaved pair per scenario and repeat), and
prints the ratio of the two sides' median run times and the median of the per-pair ratios.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REPO = ROOT / "sandbox_repos/discount_shop"
HARDENING = ["--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
             "--pids-limit", "256", "--memory", "1g", "--memory-swap", "1g", "--cpus", "1", "--read-only",
             "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m", "--init", "--user", "10001:10001"]
TARGET = "tests/test_pricing.py::test_ten_percent_discount"
PROBE = ["-v", f"{ROOT}/verifier/probe.py:/verifier/probe.py:ro"]


def sh(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, check=False, **kw)


def probe_cmds(tmp: Path) -> list[list[str]]:
    """The probe as the verifier runs it in a check: the held-out cases and the generated inputs, in
    the check's environment, another uid on a shifted clock, and an isolated interpreter."""
    from verifier.generated import generate_cases, seed_for
    from verifier.heldout import HeldoutSpec

    spec = HeldoutSpec.load(ROOT / "sandbox_repos/discount-bug.heldout.toml")
    request = spec.request("/workspace")
    request["cases"] += [{"name": g.name, "setup": g.setup, "expr": g.expr, "timeout_s": 1.0}
                         for g in generate_cases(spec, seed=seed_for(spec))]
    (tmp / "request.json").write_text(json.dumps(request))
    probe = ["/verifier/probe.py", "/verifier/request.json"]
    return [["python3", *probe], ["--user", "23456:23456", "faketime", "-f", "+9y", "python3", *probe],
            ["--user", "34567:34567", "faketime", "-f", "-3y", "python3", "-I", "-B", *probe]]


def one_container_floor(image: str, fix: str, tmp: Path) -> float:
    probes = probe_cmds(tmp)  # made before the clock starts: the run reads its spec while importing
    start = time.perf_counter()
    ws = tmp / "ws1"
    shutil.copytree(REPO, ws)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"]):
        sh(*cmd, cwd=ws)
    sh("chown", "-R", "10001:10001", str(ws))
    (ws / ".git/fix.diff").write_text(fix)
    box = sh("docker", "run", "-d", *HARDENING, "-v", f"{ws}:/workspace", "-w", "/workspace", *PROBE,
             "-v", f"{tmp}/request.json:/verifier/request.json:ro", image, "sleep", "infinity").stdout.decode().strip()
    pytest = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=/tmp/junit.xml"]
    for cmd in (["git", "grep", "-n", "-F", "-e", "price * (1 - discount)"],
                ["sed", "-n", "34,40p", "src/discount_shop/pricing.py"],
                ["git", "apply", ".git/fix.diff"], [*pytest, TARGET], *probes, pytest, *probes,
                ["sh", "-c", "git add -A && git diff --cached HEAD"]):
        user, cmd = (cmd[:2], cmd[2:]) if cmd[0] == "--user" else ([], cmd)
        sh("docker", "exec", *user, box, "timeout", "120s", *cmd)
    sh("docker", "rm", "-f", box)
    return time.perf_counter() - start


def command() -> list[str]:
    """The console script a user types, from this interpreter's environment (python -m otherwise)."""
    script = Path(sys.executable).parent / "repair-agent"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "repair_agent"]


def compile_tree(tree: Path) -> None:
    """The tree's bytecode cache, written once, as an installed package has it (pip compiles what it
    installs): a shell with PYTHONDONTWRITEBYTECODE set would otherwise compile the project's modules
    again in every timed process (0.2-0.3 s of CPU)."""
    sh(sys.executable, "-m", "compileall", "-q", "repair_agent", "verifier", cwd=tree)


def whole_process(tree: Path, runs: Path, argv: list[str] | None = None,
                  run_args: tuple[str, ...] = ("discount-bug",)) -> tuple[float, dict]:
    """`repair-agent run discount-bug` as a user waits for it: a fresh process, import to exit.
    Another scenario's run (`run_args`) may end in a hand-off: any ending that wrote its JSON counts."""
    argv = argv or command()
    start = time.perf_counter()
    proc = sh(*argv, "run", *run_args, "--runs-dir", str(runs), "--json", cwd=tree)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 and (run_args == ("discount-bug",) or not proc.stdout.strip().startswith(b"{")):
        raise SystemExit(f"run in {tree} failed ({proc.returncode}): {proc.stdout.decode()[-800:]}"
                         f"{proc.stderr.decode()[-800:]}")
    return elapsed, json.loads(proc.stdout)


def against(ref: str, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "other"
        sh("git", "worktree", "add", "--detach", str(other), ref, cwd=ROOT)
        # `python -m` puts the working directory first on the path: each tree runs its own package.
        here = there = [sys.executable, "-m", "repair_agent"]
        try:
            runs_here, runs_there = Path(tmp) / "runs-here", Path(tmp) / "runs-there"
            compile_tree(ROOT), compile_tree(other)
            whole_process(ROOT, runs_here, here), whole_process(other, runs_there, there)  # warm both caches
            pairs = []
            for i in range(repeat):
                sides = [(ROOT, runs_here, here), (other, runs_there, there)]
                if i % 2:
                    sides.reverse()
                times = {tree: whole_process(tree, runs, argv)[0] for tree, runs, argv in sides}
                pairs.append((times[ROOT], times[other]))
        finally:
            sh("git", "worktree", "remove", "--force", str(other), cwd=ROOT)
    ratio = statistics.median(a / b for a, b in pairs)
    print(f"whole `repair-agent run discount-bug` process, {repeat} interleaved pairs (this tree / {ref}):")
    print("  " + "  ".join(f"{a:.2f}/{b:.2f}" for a, b in pairs))
    print(f"  median ratio {ratio:.3f}x")


def against_corpus(ref: str, corpus: Path, chooser: str, repeat: int) -> None:
    names = sorted(p.name.removesuffix(".scenario.toml") for p in corpus.glob("*.scenario.toml"))
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "other"
        sh("git", "worktree", "add", "--detach", str(other), ref, cwd=ROOT)
        argv = [sys.executable, "-m", "repair_agent"]
        try:
            compile_tree(ROOT), compile_tree(other)
            for tree in (ROOT, other):  # warm: each tree's image built and the corpus's sources fetched
                whole_process(tree, Path(tmp) / "warm", argv, (names[0], "--scenarios-dir", str(corpus)))
            rows = []
            for i in range(repeat):
                for j, name in enumerate(names):
                    run_args = (name, "--scenarios-dir", str(corpus), "--chooser", chooser)
                    sides = [ROOT, other] if (i + j) % 2 == 0 else [other, ROOT]
                    times = {}
                    for tree in sides:
                        runs = Path(tmp) / f"runs-{'here' if tree == ROOT else 'there'}"
                        times[tree], record = whole_process(tree, runs, argv, run_args)
                        times[tree, "status"] = record.get("status")
                    rows.append((name, times[ROOT], times[other], times[ROOT, "status"], times[other, "status"]))
                    print(f"  {name:45s} {times[ROOT]:7.2f} {times[other]:7.2f}  "
                          f"{times[ROOT, 'status']} / {times[other, 'status']}", flush=True)
        finally:
            sh("git", "worktree", "remove", "--force", str(other), cwd=ROOT)
    here = statistics.median(r[1] for r in rows)
    there = statistics.median(r[2] for r in rows)
    print(f"{corpus} with --chooser {chooser}, {len(rows)} interleaved pairs (this tree / {ref}):")
    print(f"  median run {here:.2f} s / {there:.2f} s = {here / there:.3f}x; "
          f"median per-pair ratio {statistics.median(r[1] / r[2] for r in rows):.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--against", metavar="REF", help="compare the whole process with git REF instead")
    parser.add_argument("--corpus", type=Path, help="with --against: every scenario of this directory")
    parser.add_argument("--chooser", default="search", help="with --corpus: the chooser to run")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="no warm-up run first (a smoke run: the first pair is cold)")
    args = parser.parse_args()
    if args.against and args.corpus:
        return against_corpus(args.against, args.corpus.resolve(), args.chooser, args.repeat)
    if args.against:
        return against(args.against, args.repeat)
    import docker

    from repair_agent.sandbox.image import ensure_sandbox_image

    image = ensure_sandbox_image(docker.from_env())
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        compile_tree(ROOT)
        fix = None  # the floor applies the fix the command's run made
        if not args.no_warm_up:
            _, warm = whole_process(ROOT, runs)  # fills the baseline cache, warms the page cache
            fix = (Path(warm["run_dir"]) / "candidate.diff").read_text()
        pairs, inside, controller, journal = [], [], [], []
        for i in range(args.repeat):
            work = Path(tmp) / f"floor{i}"
            work.mkdir()
            if i % 2:  # a fix is known by now: the first pair runs the command first
                floor = one_container_floor(image, fix, work)
                ours, rec = whole_process(ROOT, runs)
            else:
                ours, rec = whole_process(ROOT, runs)
                fix = fix or (Path(rec["run_dir"]) / "candidate.diff").read_text()
                floor = one_container_floor(image, fix, work)
            assert rec["status"] == "awaiting_release_confirmation", rec["detail"]
            pairs.append((ours, floor))
            inside.append(rec["wall_s"])
            t = rec["timing"]
            controller.append((t["loop_s"] - t["chooser_s"] - t["tools_s"] - t["journal_s"]) / ours)
            journal.append(t["journal_s"] / ours)
    ratio = statistics.median(a / b for a, b in pairs)
    in_ratio = statistics.median(w / b for w, (_, b) in zip(inside, pairs))
    print(f"{args.repeat} interleaved pairs (baseline chooser, docker sandbox, warm image and baseline cache)")
    print("  per pair (whole command / its in-process wall_s / one-container floor, s):")
    print("    " + "  ".join(f"{a:.2f}/{w:.2f}/{b:.2f}" for (a, b), w in zip(pairs, inside)))
    print(f"  median whole command {statistics.median(a for a, _ in pairs):6.3f}s   "
          f"floor {statistics.median(b for _, b in pairs):6.3f}s   "
          f"outside execute_run {statistics.median(a - w for (a, _), w in zip(pairs, inside)):5.3f}s")
    print(f"  in-process wall_s / floor      {in_ratio:5.2f}x")
    print(f"  whole-process ratio (median)   {ratio:5.2f}x   (target: <= 1.30x)")
    print(f"  controller's own share of the command  {100 * statistics.median(controller):5.2f}%  (target: < 2%)")
    print(f"  journal (fsync) share of the command   {100 * statistics.median(journal):5.2f}%")


if __name__ == "__main__":
    main()
