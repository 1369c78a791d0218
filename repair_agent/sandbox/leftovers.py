"""Containers a run leaves behind when its process is killed, and who still owns them."""
from __future__ import annotations

import os


def pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def remove_leftover_containers(client, *, owners: list[int] | None = None, run_id: str | None = None,
                               include_live: bool = False) -> tuple[int, int]:
    """Remove the project's containers whose owner process is gone (of these owners, or of this run,
    or all); a live owner's are kept unless include_live. Returns (removed, kept). The one cleanup
    path: a resume clears a killed session with it, and `repair-agent cleanup` uses it too."""
    import docker

    from verifier.isolation import LABEL, OWNER_LABEL

    run_label = [f"org.repair-agent.run={run_id}"] if run_id else []
    queries = [[LABEL, f"{OWNER_LABEL}={pid}", *run_label] for pid in sorted(set(owners))] if owners is not None \
        else [[LABEL, *run_label]]
    removed = kept = 0
    for labels in queries:
        for c in client.containers.list(all=True, filters={"label": labels}, ignore_removed=True):
            if not include_live and pid_alive(c.labels.get(OWNER_LABEL)):
                kept += 1  # a run in progress on this machine: not a leftover
                continue
            try:
                c.remove(force=True, v=True)
            except docker.errors.NotFound:
                continue  # gone between the listing and the removal (its owner removed it): nothing left
            removed += 1
    return removed, kept
