"""What a scenario environment costs: its first build, and what it adds to a warm run.

    .venv/bin/python bench/bench_env.py [--repeat 3] [--skip-first-build]

1. First build: the environment image of a real-project scenario with a runtime dependency
   (python-slugify needs text-unidecode) is removed and built again, timed end to end (pip from
   its wheel, the package from the index, the commit); then the cached lookup is timed.
2. Warm run: the same scenario (inflection-dasherize, no dependencies) run with the baseline
   chooser on the plain sandbox image and on an environment layered on it (one variable: the
   image differs, the work does not), in interleaved pairs after one warm-up run each (images
   built, baselines cached). The environment's share is the ratio of the medians minus one;
   the target is <= 5%.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import docker
import docker.errors

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.choosers import BaselineChooser  # noqa: E402
from repair_agent.run import execute_run  # noqa: E402
from repair_agent.sandbox.environment import EnvironmentSection, scenario_image  # noqa: E402
from repair_agent.scenario import load_manifest  # noqa: E402

REAL = ROOT / "sandbox_repos" / "real"


def first_build(client) -> tuple[float, float, str]:
    scenario = load_manifest(REAL / "slugify-stopwords-lowercase.scenario.toml")
    tag = scenario_image(client, scenario)
    try:
        client.images.remove(tag)
    except docker.errors.APIError as exc:  # in use by a container of a concurrent run
        print(f"note: {tag} could not be removed ({exc.explanation}); the first-build time below is a lookup")
    t0 = time.monotonic()
    scenario_image(client, scenario, log=lambda m: print(f"  {m}"))
    build_s = time.monotonic() - t0
    t0 = time.monotonic()
    assert scenario_image(client, scenario) == tag
    return build_s, time.monotonic() - t0, tag


def warm_runs(client, repeat: int) -> tuple[list[float], list[float]]:
    plain = load_manifest(REAL / "inflection-dasherize.scenario.toml")
    layered = plain.model_copy(update={"environment": EnvironmentSection(env={"RA_BENCH_ENVIRONMENT": "1"})})
    walls: dict[str, list[float]] = {"plain": [], "environment": []}
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"

        def once(name: str) -> float:
            scenario = plain if name == "plain" else layered
            rec = execute_run(scenario, BaselineChooser(scenario.baseline), runs_dir=runs, client=client)
            assert rec.status.value == "awaiting_release_confirmation", rec.detail
            return rec.wall_s

        for name in walls:  # warm-up: images built, pristine baselines cached
            once(name)
        for i in range(repeat):
            order = ("plain", "environment") if i % 2 == 0 else ("environment", "plain")
            for name in order:
                walls[name].append(once(name))
                print(f"  run {i + 1}/{repeat} {name:<11} {walls[name][-1]:6.2f}s")
    return walls["plain"], walls["environment"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-first-build", action="store_true")
    args = parser.parse_args()
    client = docker.from_env()
    if not args.skip_first_build:
        print("first build of python-slugify's environment (text-unidecode from the index):")
        build_s, lookup_s, tag = first_build(client)
        print(f"first build: {build_s:.1f}s ({tag}); cached lookup afterwards: {lookup_s * 1000:.0f} ms")
    print(f"warm runs of inflection-dasherize, plain sandbox image vs. an environment on it ({args.repeat} pairs):")
    plain, layered = warm_runs(client, args.repeat)
    p, e = statistics.median(plain), statistics.median(layered)
    share = e / p - 1
    print(f"warm run: plain {p:.2f}s, with environment {e:.2f}s (medians): the environment adds {share:+.1%} "
          f"({'within' if share <= 0.05 else 'OVER'} the 5% target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
