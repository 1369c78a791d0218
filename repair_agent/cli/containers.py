"""Commands about the engine: cleanup (leftover containers) and image."""
from __future__ import annotations

from pathlib import Path


def cmd_cleanup(args) -> int:
    import docker

    from verifier.isolation import LABEL

    from ..session import remove_leftover_containers

    removed, kept = remove_leftover_containers(docker.from_env(), run_id=args.run, include_live=args.all)
    print(f"removed {removed} container(s) labelled {LABEL}"
          + (f"; kept {kept} of runs still in progress (--all removes them too)" if kept else ""))
    return 0


def cmd_image(args) -> int:
    import docker

    from ..sandbox.image import ensure_sandbox_image

    if args.scenario or args.list or args.prune:  # scenario environments: sandbox/environment.py
        from ..sandbox.environment import image_command
        from ..scenario import resolve
        return image_command(args, lambda name: resolve(name, [Path(d) for d in args.scenarios_dir]))

    print(ensure_sandbox_image(docker.from_env(), log=print, base_image=args.base_image))
    return 0
