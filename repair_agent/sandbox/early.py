"""The sandbox of a `run`, begun at the command's start: the engine starts its container and the
workspace is built while the rest of the program is still being imported and set up."""
from __future__ import annotations

import datetime as dt
import secrets
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..scenarios.scenario import Scenario
    from .docker_sandbox import DockerSandbox


def new_run_id(scenario: str) -> str:
    return f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{scenario}-{secrets.token_hex(3)}"


class EarlySandbox:
    """A run's id, its workspace and its started sandbox container, made in a background thread.

    A session takes it (`take`) or it is discarded (`discard`, idempotent): a container it started
    and nobody took is removed either way. What went wrong is raised by `take`, on the session's
    thread, as the same failure its own set-up would have met."""

    def __init__(self, name: str, runs_dir: Path, *, log: Callable[[str], None] = lambda m: None):
        self.run_id = new_run_id(name)
        self.run_dir = (Path(runs_dir) / self.run_id).resolve()
        self.client = None
        self.image: str | None = None
        self.sandbox: DockerSandbox | None = None
        self.base: str | None = None
        self.error: BaseException | None = None
        self._done = False
        self._lock = threading.Lock()
        self._image_known = threading.Event()
        # The scenario arrives once its manifest is validated, which runs while the engine starts
        # the container; None when it will not come (an unusable manifest: the sandbox is discarded).
        self._scenario: Scenario | None = None
        self._scenario_known = threading.Event()
        self._thread = threading.Thread(target=self._start, args=(log,), name="early-sandbox", daemon=True)
        self._thread.start()

    def provide(self, scenario: Scenario) -> bool:
        """The validated scenario whose repository the workspace is built from; False (and nothing
        provided) for one with its own environment image, which is not the image started here."""
        if scenario.environment is not None:
            return False
        self._scenario = scenario
        self._scenario_known.set()
        return True

    def _start(self, log: Callable[[str], None]) -> None:
        try:
            import docker

            from .docker_sandbox import DockerSandbox
            from .image import ensure_sandbox_image
            from .workspace import create_workspace

            workspace = self.run_dir / "workspace"
            workspace.mkdir(parents=True)
            built: list = []

            def build() -> None:
                try:
                    self._scenario_known.wait()
                    if self._scenario is None:
                        raise RuntimeError("the early sandbox's scenario was not provided")
                    built.append(create_workspace(self._scenario.workspace_tree, workspace, for_container=True))
                except BaseException as exc:
                    built.append(exc)

            # The workspace is built while the engine starts the container (bind-mounted: the
            # container sees it as it is filled; nothing runs in it before the first tool call).
            # Begun once the image is known: until then it would only compete with this thread.
            builder = threading.Thread(target=build, name="early-workspace", daemon=True)
            try:
                try:
                    self.client = client = docker.from_env()
                    self.image = ensure_sandbox_image(client, log=log)
                finally:
                    self._image_known.set()
                builder.start()
                self.sandbox = DockerSandbox(client, self.image, workspace, "", run_id=self.run_id,
                                             output_dir=self.run_dir / "outputs")
            finally:
                if builder.ident is not None:
                    builder.join()
            if isinstance(built[0], BaseException):
                raise built[0]
            self.base = self.sandbox.base_commit = built[0]
        except BaseException as exc:  # raised by take(), where the session reports it
            self.error = exc
        finally:
            self._image_known.set()

    def wait_requested(self) -> None:
        """Until the container's creation is asked of the engine (or the start failed): the
        caller's own imports, held back until then, no longer compete with this thread's for the
        interpreter, and run while the engine starts the container."""
        self._image_known.wait()

    def engine(self) -> tuple[object, str]:
        """The client and the image, as soon as they are known (the container may still be starting);
        the failure if there are none."""
        self._image_known.wait()
        if self.client is None or self.image is None:
            self.take()  # raises what went wrong
        return self.client, self.image or ""

    def take(self) -> DockerSandbox:
        """The started sandbox, its workspace built; or the failure (its container removed first)."""
        self._scenario_known.set()  # provided by now, or never: then the failure says so
        self._thread.join()
        with self._lock:
            if self._done:
                raise RuntimeError("the early sandbox was already taken or discarded")
            self._done = True
            if self.error is None and self.sandbox is not None:
                return self.sandbox
        self._remove()
        raise self.error or RuntimeError("the early sandbox did not start")

    def discard(self, *, unused_dir: bool = False) -> None:
        """Not taken: remove its container (waits for the start to finish first). With `unused_dir`,
        also the run directory, if it holds nothing but what this made (no run ever began in it)."""
        self._scenario_known.set()  # a scenario never provided will not be: the start ends
        self._thread.join()
        with self._lock:
            if self._done:
                return
            self._done = True
        self._remove()
        if unused_dir and self.run_dir.is_dir() and {p.name for p in self.run_dir.iterdir()} <= {"workspace", "outputs"}:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def _remove(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
