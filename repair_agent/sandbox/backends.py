"""The sandbox backends, by name: what each isolates, how it makes a run's sandbox, where the
programs it runs and the verifier's checks run, and what a killed session leaves behind.

The command line picks one by name (`--sandbox NAME`, through BACKENDS); everything after holds
the Backend object and asks it, never compares its name. A new backend is one class here and one
line in BACKENDS, and passes tests/test_sandbox_conformance.py.
"""
from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal

if TYPE_CHECKING:
    from verifier.isolation import HardenedContainer, LocalRunner

    from ..scenarios.scenario import Scenario
    from .base import Sandbox
    from .environment import EnvironmentSection

    Runner = HardenedContainer | LocalRunner

Log = Callable[[str], None]
NOT_ISOLATED = ("LocalSandbox does NOT isolate: commands run on this host as this user, with its "
                "network and files. Use it only where no Docker Engine exists.")


class Backend(ABC):
    name: ClassVar[str]
    """On the command line (`--sandbox NAME`) and in every record of a run on it."""
    isolated: ClassVar[bool]
    """Whether the candidate's code is kept from this host (its files, network and user)."""
    warning: ClassVar[str | None] = None
    """Said at the start of every run on it, and kept in its record."""
    checks_on: ClassVar[Literal["docker", "local"]]
    """Where the verifier runs the protected checks (its own runner of the same name)."""
    python: ClassVar[str]
    """The interpreter a program run inside its sandbox uses."""
    begins_early: ClassVar[bool] = False
    """Its sandbox can be begun at the command's start, while the rest is imported (EarlySandbox)."""

    def record(self) -> dict[str, Any]:
        """What run.json keeps of it."""
        return {"kind": self.name, "isolated": self.isolated, **({"warning": self.warning} if self.warning else {})}

    @abstractmethod
    def engine(self, client=None):
        """The engine client its sandboxes and checks need (`client` when given; None: it needs none)."""

    @abstractmethod
    def image(self, client, scenario: Scenario | None, *, log: Log = lambda m: None) -> str | None:
        """The image the candidate's code and the checks run in: the scenario's environment image,
        or the sandbox image (for no scenario, too); None where there are no images."""

    @abstractmethod
    def start(self, client, image: str | None, tree: Path, workspace: Path, *, run_id: str,
              output_dir: Path) -> Sandbox:
        """A workspace at `workspace` holding `tree` as one base commit, and a started sandbox on it."""

    def remove_leftovers(self, client, owners: list[int], *, log: Log = lambda m: None) -> int:
        """Remove what killed sessions (these owner pids) left running; how many were removed."""
        return 0

    def verified_image(self, client, environment_id: str, tag: str | None) -> str | None:
        """The image a run's checks ran on (its environment id), which must still be here for them
        to run on it again; LookupError saying what is missing otherwise. None where there are no images."""
        return None

    def environment_image(self, client, section: EnvironmentSection, tree: Path, name: str, *,
                          log: Log = lambda m: None) -> str | None:
        """The image of an environment section for `tree` (built once, then reused); None where
        there are no images (the code runs on this host's interpreter)."""
        return None

    @abstractmethod
    def tree_runner(self, client, image: str | None, tree: Path, *, writable: dict[str, str] | None = None) -> Runner:
        """A runner for code of `tree`, which it cannot change: where tree_root(tree) says, with
        `writable` (path: tmpfs options) the only places it may write, where it has places."""

    @abstractmethod
    def tree_root(self, tree: Path) -> str:
        """Where code run by tree_runner sees `tree`."""

    def __repr__(self) -> str:
        return f"<{self.name} sandbox backend>"


class DockerBackend(Backend):
    name = "docker"
    isolated = True
    checks_on = "docker"
    python = "python3"
    begins_early = True

    def engine(self, client=None):
        import docker

        return client or docker.from_env()

    def image(self, client, scenario: Scenario | None, *, log: Log = lambda m: None) -> str:
        from .environment import scenario_image
        from .image import ensure_sandbox_image

        return scenario_image(client, scenario, log=log) if scenario is not None else \
            ensure_sandbox_image(client, log=log)

    def start(self, client, image: str | None, tree: Path, workspace: Path, *, run_id: str,
              output_dir: Path) -> Sandbox:
        from .docker_sandbox import DockerSandbox
        from .workspace import create_workspace

        # The container starts while the workspace is built into its (bind-mounted) directory:
        # nothing runs in the container before the first tool call.
        workspace.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(1, thread_name_prefix="workspace") as builder:
            building = builder.submit(create_workspace, tree, workspace, for_container=True)
            try:
                sandbox = DockerSandbox(client, image or "", workspace, "", run_id=run_id, output_dir=output_dir)
            finally:
                wait([building])
        try:
            sandbox.base_commit = building.result()
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def remove_leftovers(self, client, owners: list[int], *, log: Log = lambda m: None) -> int:
        from .leftovers import remove_leftover_containers

        removed, _ = remove_leftover_containers(client, owners=owners)
        if removed:
            log(f"removed {removed} container(s) left by the killed session")
        return removed

    def verified_image(self, client, environment_id: str, tag: str | None) -> str:
        import docker

        wanted = environment_id.removeprefix("docker:")
        try:
            return client.images.get(wanted).id
        except docker.errors.ImageNotFound:
            pass
        try:
            now = client.images.get(tag).id if tag else None
        except docker.errors.ImageNotFound:
            now = None
        where = (f"its tag {tag} now names {now[:19]}" if now else f"nor is its tag {tag}" if tag else "")
        raise LookupError(f"the run was verified on image {wanted[:19]}, which is not present on this Docker Engine "
                          f"any more{' (' + where + ')' if where else ''}")

    def environment_image(self, client, section: EnvironmentSection, tree: Path, name: str, *,
                          log: Log = lambda m: None) -> str:
        from .environment import ensure_environment_image

        return ensure_environment_image(client, section, tree, name, log=log)

    def tree_runner(self, client, image: str | None, tree: Path, *, writable: dict[str, str] | None = None) -> Runner:
        from docker.types import Mount

        from verifier.isolation import HardenedContainer, container_user

        return HardenedContainer(client, image or "", user=container_user(),
                                 mounts=[Mount(self.tree_root(tree), str(tree), type="bind", read_only=True)],
                                 labels={"org.repair-agent.role": "import"}, extra_tmpfs=writable or {})

    def tree_root(self, tree: Path) -> str:
        return "/workspace"


class LocalBackend(Backend):
    name = "local"
    isolated = False
    warning = NOT_ISOLATED
    checks_on = "local"
    python = sys.executable

    def engine(self, client=None):
        return client

    def image(self, client, scenario: Scenario | None, *, log: Log = lambda m: None) -> None:
        return None

    def start(self, client, image: str | None, tree: Path, workspace: Path, *, run_id: str,
              output_dir: Path) -> Sandbox:
        from .local_sandbox import LocalSandbox
        from .workspace import create_workspace

        return LocalSandbox(workspace, create_workspace(tree, workspace, for_container=False), output_dir=output_dir)

    def tree_runner(self, client, image: str | None, tree: Path, *, writable: dict[str, str] | None = None) -> Runner:
        from verifier.isolation import Limits, LocalRunner

        return LocalRunner(Limits(), workdir=tree)

    def tree_root(self, tree: Path) -> str:
        return str(tree)


BACKENDS: dict[str, type[Backend]] = {b.name: b for b in (DockerBackend, LocalBackend)}
"""Every backend by its name: the one place a name becomes a backend."""


def backend_named(name: str | Backend) -> Backend:
    """The backend called `name` (a Backend is returned as it is)."""
    if isinstance(name, Backend):
        return name
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"no sandbox backend {name!r}; there are: {', '.join(BACKENDS)}") from None
