#!/usr/bin/env python3
"""Check scenarios' held-out files against their buggy and fixed trees (locally, no Docker).

    scripts/check_heldout.py                      # every scenario that has a heldout file
    scripts/check_heldout.py textkit-csv-empty-line stockroom-pick-entire-stock
    scripts/check_heldout.py --scenarios-dir sandbox_repos/real   # the real-project corpus

A held-out file is useful only if the buggy tree fails at least one case and the tree with the
reference fix passes every case; the exit status is 1 when either does not hold. For a
scenario built from a pristine repository by a bug patch, the pristine repository is judged
too (shown, not counted: it should pass unless it carries another bug). A scenario with an
`[environment]` is probed in its environment image (Docker, no network). Failing cases
are printed with what came back and what was expected, as `python -m verifier.heldout FILE
TREE` prints them. The probe runs the tree's code in a plain local subprocess: use it on the
corpus's own trees, not on untrusted code.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repair_agent.scenarios.scenario import (IGNORED_PARTS, ManifestError, Scenario, apply_patch_to_tree,  # noqa: E402
                                             select)
from verifier.heldout import PROBE_SOURCE, HeldoutResult, HeldoutSpec, run_probe_local  # noqa: E402


def _failures(label: str, result: HeldoutResult) -> list[str]:
    lines = [f"    {label}: {result.problem}"] if result.problem else []
    return lines + [f"    {label} FAIL {c.name}: got {json.dumps(c.got)} expected {json.dumps(c.expected)}"
                    for c in result.cases if not c.ok]


class DockerProbe:
    """The probe in the scenario's environment image (its packages, its editable install), in a
    hardened container with no network, as the verifier's checks run it; one container per tree."""

    def __init__(self) -> None:
        import docker

        self.client = docker.from_env()
        self.guard = Path(tempfile.mkdtemp(prefix="heldout-probe-"))
        shutil.copyfile(PROBE_SOURCE, self.guard / "ra_probe.py")
        self.guard.chmod(0o755)

    def __call__(self, scenario: Scenario, spec: HeldoutSpec, tree: Path) -> HeldoutResult:
        from docker.types import Mount

        from repair_agent.sandbox.environment import scenario_image
        from verifier.heldout import judge_heldout, parse_probe_output
        from verifier.isolation import HardenedContainer
        from verifier.runner import container_user

        image = scenario_image(self.client, scenario, log=lambda m: print(m, file=sys.stderr))
        mounts = [Mount("/workspace", str(tree), type="bind", read_only=True),
                  Mount("/verifier/guard", str(self.guard), type="bind", read_only=True)]
        box = HardenedContainer(self.client, image, mounts=mounts, user=container_user(),
                                labels={"org.repair-agent.role": "heldout-check"})
        try:
            res = box.exec(["python3", "-I", "/verifier/guard/ra_probe.py"], timeout_s=60,
                           env={"RA_PROBE": json.dumps(spec.request("/workspace")), "HOME": "/tmp"})
        finally:
            box.close()
        data, problem = parse_probe_output(res.stdout.text)
        return judge_heldout(spec, data, problem if not res.timed_out else "the held-out probe timed out")


_docker_probe: DockerProbe | None = None


def probe(scenario: Scenario, spec: HeldoutSpec, tree: Path) -> HeldoutResult:
    """Locally for a scenario without an environment; in its environment image (Docker) otherwise:
    the host lacks the packages such a project imports."""
    global _docker_probe
    if scenario.environment is None:
        return run_probe_local(spec, tree)
    if _docker_probe is None:
        _docker_probe = DockerProbe()
    # The container's non-root user reads the tree: the copy must be readable by everyone.
    for p in [tree, *tree.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | (0o555 if p.is_dir() else 0o444))
    return _docker_probe(scenario, spec, tree)


def check(scenario: Scenario, verbose: bool) -> bool:
    spec = HeldoutSpec.load(scenario.heldout)
    buggy = probe(scenario, spec, scenario.repo)
    line = f"{scenario.name}: {len(spec.case)} cases; buggy {buggy.passed}/{buggy.total}"
    details = _failures("buggy", buggy) if verbose else []
    ok = not buggy.ok
    if buggy.ok:
        details.append("    the buggy tree passes every case: the file does not catch the bug")
    if scenario.reference_fix is None:
        print(f"{line}; no reference fix to judge  BAD" + "".join(f"\n{d}" for d in details))
        return False
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        fixed_tree = Path(tmp) / scenario.repo.name
        shutil.copytree(scenario.repo, fixed_tree, ignore=shutil.ignore_patterns(*IGNORED_PARTS))
        try:
            apply_patch_to_tree(fixed_tree, scenario.reference_fix)
        except ValueError as exc:
            print(f"{line}  BAD\n    {exc}" + "".join(f"\n{d}" for d in details))
            return False
        fixed = probe(scenario, spec, fixed_tree)
        line += f"; fixed {fixed.passed}/{fixed.total}"
        details += _failures("fixed", fixed)
        ok = ok and fixed.ok
        if scenario.bug_patch is not None and scenario.source_repo is not None:
            # Informational, not in the exit status: a pristine repository may carry another
            # scenario's bug (discount_shop keeps its percentage bug).
            pristine = probe(scenario, spec, scenario.source_repo)
            line += f"; pristine {pristine.passed}/{pristine.total}"
            details += _failures("pristine", pristine)
    print(f"{line}  {'OK' if ok else 'BAD'}" + "".join(f"\n{d}" for d in details))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="scenario names or manifest paths (default: all with a heldout file)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list the cases the buggy tree fails")
    parser.add_argument("--scenarios-dir", action="append", default=[], type=Path,
                        help="also this directory of manifests (e.g. sandbox_repos/real); with it and no "
                        "names, only its scenarios are checked")
    args = parser.parse_args(argv)
    try:
        scenarios = select(args.names, args.scenarios_dir, log=lambda m: print(m, file=sys.stderr))
    except ManifestError as exc:
        print(exc, file=sys.stderr)
        return 2
    missing = [s.name for s in scenarios if s.heldout is None]
    if missing:
        print(f"no heldout file declared: {', '.join(missing)}", file=sys.stderr)
        return 2
    results = [check(s, args.verbose) for s in scenarios]
    print(f"{sum(results)}/{len(results)} held-out files catch their bug and pass their fix")
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
