#!/usr/bin/env python3
"""Check the generated held-out inputs (verifier/generated.py) of every scenario with a reference fix.

    scripts/check_generated.py                                  # every scenario with a heldout file
    scripts/check_generated.py discount-bug textkit-csv-empty-line
    scripts/check_generated.py --scenarios-dir sandbox_repos/real  # one corpus
    scripts/check_generated.py --skip-docker --json out.json

Per scenario: the cases are generated from the held-out file (seed_for(spec)); the probe runs them
three times on the reference tree (the buggy tree with the reference fix) and once on the buggy
tree, and the hand-written cases once on the buggy tree. The first two reference runs, each case
limited to a quarter of a candidate's time, make the expectations (reference_rows: nondeterministic,
timed-out and RecursionError/MemoryError cases are skipped); the third, an independent run of the
same tree probed as a candidate is, must agree with them on every case kept, or the exit status is
1: a verifier using these expectations would otherwise reject a correct fix.
Shown: how many cases were generated and skipped, whether the buggy tree is caught by the
generated comparison (>= 1 disagreement) and by the hand-written cases, and the probe's time.

A scenario with an `[environment]` is probed in its environment image (Docker, no network), one
hardened container per tree, as scripts/check_heldout.py does; --skip-docker leaves those out.
Elsewhere the probe runs the tree's code in a plain local subprocess: use it on the corpus's own
trees, not on untrusted code.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repair_agent.scenarios.scenario import (IGNORED_PARTS, ManifestError, Scenario, apply_patch_to_tree,  # noqa: E402
                                             select)
from verifier.generated import (CASE_TIMEOUT_S, REFERENCE_CASE_TIMEOUT_S, GeneratedCase, compare,  # noqa: E402
                                generate_cases, probe_local, reference_rows, request, seed_for)
from verifier.heldout import PROBE_SOURCE, HeldoutSpec, judge_heldout, parse_probe_output  # noqa: E402

Rows = tuple[list[dict] | None, str | None]


class LocalRunner:
    def __init__(self, tree: Path) -> None:
        self.tree = tree

    def run(self, spec: HeldoutSpec, cases: list[GeneratedCase], case_timeout_s: float) -> Rows:
        return probe_local(spec, cases, self.tree, case_timeout_s=case_timeout_s)

    def close(self) -> None:
        pass


class DockerRunner:
    """One hardened container (no network, the scenario's environment image) per tree; each probe
    run is a fresh interpreter in it. The request goes in as a file: 300 cases can exceed the
    128 KiB one environment variable may hold."""

    guard: Path | None = None

    def __init__(self, scenario: Scenario, tree: Path) -> None:
        import docker
        from docker.types import Mount

        from repair_agent.sandbox.environment import scenario_image
        from verifier.isolation import HardenedContainer, container_user

        if DockerRunner.guard is None:
            DockerRunner.guard = Path(tempfile.mkdtemp(prefix="generated-probe-"))
            shutil.copyfile(PROBE_SOURCE, DockerRunner.guard / "ra_probe.py")
            DockerRunner.guard.chmod(0o755)
        client = docker.from_env()
        image = scenario_image(client, scenario, log=lambda m: print(m, file=sys.stderr))
        for p in [tree, *tree.rglob("*")]:  # the container's non-root user reads the tree
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | (0o555 if p.is_dir() else 0o444))
        mounts = [Mount("/workspace", str(tree), type="bind", read_only=True),
                  Mount("/verifier/guard", str(DockerRunner.guard), type="bind", read_only=True)]
        self.box = HardenedContainer(client, image, mounts=mounts, user=container_user(),
                                     labels={"org.repair-agent.role": "generated-check"})

    def run(self, spec: HeldoutSpec, cases: list[GeneratedCase], case_timeout_s: float) -> Rows:
        assert DockerRunner.guard is not None
        name = f"request-{uuid.uuid4().hex[:12]}.json"
        path = DockerRunner.guard / name
        path.write_text(json.dumps(request(spec, cases, "/workspace", case_timeout_s=case_timeout_s)))
        path.chmod(0o644)
        try:
            res = self.box.exec(["sh", "-c", f"exec python3 -I /verifier/guard/ra_probe.py < /verifier/guard/{name}"],
                                timeout_s=30 + case_timeout_s * len(cases), env={"HOME": "/tmp"},
                                output_cap=64 << 20)
        finally:
            path.unlink()
        if res.timed_out:
            return None, "the probe timed out"
        data, problem = parse_probe_output(res.stdout.text)
        return (data["results"], None) if data is not None else (None, problem)

    def close(self) -> None:
        self.box.close()


def runner_for(scenario: Scenario, tree: Path) -> LocalRunner | DockerRunner:
    return LocalRunner(tree) if scenario.environment is None else DockerRunner(scenario, tree)


def corpus_of(scenario: Scenario) -> str:
    parent = scenario.manifest_path.parent.name
    return "builtin" if parent == "sandbox_repos" else parent


def check(scenario: Scenario, limit: int, case_timeout_s: float) -> dict[str, Any]:
    spec = HeldoutSpec.load(scenario.heldout)  # type: ignore[arg-type]
    cases = generate_cases(spec, seed=seed_for(spec), limit=limit)
    hand = [GeneratedCase(name=c.name, setup=c.setup, expr=c.expr, source=c.name) for c in spec.case]
    record: dict[str, Any] = {"name": scenario.name, "corpus": corpus_of(scenario), "generated": len(cases),
                              "docker": scenario.environment is not None, "ok": False,
                              "request_bytes": len(json.dumps(request(spec, cases, "/workspace")))}
    if len(cases) < 50:
        per = defaultdict(int, {c.name: 0 for c in spec.case})
        for g in cases:
            per[g.source] += 1
        record["per_case"] = dict(per)
    with tempfile.TemporaryDirectory(prefix="generated-") as tmp:
        fixed_tree = Path(tmp) / scenario.repo.name
        shutil.copytree(scenario.repo, fixed_tree, ignore=shutil.ignore_patterns(*IGNORED_PARTS))
        try:
            apply_patch_to_tree(fixed_tree, scenario.reference_fix)  # type: ignore[arg-type]
        except ValueError as exc:
            record["error"] = str(exc)
            return record
        ref = runner_for(scenario, fixed_tree)
        try:
            started = time.monotonic()
            a, problem_a = ref.run(spec, cases, case_timeout_s * REFERENCE_CASE_TIMEOUT_S / CASE_TIMEOUT_S)
            record["probe_s"] = round(time.monotonic() - started, 3)
            b, problem_b = ref.run(spec, cases, case_timeout_s * REFERENCE_CASE_TIMEOUT_S / CASE_TIMEOUT_S)
            c, problem_c = ref.run(spec, cases, case_timeout_s)  # as a candidate is probed
        finally:
            ref.close()
    if a is None or b is None:
        record["error"] = f"the reference probe failed: {problem_a or problem_b}"
        return record
    reference = reference_rows(a, b)
    self_check = compare(reference, c, cases, problem_c)
    buggy_runner = runner_for(scenario, scenario.repo)
    try:
        buggy_rows, buggy_problem = buggy_runner.run(spec, cases, case_timeout_s)
        hand_rows, hand_problem = buggy_runner.run(spec, hand, 0)
    finally:
        buggy_runner.close()
    buggy = compare(reference, buggy_rows, cases, buggy_problem)
    hand_result = judge_heldout(spec, {"results": hand_rows} if hand_rows is not None else None, hand_problem)
    record.update(
        skipped=self_check.skipped, ok=self_check.ok, self_check=self_check.summary,
        buggy_disagree=buggy.total - buggy.skipped - buggy.agreed, buggy_caught=not buggy.ok,
        buggy_summary=buggy.summary, hand_failed=hand_result.total - hand_result.passed,
        hand_total=hand_result.total, hand_caught=not hand_result.ok)
    return record


def line(r: dict[str, Any]) -> str:
    head = f"{r['name']} [{r['corpus']}{', docker' if r['docker'] else ''}]: {r['generated']} generated"
    if "error" in r:
        return f"{head}  BAD\n    {r['error']}"
    judged = r["generated"] - r["skipped"]
    text = (f"{head}, {r['skipped']} skipped; reference self-check {'ok' if r['ok'] else 'FAILS'}; buggy caught: "
            f"generated {'yes' if r['buggy_caught'] else 'NO'} ({r['buggy_disagree']}/{judged} disagree), "
            f"hand-written {'yes' if r['hand_caught'] else 'NO'} ({r['hand_failed']}/{r['hand_total']} fail); "
            f"probe {r['probe_s']:.2f}s  {'OK' if r['ok'] else 'BAD'}")
    if not r["ok"]:
        text += f"\n    {r['self_check']}"
    if r["generated"] < 50:
        text += f"\n    fewer than 50 generated; per held-out case: {r.get('per_case')}"
    return text


def summary(records: list[dict[str, Any]]) -> list[str]:
    lines = []
    by_corpus: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_corpus[r["corpus"]].append(r)
    for corpus, rs in sorted(by_corpus.items()):
        done = [r for r in rs if "error" not in r]
        times = [r["probe_s"] for r in done]
        lines.append(
            f"{corpus}: {len(rs)} scenarios; buggy caught by generated {sum(r['buggy_caught'] for r in done)}, "
            f"by hand-written {sum(r['hand_caught'] for r in done)}, by generated only "
            f"{sum(r['buggy_caught'] and not r['hand_caught'] for r in done)}, by hand-written only "
            f"{sum(r['hand_caught'] and not r['buggy_caught'] for r in done)}; generated min "
            f"{min((r['generated'] for r in rs), default=0)}, "
            f"skipped max {max((r['skipped'] for r in done), default=0)}; "
            f"median probe {statistics.median(times) if times else float('nan'):.2f}s; "
            f"self-check failures {sum(not r['ok'] for r in rs)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="scenario names or manifest paths (default: all with a heldout file)")
    parser.add_argument("--scenarios-dir", action="append", default=[], type=Path,
                        help="also this directory of manifests (e.g. sandbox_repos/real); with it and no "
                        "names, only its scenarios are checked")
    parser.add_argument("--limit", type=int, default=300, help="generated cases per scenario (default 300)")
    parser.add_argument("--case-timeout", type=float, default=CASE_TIMEOUT_S,
                        help="a candidate's seconds per generated case (default 1; the reference gets a quarter)")
    parser.add_argument("--skip-docker", action="store_true", help="leave out scenarios with an [environment]")
    parser.add_argument("--json", type=Path, help="also write every scenario's record here")
    args = parser.parse_args(argv)
    try:
        scenarios = select(args.names, args.scenarios_dir, log=lambda m: print(m, file=sys.stderr))
    except ManifestError as exc:
        print(exc, file=sys.stderr)
        return 2
    unusable = [s.name for s in scenarios if s.heldout is None or s.reference_fix is None]
    if unusable:
        print(f"no heldout file or no reference fix: {', '.join(unusable)}", file=sys.stderr)
        return 2
    if args.skip_docker:
        left_out = [s.name for s in scenarios if s.environment is not None]
        scenarios = [s for s in scenarios if s.environment is None]
        if left_out:
            print(f"left out (need Docker): {len(left_out)} scenario(s)")
    records = []
    try:
        for scenario in scenarios:
            record = check(scenario, args.limit, args.case_timeout)
            print(line(record), flush=True)
            records.append(record)
    finally:
        if DockerRunner.guard is not None:
            shutil.rmtree(DockerRunner.guard, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    print("\n".join(summary(records)))
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
