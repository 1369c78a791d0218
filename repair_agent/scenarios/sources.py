"""Where a scenario's pristine repository comes from when it is not a directory next to the manifest.

A manifest may name a `[source]` instead of `repo`:

    [source]                                   # a PyPI sdist, pinned by version and sha256
    pypi = "python-slugify==9.2.0"
    sha256 = "cee32948..."

    [source]                                   # a git repository (local path or URL) at a commit
    git = "../some-project"                    # relative to the manifest, or https://...
    rev = "0123456789abcdef0123456789abcdef01234567"

The source is fetched once into the cache (REPAIR_AGENT_CACHE_DIR, default ~/.cache/repair-agent),
verified (the sdist's sha256, the checked-out commit), and unpacked without its VCS metadata; nothing
third-party is kept in this repository. Each tree is renamed into place only when complete, so a
cached tree is always a whole one.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifier.trees import TreeRefused, extract_tar, extract_zip

from ..resources import build_once

PYPI_URL_ENV = "REPAIR_AGENT_PYPI_URL"  # a PyPI-compatible JSON API (default https://pypi.org/pypi)
DEFAULT_PYPI_URL = "https://pypi.org/pypi"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
MAX_SDIST_BYTES = 64 * 1024 * 1024


class SourceError(ValueError):
    """A source that cannot be fetched or does not verify; the message names the source."""


class SourceSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    git: str | None = None
    rev: str | None = Field(None, pattern=r"^[0-9a-f]{40}$")
    pypi: str | None = None
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _one_kind(self) -> "SourceSection":
        if (self.git is None) == (self.pypi is None):
            raise ValueError("give exactly one of git (with rev) or pypi (with sha256)")
        if self.git is not None and (self.rev is None or self.sha256 is not None):
            raise ValueError("a git source needs rev (a full 40-hex commit id) and no sha256")
        if self.pypi is not None:
            if not _PIN.match(self.pypi):
                raise ValueError(f"pypi must be 'name==version', got {self.pypi!r}")
            if self.sha256 is None or self.rev is not None:
                raise ValueError("a pypi source needs sha256 (of the sdist) and no rev")
        return self

    def describe(self) -> str:
        return f"pypi {self.pypi}" if self.pypi else f"git {self.git} at {self.rev}"


def fetch_source(source: SourceSection, manifest_dir: Path, cache: Path) -> Path:
    """The source's tree in the cache, fetched and verified the first time."""
    if source.pypi:
        name, version = _PIN.match(source.pypi).groups()  # type: ignore[union-attr]
        key, label = f"pypi\0{name.lower()}\0{version}\0{source.sha256}", f"{name}-{version}"
    else:
        location = _git_location(source.git or "", manifest_dir)
        key, label = f"git\0{location}\0{source.rev}", f"{Path(location.rstrip('/')).name.removesuffix('.git')}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    target = cache / "sources" / digest / label

    def fetch(tree: Path) -> None:
        if source.pypi:
            _fetch_sdist(source, cache, tree)
        else:
            _fetch_git(location, source.rev or "", tree)

    return build_once(target, fetch)


# -- PyPI --------------------------------------------------------------------------------------

def _session_verify() -> str | bool:
    # The host's pip trusts what its configuration says; a download for pip's index should too.
    for var in ("REQUESTS_CA_BUNDLE", "PIP_CERT", "SSL_CERT_FILE"):
        if os.environ.get(var) and Path(os.environ[var]).is_file():
            return os.environ[var]
    return True


def sdist_url(name: str, version: str) -> tuple[str, str, str]:
    """(url, filename, sha256 PyPI publishes) of a release's sdist."""
    import requests  # only when something is fetched: most commands never need it

    api = os.environ.get(PYPI_URL_ENV, DEFAULT_PYPI_URL).rstrip("/")
    url = f"{api}/{name}/{version}/json"
    try:
        resp = requests.get(url, timeout=60, verify=_session_verify())
    except requests.RequestException as exc:
        raise SourceError(f"pypi {name}=={version}: the index at {api} does not answer: {exc}") from None
    if resp.status_code == 404:
        # Some mirrors serve only the project-level document.
        resp = requests.get(f"{api}/{name}/json", timeout=60, verify=_session_verify())
        if resp.status_code == 200:
            files = resp.json().get("releases", {}).get(version)
            if files is None:
                raise SourceError(f"pypi {name}=={version}: no such release on {api}")
            return _pick_sdist(name, version, files, resp.url)
    if resp.status_code != 200:
        raise SourceError(f"pypi {name}=={version}: {url} answered HTTP {resp.status_code}")
    return _pick_sdist(name, version, resp.json().get("urls", []), resp.url)


def _pick_sdist(name: str, version: str, files: list[dict], base: str) -> tuple[str, str, str]:
    sdists = [f for f in files if f.get("packagetype") == "sdist"]
    if not sdists:
        raise SourceError(f"pypi {name}=={version}: the release has no sdist (only wheels)")
    f = sdists[0]
    return urllib.parse.urljoin(base, f["url"]), f["filename"], f.get("digests", {}).get("sha256", "")


def _fetch_sdist(source: SourceSection, cache: Path, tree: Path) -> None:
    import requests  # only when something is fetched: most commands never need it

    name, version = _PIN.match(source.pypi or "").groups()  # type: ignore[union-attr]
    url, filename, published = sdist_url(name, version)
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / filename
    if not (archive.is_file() and _sha256(archive) == source.sha256):
        partial = archive.with_name(archive.name + f".{os.getpid()}.part")
        try:
            with requests.get(url, timeout=120, stream=True, verify=_session_verify()) as resp:
                if resp.status_code != 200:
                    raise SourceError(f"pypi {source.pypi}: downloading {url} answered HTTP {resp.status_code}")
                size = 0
                with partial.open("wb") as out:
                    for chunk in resp.iter_content(1 << 16):
                        size += len(chunk)
                        if size > MAX_SDIST_BYTES:
                            raise SourceError(f"pypi {source.pypi}: {filename} is larger than {MAX_SDIST_BYTES} bytes")
                        out.write(chunk)
        except requests.RequestException as exc:
            partial.unlink(missing_ok=True)
            raise SourceError(f"pypi {source.pypi}: downloading {url} failed: {exc}") from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        actual = _sha256(partial)
        if actual != source.sha256:
            # Kept aside for a look, never used: the manifest's pin is the only trusted value.
            rejected = partial.with_name(f"{filename}.sha256-mismatch")
            os.replace(partial, rejected)
            raise SourceError(f"pypi {source.pypi}: sha256 mismatch for {filename}: the manifest pins "
                              f"{source.sha256}, the download is {actual}"
                              + (f" (PyPI publishes {published})" if published else "")
                              + f"; the download was kept at {rejected}")
        os.replace(partial, archive)
    unpack_sdist(archive, tree)


def unpack_sdist(archive: Path, tree: Path) -> None:
    """The sdist's single top-level directory becomes `tree`. The sha256 pin authenticates nothing
    when the manifest's author is the attacker, so the archive is unpacked by the project's own
    checks (verifier.trees): no escaping member, no link out, no special file, bounded."""
    tmp = tree.parent / (tree.name + ".unpack")
    try:
        if archive.name.endswith(".zip"):
            extract_zip(archive, tmp)
        else:
            extract_tar(archive, tmp)
    except TreeRefused as exc:
        raise SourceError(f"sdist {exc}") from None
    tops = [p for p in tmp.iterdir()]
    root = tops[0] if len(tops) == 1 and tops[0].is_dir() else tmp
    os.rename(root, tree)
    shutil.rmtree(tmp, ignore_errors=True)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- git ---------------------------------------------------------------------------------------

def _git_location(git: str, manifest_dir: Path) -> str:
    if re.match(r"^[a-z][a-z0-9+.-]*://", git) or re.match(r"^[\w.-]+@[\w.-]+:", git):
        return git
    path = (manifest_dir / git).resolve()
    if not path.exists():
        raise SourceError(f"git {git}: {path} does not exist")
    return str(path)


def _fetch_git(location: str, rev: str, tree: Path) -> None:
    """The commit's files (no .git), via a bare fetch of that commit and `git archive`."""
    bare = tree.parent / "bare.git"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CEILING_DIRECTORIES": str(tree.parent)}

    def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=600)

    git("init", "--bare", "-q", str(bare))
    fetched = git("fetch", "-q", "--depth=1", location, rev, cwd=bare)
    if fetched.returncode:
        # Servers (and local repositories) that refuse fetching an unadvertised commit by id.
        fetched = git("fetch", "-q", location, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", cwd=bare)
    if fetched.returncode:
        raise SourceError(f"git {location}: fetch failed: {fetched.stderr.decode(errors='replace').strip()[:500]}")
    resolved = git("rev-parse", "--verify", "-q", f"{rev}^{{commit}}", cwd=bare)
    if resolved.returncode or resolved.stdout.decode().strip() != rev:
        raise SourceError(f"git {location}: commit {rev} is not in the repository")
    tree.mkdir()
    archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=bare, env=env, capture_output=True,
                             timeout=600)
    if archive.returncode:
        raise SourceError(f"git {location}: archive of {rev} failed: {archive.stderr.decode(errors='replace')[:500]}")
    tar_path = tree.parent / "tree.tar"
    tar_path.write_bytes(archive.stdout)
    try:
        extract_tar(tar_path, tree)
    except TreeRefused as exc:
        raise SourceError(f"git {location} at {rev}: {exc}") from None


def source_record(source: SourceSection) -> str:
    """A stable text of what defines the source (for cache keys of what is built on it)."""
    return json.dumps(source.model_dump(), sort_keys=True)
