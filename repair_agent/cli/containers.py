"""Commands about the engine: cleanup (leftover containers) and image."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def cmd_cleanup(args) -> int:
    import docker

    from verifier.isolation import LABEL

    from ..sandbox.leftovers import remove_leftover_containers

    removed, kept = remove_leftover_containers(docker.from_env(), run_id=args.run, include_live=args.all)
    print(f"removed {removed} container(s) labelled {LABEL}"
          + (f"; kept {kept} of runs still in progress (--all removes them too)" if kept else ""))
    return 0


def cmd_image(args) -> int:
    import docker

    from ..sandbox.image import ensure_sandbox_image

    if args.scenario or args.list or args.prune:  # scenario environments
        return _environment_images(args)

    print(ensure_sandbox_image(docker.from_env(), log=print, base_image=args.base_image))
    return 0


def _environment_images(args) -> int:
    """`repair-agent image --scenario NAME | --list | --prune`."""
    import docker

    from ..sandbox.environment import (EnvironmentBuildError, list_environments, prune_environments,
                                       scenario_image)
    from ..scenarios.scenario import resolve

    client = docker.from_env()
    if args.list:
        envs = list_environments(client)
        if getattr(args, "json", False):
            print(json.dumps([e.model_dump() for e in envs], indent=2))
        for e in envs if not getattr(args, "json", False) else []:
            print(f"{e.tag:<36} {e.scenario:<40} {e.size_mb:>8.1f} MB  {e.created}")
        if not envs and not getattr(args, "json", False):
            print("no cached environment images")
        return 0
    if args.prune:
        print(f"removed {prune_environments(client)} environment image(s)")
        return 0
    scenario = resolve(args.scenario, [Path(d) for d in args.scenarios_dir])
    t0 = time.monotonic()
    try:
        tag = scenario_image(client, scenario, log=lambda m: print(m, file=sys.stderr))
    except EnvironmentBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(tag)
    print(f"ready in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return 0
