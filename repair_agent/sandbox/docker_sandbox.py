"""DockerSandbox: the workspace bind-mounted into one long-lived hardened container."""
from __future__ import annotations

import base64
import io
import os
import tarfile
import time
from pathlib import Path

from verifier.isolation import CommandResult, EngineFailure, HardenedContainer, Limits, container_user

from .base import PATCH_ENV_MAX, PATCH_FROM_ENV, GitToolsMixin, SandboxError

TOOL_TIMEOUT_S = 30.0
SANDBOX_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}


class DockerSandbox(GitToolsMixin):
    kind = "docker"
    python = "python3"

    def __init__(self, client, image: str, workspace: Path, base_commit: str, *, run_id: str,
                 output_dir: Path, limits: Limits | None = None):
        from docker.types import Mount

        self.workspace, self.base_commit, self.output_dir = Path(workspace), base_commit, Path(output_dir)
        self.container = HardenedContainer(
            client, image, mounts=[Mount("/workspace", str(self.workspace), type="bind", read_only=False)],
            # two CPUs where the host has them, as the verifier's containers: the mutation analysis shares
            # its mutants between two processes (in_sandbox/workers.py) and is cut by time, not count
            limits=limits or Limits(cpus=float(min(2, os.cpu_count() or 1))), user=container_user(),
            labels={"org.repair-agent.role": "sandbox", "org.repair-agent.run": run_id})
        self.limits = self.container.limits

    def use_keep_budget(self, budget) -> None:
        """Share the run's bound on kept output (verifier.isolation.KeepBudget)."""
        self.container.budget = budget

    def run(self, argv: list[str], *, timeout_s: float = TOOL_TIMEOUT_S, output_cap: int | None = None,
            env: dict[str, str] | None = None) -> CommandResult:
        # No .pyc litter in the workspace (it would show in the diff); unbuffered output for the tools.
        return self.container.exec(argv, timeout_s=timeout_s, output_dir=self.output_dir, output_cap=output_cap,
                                   env={**SANDBOX_ENV, **(env or {})})

    def incoming(self, patch: bytes) -> tuple[str, dict[str, str]]:
        """A patch rides in the apply command's own environment when it fits (written inside the
        container, as the sandbox uid, where the command runs); a larger one goes through write_file."""
        encoded = base64.b64encode(patch).decode()
        if len(encoded) > PATCH_ENV_MAX:
            return super().incoming(patch)
        return PATCH_FROM_ENV, {"RA_PATCH": encoded}

    def write_file(self, path: str, content: bytes) -> None:
        # put_archive writes through the engine into the mount, owned by the sandbox uid:
        # the host never follows a path inside the agent-writable tree.
        uid, gid = (int(x) for x in container_user().split(":"))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            # Parent directories explicitly, or the engine creates them owned by root.
            parts = path.split("/")
            for depth in range(1, len(parts)):
                d = tarfile.TarInfo("/".join(parts[:depth]))
                d.type, d.mode, d.uid, d.gid, d.mtime = tarfile.DIRTYPE, 0o755, uid, gid, int(time.time())
                tar.addfile(d)
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(content), 0o644, int(time.time())
            info.uid, info.gid = uid, gid
            tar.addfile(info, io.BytesIO(content))
        try:
            if not self.container.container.put_archive("/workspace", buf.getvalue()):
                raise SandboxError(f"could not write {path}")
        except Exception as exc:
            raise EngineFailure(f"write_file failed: {exc}") from exc

    def close(self) -> bool:
        return self.container.close()
