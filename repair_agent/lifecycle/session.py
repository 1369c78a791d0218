"""One process's hold on a run: engine, image, workspace, verifier and sandbox, and their cleanup."""
from __future__ import annotations

import datetime as dt
import os
import tempfile
import threading
from pathlib import Path
from typing import Callable

import docker
import requests

from verifier import Verifier, diff_sha256
from verifier.isolation import KeepBudget, Limits

from ..loop.journal import ResumeInfo, SetupRecord
from ..choosers.base import ChooserDescription
from ..sandbox import Sandbox
from ..sandbox.backends import Backend
from ..sandbox.early import EarlySandbox
from ..scenarios.scenario import Scenario
from ..loop.usage import model_record


class Session:
    """One process's hold on a run: engine, image, workspace, verifier and sandbox, and their cleanup."""

    def __init__(self, scenario: Scenario, run_dir: Path, run_id: str, backend: Backend, client,
                 log: Callable[[str], None], *, runs_dir: Path, early: EarlySandbox | None = None):
        self.scenario, self.run_dir, self.run_id, self.backend = scenario, run_dir, run_id, backend
        self.client, self.log, self.runs_dir = client, log, runs_dir
        # Begun at the command's start (for this run id and directory): taken by open(), removed by close().
        self.early = early if early is not None and backend.begins_early and early.run_dir == run_dir else None
        if early is not None and self.early is None:
            early.discard()
        self.sandbox: Sandbox | None = None
        self.verifier: Verifier | None = None
        self.image: str | None = None
        self.base: str | None = None
        self.info = backend.record()
        # What this session keeps of all its commands' output on the host, sandbox and checks together.
        self.keep_budget = KeepBudget(Limits().run_keep_cap)
        if backend.warning:
            log(f"WARNING: {backend.warning}")

    @property
    def live(self) -> tuple[Sandbox, Verifier]:
        """The sandbox and the verifier of an opened session."""
        if self.sandbox is None or self.verifier is None:
            raise RuntimeError("the session is not open")
        return self.sandbox, self.verifier

    def open(self, granted: tuple[str, ...]) -> None:
        if self.early is not None:
            self.client = self.early.client  # for the failure's message, should there be one
            self.client, self.image = self.early.engine()
        else:
            self.client = self.backend.engine(self.client)
            # The scenario's environment image (or the plain sandbox image): the sandbox and the
            # verifier's checks run the same one.
            self.image = self.backend.image(self.client, self.scenario, log=self.log)
        # The verifier first: prepare() starts making its fresh check containers in the
        # background, while the workspace is built and the sandbox starts.
        self.verifier = verifier = Verifier(self.scenario.spec, self.scenario.repo, self.run_dir / "verifier",
                                            backend=self.backend.checks_on, client=self.client, image=self.image,
                                            cache_dir=Path(self.runs_dir).resolve() / ".cache", granted=granted,
                                            labels={"org.repair-agent.run": self.run_id},
                                            keep_budget=self.keep_budget, **self.scenario.verifier_inputs())
        verifier.prepare()
        if verifier.cache_note:
            self.log(f"note: {verifier.cache_note}")
        workspace, tool_out = self.run_dir / "workspace", self.run_dir / "outputs"
        sandbox: Sandbox
        if self.early is not None:
            self.sandbox = sandbox = self.early.take()
        else:
            self.sandbox = sandbox = self.backend.start(self.client, self.image, self.scenario.workspace_tree,
                                                        workspace, run_id=self.run_id, output_dir=tool_out)
        self.base = sandbox.base_commit
        sandbox.use_keep_budget(self.keep_budget)

    def rebuild(self, patches: list[str], expected_sha256: str) -> str:
        """Pristine tree + the journaled patches, applied by the sandbox as they were the first time."""
        sandbox, _ = self.live
        for number, patch in enumerate(patches, 1):
            res = sandbox.apply_patch(patch)
            if not res.ok:
                raise RuntimeError(f"journaled patch {number} of {len(patches)} no longer applies: {res.stderr.text[-500:]}")
        diff = sandbox.diff() if patches else ""
        if diff_sha256(diff) != expected_sha256:
            raise RuntimeError(f"the rebuilt workspace's diff ({diff_sha256(diff)[:12]}) is not the journaled one "
                               f"({expected_sha256[:12]})")
        return diff

    def setup_record(self, identity: ChooserDescription, chooser_spec: str | None, started_at: str,
                     resumed_from=None, max_cost: float | None = None) -> SetupRecord:
        """Who runs this session and on what: enough for a later resume to find everything again."""
        resume = None
        if resumed_from is not None:
            resume = ResumeInfo(from_status=resumed_from.status, from_detail=resumed_from.detail,
                                session_started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                torn_tail=resumed_from.torn, rebuilt_from_patches=len(resumed_from.patches))
        _, verifier = self.live
        return SetupRecord(run_id=self.run_id, scenario=self.scenario.name, manifest=str(self.scenario.manifest_path),
                           chooser=identity.name, chooser_spec=chooser_spec, seed=identity.seed, sandbox=self.backend.name,
                           image=self.image, pid=os.getpid(), model=model_record(identity), models_file=identity.models_file,
                           max_cost=max_cost, started_at=started_at, environment_id=verifier.environment_id,
                           pristine_tree_sha256=verifier.snapshot.tree_sha256 if verifier.snapshot else None,
                           protected_manifest_sha256=verifier.snapshot.manifest_sha256 if verifier.snapshot else None,
                           resume=resume)

    def remove_containers_of(self, pids: list[int]) -> int:
        """A killed session leaves its sandbox (and maybe a verifier) container: remove those whose
        owner process is gone. A live owner's containers are never touched."""
        self.client = self.backend.engine(self.client)
        return self.backend.remove_leftovers(self.client, pids, log=self.log)

    def failure(self, exc: Exception) -> str:
        where = f" (Docker Engine at {_engine_address(self.client)})" if self.client is not None else ""
        hint = (" — is a Docker Engine running? `--sandbox local` works without one but does NOT isolate"
                if isinstance(exc, (docker.errors.DockerException, requests.exceptions.RequestException)) else "")
        return f"{type(exc).__name__}: {exc}{where}{hint}"

    def close(self) -> None:
        if self.early is not None:
            self.early.discard()  # begun but never taken (set-up failed before): nothing else holds it
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


def fallback_run_dir(run_id: str) -> Path:
    """Where a run's files go when the runs directory cannot take them: $TMPDIR/repair-agent-runs/RUN_ID."""
    path = Path(tempfile.gettempdir()) / "repair-agent-runs" / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def _engine_address(client) -> str:
    adapter = getattr(client.api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    return f"unix://{socket_path}" if socket_path else client.api.base_url
