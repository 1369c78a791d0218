"""Commands about the engine: cleanup (leftover containers) and image."""
from __future__ import annotations



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

    print(ensure_sandbox_image(docker.from_env(), log=print, base_image=args.base_image))
    return 0
