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
import fcntl
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
from verifier.trees import copy_tree, sha256_file

from .declared import BUILD_FILES as BUILD_FILES, Declared, install_digest, normalize, read_declared, requirement_name
from .in_build import pytest_starts


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
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{key[:16]}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
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


def _pip_setup(has_ca: bool) -> list[str]:
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
    lines = _pip_setup(has_ca)
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


# Run in the build container after the install commands: a package of the tree that imports from
# anywhere but /workspace was installed as a copy, and a candidate's patch would never run.
IMPORT_CHECK = r'''
import importlib.util, json, os, sys
root = "/workspace"
found = []
names = set()
for base in (root, os.path.join(root, "src")):
    if not os.path.isdir(base):
        continue
    for entry in os.listdir(base):
        path = os.path.join(base, entry)
        if os.path.isfile(os.path.join(path, "__init__.py")) and entry.isidentifier():
            names.add(entry)
names -= {"tests", "test", "testing", "docs", "benchmark", "benchmarks"}
copies = []
for name in sorted(names):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    if spec is None:
        continue
    where = (list(spec.submodule_search_locations or []) or [spec.origin or ""])[0]
    if where and not os.path.realpath(where).startswith(root + "/"):
        copies.append(f"{name} -> {where}")
    elif where:
        found.append(where)
if copies:
    print("ra-error: installed as a copy, not from /workspace (use an editable install, pip install -e .): "
          + "; ".join(copies))
    sys.exit(3)
roots = sorted({os.path.relpath(os.path.dirname(os.path.realpath(w)), root) for w in found})
print("ra-roots: " + json.dumps(roots))
print("ra-step: import check ok:", ", ".join(sorted(names)) or "no package directories")
'''


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
        (ra / "import_check.py").write_text(IMPORT_CHECK)
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
            for line in _lines(container.logs(stream=True, follow=True)):
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
        _discard(container, build)


def _generated(tree: Path, work: Path) -> dict[str, str]:
    """Python modules the build wrote into its copy of the tree (small, UTF-8, not build output)."""
    found: dict[str, str] = {}
    for path in sorted(work.rglob("*.py")):
        rel = path.relative_to(work)
        if (tree / rel).exists() or path.is_symlink() or not path.is_file() \
                or any(part in _NOT_GENERATED or part.endswith(".egg-info") for part in rel.parts):
            continue
        data = path.read_bytes()
        if len(data) <= GENERATED_MAX_BYTES and sum(map(len, found.values())) + len(data) <= 4 * GENERATED_MAX_BYTES:
            try:
                found[rel.as_posix()] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
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
        if ".." in Path(rel).parts or Path(rel).is_absolute() or target.exists() or not target.parent.is_dir():
            continue
        target.write_text(text, encoding="utf-8")
        written.append(rel)
    if written:
        log(f"added what the install generates to the tree: {', '.join(written)}")
    return written


def _lines(stream) -> Iterator[str]:
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


_EXCEPTION = re.compile(r"^\s*((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): .+)$")


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
    for line in reversed(lines):
        m = _EXCEPTION.match(line)
        if m:
            return f"step '{step}' failed: {m.group(1)}"[:400]
    return f"step '{step}' failed: {' | '.join(lines[-3:])[:400]}"


# -- detection: what a tree declares, resolved to pinned packages -----------------------------------

EnvironmentOption = str  # "auto", "none", "declared" (auto when the tree declares dependencies), or a TOML file


def environment_option(option: EnvironmentOption, tree: Path, *, client=None, log: Log = lambda m: None
                       ) -> EnvironmentSection | None:
    """The `--environment` of an import or `run --repo`: "none" (the sandbox image), "auto" (what the
    tree declares, resolved), "declared" (auto when the tree declares dependencies, else none), or
    the path of a TOML file holding the fields of `[environment]` (at its top or in that table)."""
    if option == "none":
        return None
    if option not in ("auto", "declared"):
        return load_environment_file(Path(option))
    declared = read_declared(tree)
    if option == "declared" and not declared.anything:
        return None
    return detect_environment(declared, client=client, log=log)


def load_environment_file(path: Path) -> EnvironmentSection:
    import tomllib

    from pydantic import ValidationError

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return EnvironmentSection.model_validate(data.get("environment", data))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EnvironmentBuildError(f"--environment {path}: cannot be read: {exc}") from None
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'environment'}: {e['msg']}" for e in exc.errors())
        raise EnvironmentBuildError(f"--environment {path}: not an [environment] section: {fields}") from None


def detect_environment(declared: Declared, *, client=None, log: Log = lambda m: None) -> EnvironmentSection | None:
    """The environment a tree declares: its requirements, the third-party imports of its tests and
    the plugins its tests use, resolved to pinned versions on the sandbox image; and an editable
    install of the tree itself (without its dependencies: they are the pinned packages)."""
    install = ("pip install --no-deps -e .",) if declared.installable else ()
    python = declared.python
    if python:
        log(f"Python {python}: the Python the tree's declarations point to (classifiers, requires-python)")
    if not declared.anything:
        return EnvironmentSection(install=install, python=python) if install or python else None
    if client is None:
        import docker

        try:
            client = docker.from_env()
        except docker.errors.DockerException as exc:
            raise EnvironmentBuildError(f"resolving the declared requirements needs a Docker Engine: {exc}") from None
    # pytest is the image's (each Python's Debian release brings its own); a project's pin of it is
    # not followed, so its plugins resolve against the pytest that will run them.
    wanted = [r for r in [*declared.requirements, *declared.plugins] if requirement_name(r) != "pytest"]
    if len(wanted) < len(declared.requirements) + len(declared.plugins):
        log("the tree's pytest requirement is not followed: the image's pytest runs the tests")
    pinned = resolve_requirements(client, wanted, declared.guesses, log=log, python=python)
    plugins = {normalize(p) for p in declared.plugins}
    names = {requirement_name(p) for p in pinned}
    # pytest-cov, when the project's addopts ask for coverage, would write its data into the tree
    # (read-only where the importers run tests) and measure nothing anyone reads.
    env = {"PYTEST_ADDOPTS": "--no-cov"} if "pytest-cov" in names else {}
    return EnvironmentSection(packages=tuple(p for p in pinned if requirement_name(p) not in plugins),
                              plugins=tuple(p for p in pinned if requirement_name(p) in plugins), install=install,
                              env=env, python=python)


# The resolver's report: what pip would install on the base (already there: left out), pytest held at
# the base's version so that plugins resolve to releases that work with it (and with pytest-timeout).
RESOLVE_SCRIPT = """
python3 - > /tmp/constraints.txt <<'EOF'
# pytest and the packages it runs on held at the image's versions: a plugin that wants a newer
# pluggy would otherwise upgrade it under the image's pytest and break it. (Debian's metadata of
# its pytest does not list these, so they are named.)
import importlib.metadata as md
for name in ("pytest", "pytest-timeout", "pluggy", "py", "iniconfig"):
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        pass
EOF
pip install --quiet --report /tmp/report.json -c /tmp/constraints.txt -r /ra-build/wanted.txt
python3 /ra-build/pytest_starts.py
python3 -c 'import json; r = json.load(open("/tmp/report.json")); print("ra-pinned: " + json.dumps(sorted(
    i["metadata"]["name"] + "==" + i["metadata"]["version"] for i in r["install"])))'
"""
MAX_BROKEN_PLUGINS = 8


def resolve_requirements(client, requirements: list[str], guesses: list[str], *,
                         log: Log = lambda m: None, python: str | None = None) -> tuple[str, ...]:
    """Pinned `name==version` of everything pip would install on the sandbox image for these
    requirements, resolved once (with the network) and then read from the cache, so commits of one
    project that declare the same requirements get the same pins and share one image. A guess (an
    import name) that no index has is left out, with a line in the log."""
    from .image import ImageBuildError, ensure_sandbox_image

    try:
        base = ensure_sandbox_image(client, log=log, python=python)
    except ImageBuildError as exc:
        raise EnvironmentBuildError(f"the sandbox for Python {python or 'default'} cannot be built: {exc}") from None
    wanted = sorted(dict.fromkeys(requirements)), sorted(dict.fromkeys(guesses))
    key = hashlib.sha256(json.dumps([RECIPE, client.images.get(base).id, *wanted]).encode()).hexdigest()
    cached = cache_dir() / "resolved" / f"{key[:32]}.json"
    if cached.is_file():
        return tuple(json.loads(cached.read_text())["pinned"])
    reqs, left = list(wanted[0]), list(wanted[1])
    capped: list[str] = []
    while True:
        log(f"resolving {len(reqs) + len(left)} requirement(s) on {base}: {', '.join([*reqs, *left])[:300]}")
        code, lines = _run_resolver(client, base, [*reqs, *left, *capped], log)
        pinned = next((json.loads(line.removeprefix("ra-pinned: ")) for line in lines
                       if line.startswith("ra-pinned: ")), None)
        if code == 0 and pinned is not None:
            break
        broken = next((line.removeprefix("ra-broken: ") for line in lines if line.startswith("ra-broken: ")), None)
        if broken and len(capped) < MAX_BROKEN_PLUGINS:
            # Its metadata admitted the image's pytest, but it does not start with it: an older release.
            name, _, version = broken.partition("==")
            log(f"{broken} does not start with the image's pytest; choosing a release before {version}")
            capped.append(f"{name}<{version}")
            continue
        missing = next((m.group(1) for line in lines for m in [re.search(r"No matching distribution found for "
                                                                         r"([A-Za-z0-9._-]+)", line)] if m), None)
        guessed = [g for g in left if missing and normalize(g) == normalize(missing)]
        if not guessed:
            said = next((line.removeprefix("ra-error: ") for line in lines if line.startswith("ra-error: ")), None)
            raise EnvironmentBuildError(f"resolving the declared requirements failed (exit {code}; pytest held at the "
                                        f"image's version): {said or ' | '.join(lines[-4:])[:500]}")
        log(f"left out {guessed[0]}: imported by the tests, declared nowhere, and no index has it")
        left.remove(guessed[0])
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"requirements": wanted[0], "guesses": wanted[1], "pinned": pinned}))
    return tuple(pinned)


def _run_resolver(client, base: str, requirements: list[str], log: Log) -> tuple[int, list[str]]:
    import docker.errors
    from docker.types import Mount

    build = Path(tempfile.mkdtemp(prefix="repair-agent-resolve-"))
    container = None
    try:
        ra, has_ca = build_files(build, log)
        (ra / "wanted.txt").write_text("\n".join(requirements) + "\n")
        (ra / "resolve.sh").write_text("\n".join(_pip_setup(has_ca)) + RESOLVE_SCRIPT)
        shutil.copyfile(Path(pytest_starts.__file__), ra / "pytest_starts.py")
        container = client.containers.run(
            base, command=["sh", "/ra-build/resolve.sh"], user="0:0", detach=True,
            mounts=[Mount("/ra-build", str(ra), type="bind", read_only=True)],
            labels={ROLE_LABEL: BUILD_ROLE, "org.repair-agent.owner-pid": str(os.getpid())})
        code = container.wait(timeout=BUILD_TIMEOUT_S).get("StatusCode", -1)
        return code, list(_lines([container.logs()]))
    except docker.errors.DockerException as exc:
        raise EnvironmentBuildError(f"resolving the declared requirements: the engine failed: {exc}") from None
    finally:
        _discard(container, build)


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


def _discard(container, build: Path) -> None:
    """A build or resolve container and its mounted directory, gone whatever happened."""
    import docker  # the caller has it loaded already

    if container is not None:
        try:
            container.remove(force=True, v=True)
        except docker.errors.DockerException:
            pass
    shutil.rmtree(build, ignore_errors=True)
