"""Build and cache the sandbox Docker image.

The sandbox image is built from the project's ``Dockerfile`` and tagged with a
hash of its inputs (Dockerfile bytes + base image name), so it is rebuilt only
when those change. When the base image cannot be pulled (no registry
reachable), a minimal Debian base is built locally with debootstrap from the
host's Debian mirror and imported into the engine instead.
"""

from __future__ import annotations

import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import docker
import docker.errors
import requests.exceptions

from ..resources import data_path, machine_lock

if TYPE_CHECKING:  # pragma: no cover
    from docker import DockerClient

__all__ = ["DEFAULT_BASE_IMAGE", "ImageBuildError", "ensure_sandbox_image"]

DEFAULT_BASE_IMAGE = "debian:bookworm-slim"
BASE_IMAGE_ENV = "REPAIR_AGENT_BASE_IMAGE"

SANDBOX_REPO = "repair-agent-sandbox"
LOCAL_BASE_REPO = "repair-agent-base"

# Local base recipe. Everything that affects the resulting rootfs goes into the
# tag hash, so changing any of it yields a new base (and thus a new sandbox).
_SUITE = "bookworm"
# Another Python is another Debian release's python3, its base built the same way (a scenario's
# `[environment] python`); the default release's Python is the sandbox image itself.
PYTHON_SUITES = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
_VARIANT = "minbase"
_PACKAGES = ("python3", "python3-pytest", "python3-pytest-timeout", "faketime", "git")
# bullseye's Python 3.9 keeps most of distutils in its own package, and pip (run from its wheel by
# an environment build) needs it before Python 3.10.
_SUITE_PACKAGES = {"bullseye": ("python3-distutils",)}


def _packages(suite: str) -> tuple[str, ...]:
    return _PACKAGES + _SUITE_PACKAGES.get(suite, ())
# Paths (globs relative to the rootfs) dropped before import: caches, docs and
# device nodes are dead weight in an image (Docker provides /dev at runtime).
_STRIP = (
    "var/lib/apt/lists/*",
    "var/cache/apt/*",
    "var/cache/debconf/*-old",
    "var/log/*",
    "usr/share/doc/*",
    "usr/share/man/*",
    "usr/share/info/*",
    "usr/share/locale/*",
    "dev/*",
    "tmp/*",
)
# Imported tarballs carry no config; give the base what a registry image has.
_IMPORT_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["bash"]',
    "LABEL org.repair-agent.role=base",
)
_DEFAULT_MIRROR = "http://deb.debian.org/debian"

Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """The sandbox image (or its local base) could not be built."""


def ensure_sandbox_image(
    client: DockerClient,
    *,
    log: Log = lambda m: None,
    base_image: str | None = None,
    python: str | None = None,
) -> str:
    """Return the tag of a sandbox image built from the project's Dockerfile, building it (and, when the base cannot be pulled, a local Debian base) if needed."""
    try:
        dockerfile = data_path("Dockerfile").read_bytes()
    except OSError as exc:
        raise ImageBuildError(f"cannot read the sandbox Dockerfile: {exc}") from exc

    suite = PYTHON_SUITES[python] if python else _SUITE
    if suite != _SUITE:
        requested = f"debian:{suite}-slim"
    else:
        requested = base_image or os.environ.get(BASE_IMAGE_ENV) or DEFAULT_BASE_IMAGE
    local_base = _local_base_tag(suite)
    wanted = _sandbox_tag(dockerfile, requested)
    fallback = _sandbox_tag(dockerfile, local_base)

    # Hot path: a single listing answers both "is the sandbox built?" and "is
    # the requested base local?" (the latter decides whether a sandbox built
    # on the debootstrap fallback is an acceptable answer).
    def built(refs: set[str]) -> str | None:
        if wanted in refs:
            return wanted
        return fallback if _normalize(requested) not in refs and fallback in refs else None

    refs = _local_refs(client)
    if (found := built(refs)) is not None:
        return found
    # One builder per image at a time: the others wait, then find its image (without the lock, the
    # suite's workers on a fresh machine each ran debootstrap at once, and raced on apt's lock).
    with machine_lock(f"image-{wanted}"):
        refs = _local_refs(client)
        if (found := built(refs)) is not None:
            return found
        base = _resolve_base(client, requested, local_base, log, suite)
        tag = _sandbox_tag(dockerfile, base)
        if tag in refs:  # only possible when we fell back after all
            return tag
        _build_sandbox(client, dockerfile, base, tag, log)
        return tag


# --------------------------------------------------------------------------- tags


def _sandbox_tag(dockerfile: bytes, base: str) -> str:
    digest = hashlib.sha256(dockerfile + b"\0" + base.encode()).hexdigest()
    return f"{SANDBOX_REPO}:{digest[:12]}"


def _local_base_tag(suite: str = _SUITE) -> str:
    recipe = "\n".join(
        [f"suite={suite}", f"variant={_VARIANT}", "packages=" + ",".join(_packages(suite))]
        + [f"strip={p}" for p in _STRIP]
        + [f"change={c}" for c in _IMPORT_CHANGES]
    )
    return f"{LOCAL_BASE_REPO}:{suite}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def _normalize(ref: str) -> str:
    """Spell a reference the way the engine lists it in RepoTags/RepoDigests."""
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/library/"):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
            break
    last = ref.rsplit("/", 1)[-1]
    if "@" not in ref and ":" not in last:
        ref += ":latest"
    return ref


def _local_refs(client: DockerClient) -> set[str]:
    """All tags and digests known to the engine, in one API call."""
    refs: set[str] = set()
    for image in client.api.images():
        for ref in (image.get("RepoTags") or []) + (image.get("RepoDigests") or []):
            refs.add(ref)
    return refs


# --------------------------------------------------------------------------- base


def _resolve_base(client: DockerClient, requested: str, local_base: str, log: Log, suite: str = _SUITE) -> str:
    """Name of a base image that exists locally: the requested one if it is
    present or pullable, else the debootstrap-built fallback."""
    try:
        client.images.get(requested)
        return requested
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.APIError:
        pass  # e.g. an invalid reference; the pull below reports it
    log(f"base image {requested} not present locally; pulling it")
    start = time.monotonic()
    try:
        client.images.pull(requested)
        log(f"pulled {requested} in {time.monotonic() - start:.1f}s")
        return requested
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        reason = _one_line(getattr(exc, "explanation", None) or str(exc) or type(exc).__name__)
        log(f"cannot pull {requested} ({reason}); using a local Debian base ({local_base})")
    try:
        client.images.get(local_base)
        return local_base
    except docker.errors.ImageNotFound:
        pass
    _build_local_base(client, local_base, log, suite)
    return local_base


def _one_line(text: str, limit: int = 160) -> str:
    # Keep the tail: that is where the engine puts the cause ("no such host").
    text = " ".join(str(text).split())
    return text if len(text) <= limit else "..." + text[-limit:]


def _build_local_base(client: DockerClient, tag: str, log: Log, suite: str = _SUITE) -> None:
    debootstrap = _ensure_debootstrap(log)
    mirror = _host_debian_mirror()
    # /var/tmp is disk-backed on most hosts; /tmp may be a small/noexec tmpfs
    # and debootstrap executes binaries inside the rootfs.
    parent = "/var/tmp" if os.path.isdir("/var/tmp") and os.access("/var/tmp", os.W_OK) else None
    workdir = Path(tempfile.mkdtemp(prefix="repair-agent-base-", dir=parent))
    rootfs = workdir / "rootfs"
    archive = workdir / "rootfs.tar"
    try:
        log(f"building local base {tag}: debootstrap {suite} from {mirror} (takes ~1 min)")
        start = time.monotonic()
        _run(
            [
                debootstrap,
                f"--variant={_VARIANT}",
                "--include=" + ",".join(_packages(suite)),
                suite,
                str(rootfs),
                mirror,
            ],
            what="debootstrap",
        )
        log(f"debootstrap finished in {time.monotonic() - start:.1f}s")

        # debootstrap normally unmounts what it mounted; make sure, because
        # stripping or tarring a mounted /proc or bind-mounted /dev is harmful.
        _unmount_under(rootfs)
        _strip(rootfs)

        t = time.monotonic()
        _run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(archive), "."], what="tar")
        log(f"packed rootfs ({archive.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - t:.1f}s")

        t = time.monotonic()
        repo, _, version = tag.partition(":")
        try:
            client.api.import_image_from_file(
                str(archive), repository=repo, tag=version, changes=list(_IMPORT_CHANGES)
            )
            client.images.get(tag)  # import errors can hide in the response body
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise ImageBuildError(f"importing local base {tag} failed: {exc}") from exc
        log(f"imported {tag} in {time.monotonic() - t:.1f}s (base total {time.monotonic() - start:.1f}s)")
    finally:
        _unmount_under(rootfs)
        shutil.rmtree(workdir, ignore_errors=True)


def _ensure_debootstrap(log: Log) -> str:
    found = _which("debootstrap")
    if found:
        if os.geteuid() != 0:
            raise ImageBuildError(
                "building a local Debian base with debootstrap requires root; run as root "
                f"or set {BASE_IMAGE_ENV} to an image that is available locally"
            )
        return found
    if os.geteuid() != 0 or not _which("apt-get"):
        raise ImageBuildError(
            "no registry reachable and debootstrap is not installed; install debootstrap "
            f"(and run as root) or set {BASE_IMAGE_ENV} to an image that is available locally"
        )
    # apt waits for a lock another apt holds (a person's upgrade) instead of failing at once.
    wait = ["-o", "DPkg::Lock::Timeout=300"]
    cmd = ["apt-get", *wait, "install", "-y", "--no-install-recommends", "debootstrap"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with machine_lock("apt-install-debootstrap"):
        found = _which("debootstrap")  # another builder may have installed it meanwhile
        if found:
            return found
        log("debootstrap not found; running: " + " ".join(cmd))
        if subprocess.run(cmd, env=env, capture_output=True, text=True).returncode != 0:
            # Usually stale/missing package lists; refresh only when needed.
            log("install failed; running apt-get update and retrying")
            _run(["apt-get", *wait, "update"], what="apt-get update", env=env)
            _run(cmd, what="apt-get install debootstrap", env=env)
    found = _which("debootstrap")
    if not found:
        raise ImageBuildError("debootstrap was installed but is not on PATH")
    return found


def _which(name: str) -> str | None:
    # Non-root PATHs often lack the sbin dirs where debootstrap lives.
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
    return shutil.which(name, path=path)


def _host_debian_mirror() -> str:
    """A Debian (not -security/-updates, not Ubuntu) mirror from apt sources."""
    uris: list[str] = []
    for source in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        uris += _deb822_uris(_read(source))
    for source in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
        for line in _read(source).splitlines():
            words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) >= 2 and words[0] == "deb":
                uris.append(words[1])
    for uri in uris:
        if re.match(r"^https?://", uri) and uri.rstrip("/").endswith("/debian"):
            return uri.rstrip("/")
    return _DEFAULT_MIRROR


def _deb822_uris(text: str) -> Iterable[str]:
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
            yield from fields.get("uris", "").split()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _strip(rootfs: Path) -> None:
    root = os.path.realpath(rootfs)
    for pattern in _STRIP:
        for path in glob.glob(os.path.join(root, pattern)):
            # Never follow a symlinked parent out of the rootfs onto the host.
            if not os.path.realpath(os.path.dirname(path)).startswith(root + os.sep):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


def _unmount_under(rootfs: Path) -> None:
    root = os.path.realpath(rootfs)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    # Field 5 is the mount point, with spaces etc. octal-escaped.
    points = [
        re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
        for line in lines
        if len(line.split()) > 4
    ]
    for point in sorted({p for p in points if p == root or p.startswith(root + "/")}, reverse=True):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)


def _run(cmd: list[str], *, what: str, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise ImageBuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


# --------------------------------------------------------------------------- sandbox


def _build_sandbox(client: DockerClient, dockerfile: bytes, base: str, tag: str, log: Log) -> None:
    log(f"building sandbox image {tag} on {base}")
    start = time.monotonic()
    try:
        # Only the Dockerfile goes into the context: nothing from the project
        # (or the repo under repair) can leak into the image.
        client.images.build(
            fileobj=io.BytesIO(dockerfile),
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            rm=True,
            forcerm=True,
            pull=False,
        )
    except docker.errors.BuildError as exc:
        lines: list[str] = []
        for chunk in exc.build_log or []:
            if isinstance(chunk, dict):
                text = chunk.get("stream") or chunk.get("error") or ""
            else:
                text = str(chunk)
            lines += text.rstrip("\n").splitlines()
        tail = "\n".join(lines[-20:])
        raise ImageBuildError(f"building sandbox image {tag} failed: {exc.msg}\n{tail}") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageBuildError(f"building sandbox image {tag} failed: {exc}") from exc
    log(f"built {tag} in {time.monotonic() - start:.1f}s")
