"""Mutant scenarios: many realistic one-to-few-line bugs in real projects, for tuning a chooser.

    .venv/bin/python bench/mutants.py --per-project 12 --seed 0 --out /tmp/mutants
    .venv/bin/python bench/mutants.py --projects iniconfig --per-project 4 --seed 1 --out /tmp/m

For each project of the real and development corpora (their manifests give the pinned source,
the environment, the writable and protected globs and the tests left out) it parses the writable
source files of the pristine tree, enumerates mutation sites inside function bodies, and picks,
deterministically by seed, a mix of kinds weighted like published studies of real one-line bugs
(ManySStuBs4J, PyTraceBugs, BugsInPy: a wrong identifier, a changed operator, a missing statement
or guard, a changed literal ...). About 30% of the kinds need an added line to fix.

A mutant is kept when, applied to the pristine tree, 1 to --max-targets tests fail (all of them
become the target tests, as the corpus check wants no other failing test) within the time limit;
equivalent, uncompilable and import-breaking mutants are dropped. Only the tests that executed a
mutated line on the pristine tree are run (a test that never reaches the line cannot change),
found once per project by tracing the pristine suite.

It writes ordinary scenario manifests (`corpus:mutants` tag) and bugs/*.diff into --out, plus
mutants.json (where each mutant is, for analysis; never shown to a chooser). The goal text is a
short symptom report made from the first failing test's output. This is a tuning distribution:
never quote a result on it as a measure of generalization (its bugs are synthetic, and whoever
tunes on it has seen it).
"""
# mutant_sites.py finds where a bug can go, mutant_runs.py runs a project's tests on the host to
# judge a mutant (with the mutants_trace.py plugin), and this module picks, writes and sums them up.
from __future__ import annotations

import argparse
import json
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .common import manifest_text
from .mutant_runs import Checker, Pristine, Project, corpus_projects, pristine, source_files, symptom
from .mutant_sites import ADDED_LINE, WEIGHTS, Site, SiteFinder, mutate_text, unified


@dataclass
class Mutant:
    name: str
    project: str
    kind: str
    file: str
    first: int
    last: int
    function: str
    note: str
    targets: list[str]
    failure: str
    goal: str
    bug_diff: str
    fix_diff: str
    baseline: dict[str, str] | None
    tests_run: int
    check_s: float


# -- choosing and writing ----------------------------------------------------------------------

def quotas(n: int, available: dict[str, int], rng: random.Random) -> dict[str, int]:
    """n split over the kinds with sites, by weight: the whole parts as they are, the remaining
    slots drawn (seeded) in proportion to the fractions, so that over many projects every kind
    gets its share, the rare ones too, instead of the same rounding everywhere."""
    kinds = [k for k in WEIGHTS if available.get(k)]
    total = sum(WEIGHTS[k] for k in kinds)
    raw = {k: n * WEIGHTS[k] / total for k in kinds}
    out = {k: int(v) for k, v in raw.items()}
    fractions = {k: raw[k] - out[k] for k in kinds if raw[k] > out[k]}
    # Weighted sampling without replacement: the largest u ** (1 / weight) win.
    keyed = sorted(fractions, key=lambda k: -(rng.random() ** (1 / fractions[k])))
    for k in keyed[:n - sum(out.values())]:
        out[k] += 1
    return out


def enumerate_sites(project: Project, files: list[str], pristine: Pristine, seed: int) -> list[Site]:
    sites = []
    for rel in files:
        rng = random.Random(f"{seed}:{project.name}:{rel}")
        try:
            found = SiteFinder(rel, (project.tree / rel).read_text(), rng).find()
        except SyntaxError:
            continue
        cov = pristine.coverage.get(rel, {})
        taken = project.corpus_lines.get(rel, set())
        imported = set(pristine.imported.get(rel, []))
        for s in found:
            lines = set(range(s.first, s.last + 1))
            if taken & lines:
                continue
            tests: dict[str, None] = {}
            for line in lines:
                tests.update(dict.fromkeys(cov.get(line, [])))
            if tests:
                # A line run at import time can change what every test sees: all of them run.
                s.covered_by = list(pristine.passing) if imported & lines else [t for t in pristine.passing if t in tests]
                sites.append(s)
    return sites


def generate(project: Project, per_project: int, seed: int, *, max_targets: int = 3, timeout: float = 60.0,
             log=print) -> tuple[list[Mutant], dict[str, Any]]:
    t0 = time.monotonic()
    files = source_files(project)
    base = pristine(project, files)
    sites = enumerate_sites(project, files, base, seed)
    rng = random.Random(f"{seed}:{project.name}")
    by_kind: dict[str, list[Site]] = {}
    for s in sites:
        by_kind.setdefault(s.kind, []).append(s)
    for k in sorted(by_kind):
        rng.shuffle(by_kind[k])
    want = quotas(per_project, {k: len(v) for k, v in by_kind.items()}, rng)
    checker = Checker(project, base, max_targets, timeout)
    kept: list[Mutant] = []
    dropped: dict[str, int] = {}
    used_lines: set[tuple[str, int]] = set()
    used_functions: dict[str, int] = {}
    attempts = 0
    try:
        # Round robin over the kinds (in weight order) so an early stop still leaves a mix; a
        # kind that runs out of sites leaves its quota to the others.
        order = sorted(want, key=lambda k: -WEIGHTS[k])
        pending = dict(want)
        cursor = {k: 0 for k in by_kind}
        while len(kept) < per_project and attempts < 12 * per_project:
            open_kinds = [k for k in order if pending.get(k, 0) > 0 and cursor[k] < len(by_kind[k])]
            if not open_kinds:
                # A kind ran out of sites that fail well: its slot goes to a kind drawn by weight.
                spare = [k for k in sorted(by_kind) if cursor[k] < len(by_kind[k])]
                if not spare:
                    break
                pick = rng.choices(spare, weights=[WEIGHTS[k] for k in spare])[0]
                pending[pick] = pending.get(pick, 0) + 1
                continue
            for kind in open_kinds:
                if len(kept) >= per_project:
                    break
                site = by_kind[kind][cursor[kind]]
                cursor[kind] += 1
                # Diversity: one mutant per line, at most two per function.
                if (site.file, site.first) in used_lines or used_functions.get(f"{site.file}:{site.function}", 0) >= 2:
                    continue
                attempts += 1
                verdict = checker.check(site)
                if isinstance(verdict, str):
                    dropped[verdict.split(" (")[0]] = dropped.get(verdict.split(" (")[0], 0) + 1
                    continue
                failing, results, wall = verdict
                pending[kind] -= 1
                used_lines.add((site.file, site.first))
                key = f"{site.file}:{site.function}"
                used_functions[key] = used_functions.get(key, 0) + 1
                kept.append(make_mutant(project, site, seed, len(kept) + 1, failing, results, wall))
                log(f"  {project.name}: kept {kept[-1].name} ({kind}, {len(failing)} target(s), {wall:.1f}s)")
    finally:
        checker.close()
    stats = {"project": project.name, "sites": len(sites), "sites_by_kind": {k: len(v) for k, v in sorted(by_kind.items())},
             "attempts": attempts, "kept": len(kept), "dropped": dropped,
             "pristine_tests": len(base.passing), "pristine_wall_s": round(base.wall_s, 1),
             "wall_s": round(time.monotonic() - t0, 1)}
    return kept, stats


SHORT = {"more-itertools": "moreit", "python-slugify": "slugify"}


def make_mutant(project: Project, site: Site, seed: int, number: int, failing: list[str],
                results: dict[str, Any], wall: float) -> Mutant:
    before = (project.tree / site.file).read_text()
    after = mutate_text(before, site)
    signature, goal = symptom(failing[0], results[failing[0]])
    if len(failing) > 1:
        cases: dict[str, int] = {}
        for nodeid in failing[1:]:
            test = nodeid.split("::", 1)[1].split("[")[0]
            cases[test] = cases.get(test, 0) + 1
        goal += " Also failing: " + ", ".join(t + (f" ({n} cases)" if n > 1 else "") for t, n in cases.items()) + "."
    baseline = None
    if len(site.new) == 1 and site.first == site.last:
        search, replace = site.new[0].rstrip("\n"), before.splitlines()[site.first - 1]
        # The baseline patches the first line its literal search finds: only a unique line will do.
        hits = sum(((project.tree / f).read_text() if f != site.file else after).count(search)
                   for f in source_files(project))
        if hits == 1 and 0 < len(search) <= 200 and search.strip():
            baseline = {"search": search, "replace": replace, "path_glob": project.writable[0]}
    name = f"mut-s{seed}-{SHORT.get(project.name, project.name)}-{number:02d}-{site.kind}"
    return Mutant(name=name, project=project.name, kind=site.kind, file=site.file, first=site.first, last=site.last,
                  function=site.function, note=site.note, targets=failing, failure=signature, goal=goal,
                  bug_diff=unified(site.file, before, after), fix_diff=unified(site.file, after, before),
                  baseline=baseline, tests_run=len(site.covered_by), check_s=round(wall, 2))


def write_scenario(out: Path, project: Project, m: Mutant, seed: int) -> Path:
    (out / "bugs").mkdir(parents=True, exist_ok=True)
    (out / "bugs" / f"{m.name}.bug.diff").write_text(m.bug_diff)
    (out / "bugs" / f"{m.name}.fix.diff").write_text(m.fix_diff)
    fix_shape = "fix:added-line" if m.kind in ADDED_LINE or m.kind == "dropped-condition" else "fix:changed-line"
    tags = ["corpus:mutants", f"project:{project.name}", m.kind, "files:1", fix_shape, f"seed:{seed}",
            *project.layout_tags]
    raw = project.raw
    top = {"name": m.name, "description": f"{project.name} {project.version}: a generated bug (seed {seed})",
           "bug_patch": f"bugs/{m.name}.bug.diff", "reference_fix": f"bugs/{m.name}.fix.diff", "kind": m.kind,
           "tags": tags}
    sections: dict[str, dict] = {"source": raw["source"]}
    if raw.get("environment"):
        sections["environment"] = raw["environment"]
    sections |= {"goal": {"text": m.goal, "failure_signature": m.failure},
                 "acceptance": {"target_tests": m.targets, "writable": project.writable,
                                "protected": project.protected},
                 "budget": {"max_steps": 12, "deadline_s": 600}}
    if m.baseline:
        sections["baseline"] = m.baseline
    comment = (f"The source and environment as {project.manifest.parent.name}/{project.manifest.name} declares them."
               if raw.get("environment") else "")
    path = out / f"{m.name}.scenario.toml"
    path.write_text(manifest_text(top, sections, comment))
    return path


def main(argv: list[str] | None = None) -> int:
    # The program's name is bench/mutants.py's, the command line the docs give.
    p = argparse.ArgumentParser(prog="mutants.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--per-project", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="directory for the manifests and bugs/ (made if missing)")
    p.add_argument("--projects", nargs="*", help="project tags (default: every project of the real and dev corpora)")
    p.add_argument("--max-targets", type=int, default=3,
                   help="most failing test functions a kept mutant may have (the cases of a parametrized "
                        "test count once; at most 3x as many node ids)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds for one mutant's tests")
    p.add_argument("--workers", type=int, default=2, help="projects generated at once")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    projects = corpus_projects()
    chosen = args.projects or sorted(projects)
    unknown = [n for n in chosen if n not in projects]
    if unknown:
        p.error(f"unknown project(s) {unknown}; known: {sorted(projects)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> tuple[list[Mutant], dict[str, Any]]:
        return generate(projects[name], args.per_project, args.seed, max_targets=args.max_targets,
                        timeout=args.timeout, log=lambda m: print(m, flush=True))

    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        done = list(pool.map(one, chosen))
    index = {"seed": args.seed, "per_project": args.per_project, "max_targets": args.max_targets,
             "projects": [], "mutants": []}
    for name, (mutants, stats) in zip(chosen, done):
        for m in mutants:
            write_scenario(out, projects[name], m, args.seed)
            index["mutants"].append(asdict(m))
        index["projects"].append(stats)
    index["wall_s"] = round(time.monotonic() - t0, 1)
    (out / "mutants.json").write_text(json.dumps(index, indent=1))
    kinds: dict[str, int] = {}
    for m in index["mutants"]:
        kinds[m["kind"]] = kinds.get(m["kind"], 0) + 1
    added = sum(n for k, n in kinds.items() if k in ADDED_LINE or k == "dropped-condition")
    for stats in index["projects"]:
        print(f"{stats['project']:<16} kept {stats['kept']:>3} of {stats['attempts']:>3} tried "
              f"({stats['sites']} sites, {stats['pristine_tests']} tests, {stats['wall_s']}s) dropped: {stats['dropped']}")
    print(f"kinds: {dict(sorted(kinds.items()))}")
    total = len(index["mutants"])
    print(f"{total} mutants in {out} ({added} need an added line: {added / max(1, total):.0%}), {index['wall_s']}s")
    return 0
