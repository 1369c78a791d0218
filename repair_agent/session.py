"""One process's hold on a run: engine, image, workspace, verifier and sandbox, and their cleanup."""
from __future__ import annotations

import datetime as dt
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable

import docker
import requests

from verifier import Verifier, diff_sha256

from .plain import ChooserIdentity
from .sandbox import DockerSandbox, LocalSandbox, NOT_ISOLATED, create_workspace
from .scenario import Scenario


class Session:
    """One process's hold on a run: engine, image, workspace, verifier and sandbox, and their cleanup."""

    def __init__(self, scenario: Scenario, run_dir: Path, run_id: str, sandbox_kind: str, client,
                 log: Callable[[str], None], *, runs_dir: Path):
        self.scenario, self.run_dir, self.run_id, self.kind = scenario, run_dir, run_id, sandbox_kind
        self.client, self.log, self.runs_dir = client, log, runs_dir
        self.sandbox = self.verifier = self.image = self.base = None
        self.info = {"kind": sandbox_kind, "isolated": sandbox_kind == "docker"}
        if sandbox_kind == "local":
            self.info["warning"] = NOT_ISOLATED
            log(f"WARNING: {NOT_ISOLATED}")

    def open(self, granted: tuple[str, ...]) -> None:
        if self.kind == "docker":
            from .sandbox.image import ensure_sandbox_image

            self.client = self.client or docker.from_env()
            self.image = ensure_sandbox_image(self.client, log=self.log)
        # The verifier first: prepare() starts making its fresh check containers in the
        # background, while the workspace is built and the sandbox starts.
        self.verifier = Verifier(self.scenario.spec, self.scenario.repo, self.run_dir / "verifier", backend=self.kind,
                                 client=self.client, image=self.image, heldout=self.scenario.heldout,
                                 cache_dir=Path(self.runs_dir).resolve() / ".cache", granted=granted,
                                 labels={"org.repair-agent.run": self.run_id})
        self.verifier.prepare()
        if self.verifier.cache_note:
            self.log(f"note: {self.verifier.cache_note}")
        workspace, tool_out = self.run_dir / "workspace", self.run_dir / "outputs"
        if self.kind == "docker":
            # The sandbox container starts while the workspace is built into its (bind-mounted)
            # directory: nothing runs in the container before the first tool call.
            workspace.mkdir()
            with ThreadPoolExecutor(1, thread_name_prefix="workspace") as builder:
                building = builder.submit(create_workspace, self.scenario.repo, workspace, for_container=True)
                try:
                    self.sandbox = DockerSandbox(self.client, self.image, workspace, "", run_id=self.run_id,
                                                 output_dir=tool_out)
                finally:
                    wait([building])
            self.base = self.sandbox.base_commit = building.result()
        else:
            self.base = create_workspace(self.scenario.repo, workspace, for_container=False)
            self.sandbox = LocalSandbox(workspace, self.base, output_dir=tool_out)

    def rebuild(self, patches: list[str], expected_sha256: str) -> str:
        """Pristine tree + the journaled patches, applied by the sandbox as they were the first time."""
        for number, patch in enumerate(patches, 1):
            res = self.sandbox.apply_patch(patch)
            if not res.ok:
                raise RuntimeError(f"journaled patch {number} of {len(patches)} no longer applies: {res.stderr.text[-500:]}")
        diff = self.sandbox.diff() if patches else ""
        if diff_sha256(diff) != expected_sha256:
            raise RuntimeError(f"the rebuilt workspace's diff ({diff_sha256(diff)[:12]}) is not the journaled one "
                               f"({expected_sha256[:12]})")
        return diff

    def setup_record(self, identity: ChooserIdentity, chooser_spec: str | None, started_at: str,
                     resumed_from=None) -> dict:
        """Who runs this session and on what: enough for a later resume to find everything again."""
        record = {"event": "setup", "run_id": self.run_id, "scenario": self.scenario.name,
                  "manifest": str(self.scenario.manifest_path), "chooser": identity.name,
                  "chooser_spec": chooser_spec, "seed": identity.seed, "sandbox": self.kind, "image": self.image,
                  "pid": os.getpid(), "model": identity.model, "models_file": identity.models_file,
                  "started_at": started_at, "environment_id": self.verifier.environment_id,
                  "pristine_tree_sha256": self.verifier.snapshot.tree_sha256,
                  "protected_manifest_sha256": self.verifier.snapshot.manifest_sha256}
        if resumed_from is not None:
            record["resume"] = {"from_status": resumed_from.status, "from_detail": resumed_from.detail,
                                "session_started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                "torn_tail": resumed_from.torn.model_dump() if resumed_from.torn else None,
                                "rebuilt_from_patches": len(resumed_from.patches)}
        return record

    def remove_containers_of(self, pids: list[int]) -> int:
        """A killed session leaves its sandbox (and maybe a verifier) container: remove those whose
        owner process is gone. A live owner's containers are never touched."""
        if self.kind != "docker":
            return 0
        from verifier.isolation import LABEL, OWNER_LABEL

        self.client = self.client or docker.from_env()
        removed = 0
        for pid in {p for p in pids if not pid_alive(p)}:
            for c in self.client.containers.list(all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={pid}"]}):
                c.remove(force=True, v=True)
                removed += 1
        if removed:
            self.log(f"removed {removed} container(s) left by the killed session")
        return removed

    def failure(self, exc: Exception) -> str:
        where = f" (Docker Engine at {_engine_address(self.client)})" if self.client is not None else ""
        hint = (" — is a Docker Engine running? `--sandbox local` works without one but does NOT isolate"
                if isinstance(exc, (docker.errors.DockerException, requests.exceptions.RequestException)) else "")
        return f"{type(exc).__name__}: {exc}{where}{hint}"

    def close(self) -> None:
        # Both at once: each waits on the engine to remove containers.
        closing = threading.Thread(target=self.verifier.close) if self.verifier is not None else None
        if closing:
            closing.start()  # its pooled, never-used verification containers
        try:
            if self.sandbox is not None and self.sandbox.close() is False:
                self.log(f"WARNING: could not remove this run's sandbox container; "
                         f"`repair-agent cleanup --run {self.run_id}` will")
        finally:
            if closing:
                closing.join()


def pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True




def fallback_run_dir(run_id: str) -> Path:
    """Where a run's files go when the runs directory cannot take them: $TMPDIR/repair-agent-runs/RUN_ID."""
    path = Path(tempfile.gettempdir()) / "repair-agent-runs" / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def _engine_address(client) -> str:
    adapter = getattr(client.api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    return f"unix://{socket_path}" if socket_path else client.api.base_url
