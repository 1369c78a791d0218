"""Scenario environments: the sandbox image plus what a project needs to run its tests.

A manifest's `[environment]` names pinned packages, a requirements file inside the repository,
install commands (typically `pip install -e .`) and environment variables. The environment is an
image layered on the sandbox image, tagged by a content hash of everything that defines it (the
base image id, the section, the bytes of the files it reads), built once and cached.

The build is a container started from the base image with the network (the only time anything of a
scenario has it), the pristine tree bind-mounted at /workspace, and the build's own files (a pip
wheel when the base has no pip, the host's CA bundle, the script) bind-mounted at /ra-build:
neither lands in the image. Only when every step succeeded is the container committed under the
tag; a failed build leaves no tag, and its log stays under the cache directory.

An editable install made at /workspace points at whatever is mounted there later: the sandbox's
workspace, or the verifier's check tree with the candidate diff applied. So the patch is what runs.
Every container that runs candidate code (the sandbox and the verifier's checks) is started from
this same image with `network none`.

Kept in one module: the key, the build, the tag and labels, and the listing and pruning of cached
images are one naming scheme; split, each part would import the others' constants.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verifier.isolation import absolute_mount
from verifier.junit import last_exception
from verifier.trees import copy_tree, sha256_file

from ..resources import machine_lock
from .declared import BUILD_FILES as BUILD_FILES, install_digest
from .in_build import import_check


ENV_REPO = "repair-agent-env"
ROLE_LABEL = "org.repair-agent.role"
KEY_LABEL = "org.repair-agent.env-key"
SCENARIO_LABEL = "org.repair-agent.env-scenario"
# Where the install put the tree's packages, relative to /workspace (e.g. ["src"]): the verifier's
# checks place the tree at another, ordinary path each time and put these on the path there.
IMPORT_ROOTS_LABEL = "org.repair-agent.import-roots"
BUILD_ROLE = "environment-build"
# Modules the install wrote into the tree (setuptools-scm's `_version.py`): a checkout has them once
# installed, a tree exported from git does not, and the package cannot be imported without them.
GENERATED_LABEL = "org.repair-agent.generated"
GENERATED_MAX_BYTES = 16 * 1024
_NOT_GENERATED = ("build", ".eggs", "__pycache__")
# pip run from its wheel when the base image has none (Debian's python3 ships without pip).
PIP_VERSION = "24.3.1"
# Bumped when the build recipe below changes what an image contains.
RECIPE = "4"  # 4: pytest's own dependencies held at the image's versions; 2: the image says where the install put the tree; 3: keyed on install_digest, not build file bytes
BUILD_TIMEOUT_S = 1800
_REQ = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]*\])?\s*===?\s*[A-Za-z0-9.+!*_-]+\s*(;.*)?$")

Log = Callable[[str], None]


class EnvironmentBuildError(RuntimeError):
    """An environment image that cannot be built; the message names the step and the log."""


class EnvironmentSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # Pinned requirement strings, e.g. "text-unidecode==1.3": the key must say what gets installed.
    packages: tuple[str, ...] = ()
    # pytest plugins, pinned like packages (e.g. "pytest-mock==3.14.0"). pytest loads installed
    # plugins itself (autoload is never turned off where tests run), as the project's own config says.
    plugins: tuple[str, ...] = ()
    # A requirements file inside the repository (its bytes are part of the key).
    requirements: str | None = None
    # Shell commands run as root in /workspace (the pristine tree) after the packages, e.g.
    # "pip install --no-deps -e .". `pip` is on PATH during the build.
    install: tuple[str, ...] = ()
    env: dict[str, str] = {}
    # Another Python image to layer on (it must have python3 on PATH); default: the sandbox's base.
    base_image: str | None = Field(None, min_length=1)
    # Another Python: the sandbox built on the Debian release that ships it (image.PYTHON_SUITES).
    python: Literal["3.9", "3.11", "3.13"] | None = None

    @model_validator(mode="after")
    def _one_base(self) -> "EnvironmentSection":
        if self.python and self.base_image:
            raise ValueError("give python or base_image, not both")
        return self

    @field_validator("packages", "plugins")
    @classmethod
    def _pinned(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for req in value:
            if not _REQ.match(req.strip()):
                raise ValueError(f"{req!r} is not a pinned requirement like 'name==1.2.3'")
        return value

    @field_validator("requirements")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("/") or ".." in value.split("/") or not value.strip()):
            raise ValueError(f"requirements must be a path inside the repository, got {value!r}")
        return value

    @field_validator("env")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) or "\n" in text:
                raise ValueError(f"env: {name!r} is not a variable name, or its value spans lines")
        return value


class EnvironmentInfo(BaseModel):
    """One cached environment image, as `repair-agent image --list` shows it."""
    tag: str
    image_id: str
    scenario: str
    key: str
    created: str
    size_mb: float


def environment_key(env: EnvironmentSection, base_image_id: str, tree: Path) -> str:
    """sha256 of what defines the image: the base image id, the section (its pinned packages and
    install steps), the requirements file it reads and, with install steps, what the build files say
    an install depends on (declared.install_digest: not the version or the readme, so commits of one
    project with the same dependencies share one image; the editable install points at the mounted
    tree, so the code itself is never in the image)."""
    files: dict[str, str | None] = {}
    if env.requirements:
        path = tree / env.requirements
        files[env.requirements] = sha256_file(path) if path.is_symlink() or path.is_file() else None  # a link by its text
    record = {"recipe": RECIPE, "base": base_image_id, "environment": env.model_dump(mode="json"), "files": files,
              "install": install_digest(tree) if env.install else None}
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def environment_tag(key: str) -> str:
    return f"{ENV_REPO}:{key[:16]}"


class ScenarioWithEnvironment(Protocol):
    """What an image is chosen from (a Scenario; a Protocol so this module need not import it)."""
    name: str
    repo: Path
    environment: EnvironmentSection | None


def scenario_image(client, scenario: "ScenarioWithEnvironment", *, log: Log = lambda m: None) -> str:
    """The image a scenario's candidate code runs in: its environment image, or the sandbox image."""
    from .image import ensure_sandbox_image

    if scenario.environment is None:
        return ensure_sandbox_image(client, log=log)
    return ensure_environment_image(client, scenario.environment, scenario.repo, scenario.name, log=log)


def ensure_environment_image(client, env: EnvironmentSection, tree: Path, name: str, *,
                             log: Log = lambda m: None) -> str:
    """The environment's tag, building it (once) when the engine does not have it."""
    base = _base_image(client, env, log)
    base_id = client.images.get(base).id
    if env.requirements and not (tree / env.requirements).is_file():
        raise EnvironmentBuildError(f"environment of {name}: requirements file {env.requirements} is not in {tree}")
    key = environment_key(env, base_id, tree)
    tag = environment_tag(key)
    if _present(client, tag):
        return tag
    # One build per key at a time, across threads and processes (scenarios often share one).
    with machine_lock(f"environment-{key[:16]}"):
        if not _present(client, tag):
            _build(client, env, tree, name, base, key, tag, log)
    return tag


def _present(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _base_image(client, env: EnvironmentSection, log: Log) -> str:
    from .image import ImageBuildError, ensure_sandbox_image

    if env.python is not None:
        try:
            return ensure_sandbox_image(client, log=log, python=env.python)
        except ImageBuildError as exc:
            raise EnvironmentBuildError(f"the sandbox for Python {env.python} cannot be built: {exc}") from None
    if env.base_image is None:
        return ensure_sandbox_image(client, log=log)
    import docker.errors
    import requests.exceptions

    try:
        client.images.get(env.base_image)
    except docker.errors.ImageNotFound:
        log(f"base image {env.base_image} is not present locally; pulling it")
        try:
            client.images.pull(env.base_image)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            # Never a silent fallback: the environment asked for this Python and no other.
            local = sorted(t for image in client.images.list() for t in image.tags
                           if "python" in t or t.startswith(("repair-agent-sandbox", "repair-agent-base")))
            raise EnvironmentBuildError(
                f"base_image {env.base_image} is not available locally and cannot be pulled "
                f"({' '.join(str(exc).split())[:200]}); images available locally: {', '.join(local) or 'none'}"
                " (load one with `docker load`, or leave base_image out to use the sandbox image)") from None
    try:
        return ensure_sandbox_image(client, log=log, base_image=env.base_image)
    except ImageBuildError as exc:
        raise EnvironmentBuildError(f"the sandbox layer on base_image {env.base_image} failed: {exc}") from None


# -- the build -----------------------------------------------------------------------------------

def cache_dir() -> Path:
    from ..resources import cache_root

    return cache_root() / "environments"


def pip_wheel(log: Log) -> Path:
    """pip's own wheel in the cache, downloaded once with the host's pip (its index and certificates)."""
    wheels = cache_dir() / "pip"
    found = sorted(wheels.glob(f"pip-{PIP_VERSION}-*.whl"))
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    log(f"downloading pip {PIP_VERSION} (run from its wheel in bases without pip)")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                           "-d", str(wheels), f"pip=={PIP_VERSION}"], capture_output=True, text=True, timeout=600)
    found = sorted(wheels.glob(f"pip-{PIP_VERSION}-*.whl"))
    if proc.returncode or not found:
        raise EnvironmentBuildError(f"cannot download pip {PIP_VERSION} for the environment build: "
                                f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return found[0]


def _ca_bundle() -> Path | None:
    for var in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if os.environ.get(var) and Path(os.environ[var]).is_file():
            return Path(os.environ[var])
    default = Path("/etc/ssl/certs/ca-certificates.crt")
    return default if default.is_file() else None


# Forwarded into the build so its pip asks the same index, through the same proxy, as the host's.
FORWARDED = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT",
             "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


def pip_setup(has_ca: bool) -> list[str]:
    """Shell lines giving a script pip (from /ra-build), the host's index, proxy and certificates."""
    lines = ["set -eu", "export HOME=/tmp PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore",
             "export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off PIP_NO_INPUT=1",
             "export PATH=/ra-build/bin:$PATH",
             # A tree exported without .git has no version for setuptools-scm, hatch-vcs or pdm's scm
             # backend to read; they would refuse the editable install.
             "export SETUPTOOLS_SCM_PRETEND_VERSION=0.0.0 PDM_BUILD_SCM_VERSION=0.0.0"]
    if has_ca:
        lines.append("export PIP_CERT=/ra-build/ca.crt SSL_CERT_FILE=/ra-build/ca.crt REQUESTS_CA_BUNDLE=/ra-build/ca.crt")
    for var in FORWARDED:
        if os.environ.get(var):
            lines.append(f"export {var}={shlex.quote(os.environ[var])}")
    return lines


def build_script(env: EnvironmentSection, has_ca: bool) -> str:
    """The build's shell script. Each step prints a marker line, so a failure is named by its step."""
    lines = pip_setup(has_ca)
    lines += ["python3 -c 'import sys; print(\"ra-step: python\", sys.version.split()[0])'", "cd /workspace"]
    if env.packages or env.plugins:
        lines += ["echo 'ra-step: packages'",
                  "pip install " + " ".join(shlex.quote(p) for p in (*env.packages, *env.plugins))]
    if env.requirements:
        lines += [f"echo {shlex.quote('ra-step: requirements ' + env.requirements)}",
                  f"pip install -r {shlex.quote(env.requirements)}"]
    for command in env.install:
        lines += [f"echo {shlex.quote('ra-step: install ' + command)}", command]
    if env.install:
        lines += ["echo 'ra-step: import check'", "cd / && python3 -I /ra-build/import_check.py"]
    lines.append("echo 'ra-step: done'")
    return "\n".join(lines) + "\n"




def build_files(build: Path, log: Log) -> tuple[Path, bool]:
    """BUILD/ra-build, mounted read-only at /ra-build: pip (its wheel, run by a shim when the base
    has none) and the host's CA bundle. Returns the directory and whether the bundle is there."""
    ra = build / "ra-build"
    (ra / "bin").mkdir(parents=True)
    shutil.copyfile(pip_wheel(log), ra / "pip.whl")
    ca = _ca_bundle()
    if ca:
        shutil.copyfile(ca, ra / "ca.crt")
    pip = ra / "bin" / "pip"
    pip.write_text('#!/bin/sh\nif python3 -c "import pip" 2>/dev/null; then exec python3 -m pip "$@"; fi\n'
                   'exec python3 /ra-build/pip.whl/pip "$@"\n')
    pip.chmod(0o755)
    return ra, ca is not None


def build_context(tree: Path, build: Path) -> Path:
    """The copy of the tree the build container mounts at /workspace. That container runs as root
    with network: no link out of the tree and no special file is in it (verifier.trees)."""
    work = build / "workspace"
    copy_tree(tree, work)
    return work


def _build(client, env: EnvironmentSection, tree: Path, name: str, base: str, key: str, tag: str, log: Log) -> None:
    import docker.errors
    from docker.types import Mount

    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{key[:16]}-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.log"
    build = Path(tempfile.mkdtemp(prefix="repair-agent-env-"))
    container = None
    started = time.monotonic()
    try:
        work = build_context(tree, build)
        ra, has_ca = build_files(build, log)
        (ra / "build.sh").write_text(build_script(env, has_ca))
        shutil.copyfile(Path(import_check.__file__), ra / "import_check.py")
        log(f"building environment {tag} for {name} on {base} (log: {log_path})")
        container = client.containers.run(
            base, command=["sh", "/ra-build/build.sh"], user="0:0", working_dir="/workspace", detach=True,
            mounts=[absolute_mount(Mount("/workspace", str(work), type="bind")),
                    absolute_mount(Mount("/ra-build", str(ra), type="bind", read_only=True))],
            labels={ROLE_LABEL: BUILD_ROLE, "org.repair-agent.owner-pid": str(os.getpid())},
            name=f"repair-agent-envbuild-{key[:12]}-{os.getpid()}")
        step, lines = "start", []
        with log_path.open("w") as out:
            out.write(f"# environment {tag} for {name}\n# base {base}\n# {env.model_dump_json()}\n")
            for line in stream_lines(container.logs(stream=True, follow=True)):
                out.write(line + "\n")
                out.flush()
                lines.append(line)
                if line.startswith("ra-step: "):
                    step = line.removeprefix("ra-step: ")
                    log(f"  [{time.monotonic() - started:5.1f}s] {step}")
        status = container.wait(timeout=BUILD_TIMEOUT_S)
        code = status.get("StatusCode", -1)
        if code != 0:
            raise EnvironmentBuildError(f"environment of {name}: {describe_failure(step, lines, env)} "
                                    f"(exit {code}); no image was tagged; log: {log_path}")
        roots = next((line.removeprefix("ra-roots: ") for line in lines if line.startswith("ra-roots: ")), "[]")
        generated = json.dumps(_generated(tree, work), sort_keys=True)
        changes = ["USER 10001:10001", "WORKDIR /workspace", 'CMD ["bash"]',
                   f"LABEL {ROLE_LABEL}=environment {KEY_LABEL}={key} {SCENARIO_LABEL}={json.dumps(name)} "
                   f"{IMPORT_ROOTS_LABEL}={json.dumps(roots)} {GENERATED_LABEL}={json.dumps(generated)}"]
        changes += [f"ENV {k}={json.dumps(v)}" for k, v in sorted(env.env.items())]
        repository, _, version = tag.partition(":")
        container.commit(repository=repository, tag=version, changes=changes)
        log(f"built {tag} in {time.monotonic() - started:.1f}s")
    except docker.errors.DockerException as exc:
        raise EnvironmentBuildError(f"environment of {name}: the engine failed: {exc}; log: {log_path}") from None
    finally:
        discard_build(container, build)


def _generated(tree: Path, work: Path) -> dict[str, str]:
    """Python modules the build wrote into its copy of the tree (small, UTF-8, not build output)."""
    found: dict[str, str] = {}
    total = 0
    for path in sorted(work.rglob("*.py")):
        rel = path.relative_to(work)
        if (tree / rel).exists() or path.is_symlink() or not path.is_file() \
                or any(part in _NOT_GENERATED or part.endswith(".egg-info") for part in rel.parts):
            continue
        data = path.read_bytes()
        if len(data) <= GENERATED_MAX_BYTES and total + len(data) <= 4 * GENERATED_MAX_BYTES:
            try:
                found[rel.as_posix()] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            total += len(data)
    return found


def add_generated(client, tag: str, tree: Path, log: Log = lambda m: None) -> list[str]:
    """Write the modules the environment's install generated (GENERATED_LABEL) into a tree that lacks
    them, as a checkout has them after `pip install -e .`; returns their paths."""
    labels = client.images.get(tag).labels or {}
    try:
        files = json.loads(labels.get(GENERATED_LABEL) or "{}")
    except ValueError:
        return []
    written = []
    for rel, text in sorted(files.items()):
        target = tree / rel
        inside = [target, *list(target.parents)[:len(Path(rel).parts) - 1]]
        if ".." in Path(rel).parts or Path(rel).is_absolute() or target.exists() or not target.parent.is_dir() \
                or any(p.is_symlink() for p in inside):  # never written through a link
            continue
        target.write_text(text, encoding="utf-8")
        written.append(rel)
    if written:
        log(f"added what the install generates to the tree: {', '.join(written)}")
    return written


def stream_lines(stream) -> Iterator[str]:
    buf = b""
    for chunk in stream:
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode(errors="replace").rstrip("\r")
    if buf:
        yield buf.decode(errors="replace")


_FAILED_REQ = (re.compile(r"No matching distribution found for (\S+)"),
               re.compile(r"Could not find a version that satisfies the requirement (\S+)"),
               re.compile(r"Failed to build (\S+)"),
               re.compile(r"Building wheel for (\S+) .*error"),
               re.compile(r"Invalid requirement: '?([^'\s]+)"))


def describe_failure(step: str, lines: list[str], env: EnvironmentSection) -> str:
    """Which step failed, and the package pip names when it names one."""
    for line in reversed(lines):
        if line.startswith("ra-error: "):
            return line.removeprefix("ra-error: ")
    for pattern in _FAILED_REQ:
        for line in lines:
            m = pattern.search(line)
            if m:
                return f"installing {m.group(1).strip(chr(39))} failed at step '{step}'"
    # A build backend's traceback ends in its exception; pip's trailer after it ("See above") says nothing.
    raised = last_exception(lines)
    if raised:
        return f"step '{step}' failed: {raised}"[:400]
    return f"step '{step}' failed: {' | '.join(lines[-3:])[:400]}"


# -- list / prune ----------------------------------------------------------------------------------

def list_environments(client) -> list[EnvironmentInfo]:
    found = []
    for image in client.images.list(filters={"label": f"{ROLE_LABEL}=environment"}):
        labels = image.labels or {}
        for tag in image.tags or [f"<untagged {image.short_id}>"]:
            found.append(EnvironmentInfo(tag=tag, image_id=image.id, scenario=labels.get(SCENARIO_LABEL, "?"),
                                         key=labels.get(KEY_LABEL, "?"), created=image.attrs.get("Created", "")[:19],
                                         size_mb=round(image.attrs.get("Size", 0) / 1e6, 1)))
    return sorted(found, key=lambda e: (e.scenario, e.created))


def prune_environments(client, log: Log = print) -> int:
    """Remove every cached environment image (not in use by a container) and leftover build containers."""
    import docker.errors

    for c in client.containers.list(all=True, filters={"label": f"{ROLE_LABEL}={BUILD_ROLE}"}, ignore_removed=True):
        c.remove(force=True, v=True)
    removed = 0
    for info in list_environments(client):
        try:
            client.images.remove(info.tag if not info.tag.startswith("<") else info.image_id)
            removed += 1
            log(f"removed {info.tag} ({info.scenario})")
        except docker.errors.APIError as exc:
            log(f"kept {info.tag}: {exc.explanation or exc}")
    return removed


def discard_build(container, build: Path) -> None:
    """A build or resolve container and its mounted directory, gone whatever happened."""
    import docker  # the caller has it loaded already

    if container is not None:
        try:
            container.remove(force=True, v=True)
        except docker.errors.DockerException:
            pass
    shutil.rmtree(build, ignore_errors=True)
