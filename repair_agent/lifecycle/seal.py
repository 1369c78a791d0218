"""Sealed runs: what `release` relies on, HMAC'd when a run ends with a key kept outside the run
directory, so a rewritten run directory is detected.

The journal's hash chain is a checksum anyone can recompute; the seal is not: its key is the
user's (`seal.key` in $REPAIR_AGENT_STATE_DIR, else $XDG_STATE_HOME/repair-agent, else
~/.local/state/repair-agent), created 0600 on first use. The seal names run.json, candidate.diff,
scenario.json, the report a person reads (report.json, report.md), the scenario manifest they point at (path and bytes), a `run --repo` run's origin
record beside it (where release writes), the held-out cases and reference fix scenario.json names,
the protected-file manifest and pristine tree hashes, the verified diff and the journal's last
record: any of them rewritten, or a seal made with another key, and `release` refuses.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from verifier.files import atomic_write
from verifier.spec import sha256_file

from ..loop.journal import read_journal
from ..scenarios.scenario_files import origin_record

SEAL_FILE = "seal.json"
KEY_FILE = "seal.key"
STATE_DIR_ENV = "REPAIR_AGENT_STATE_DIR"
# report.html is not here: a decision renders it again from report.json.
SEALED_FILES = ("run.json", "candidate.diff", "scenario.json", "report.json", "report.md")
CHECK_INPUTS = ("heldout", "reference_fix")  # scenario.json's names of the behaviour checks' files


class SealError(RuntimeError):
    """The run cannot be trusted for release; the message says what is wrong."""


class RunNotSealed(SealError):
    """A run from before runs were sealed (or whose seal was removed): readable, not releasable."""


class SealBroken(SealError):
    """The run directory no longer matches its seal, or the seal was not made with this user's key."""


class RunSeal(BaseModel):
    """`RUN/seal.json`. `hmac` is over every other field (canonical JSON)."""

    version: Literal[1] = 1
    run_id: str
    status: str
    diff_sha256: str
    files: dict[str, str]               # name in the run directory -> sha256 of its bytes
    manifest: str                       # the scenario manifest scenario.json names
    manifest_sha256: str                # ... and its bytes when the run ended
    origin_sha256: str | None = None    # a `run --repo` run: the origin record beside it (where release writes)
    # The behaviour checks' inputs scenario.json names (held-out cases, reference fix): path -> sha256.
    checks: dict[str, str] = {}
    protected_manifest_sha256: str | None
    pristine_tree_sha256: str | None
    journal_lines: int
    journal_head: str | None            # the last line's record_sha256
    key_id: str                         # which key (a hash of it; says nothing about the key)
    hmac: str = ""

    def body(self) -> bytes:
        return json.dumps(self.model_dump(exclude={"hmac"}), sort_keys=True, separators=(",", ":")).encode()


def state_dir() -> Path:
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "repair-agent"


def seal_key() -> bytes:
    """The user's key, created 0600 on first use (O_EXCL: two first uses agree on one key)."""
    path = state_dir() / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    if path.stat().st_mode & 0o077:
        raise SealError(f"{path} can be read by others; a seal key must be the user's alone (chmod 600 {path})")
    key = path.read_text().strip()
    if len(key) < 32:
        raise SealError(f"{path} holds no usable key")
    return key.encode()


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"repair-agent seal key id\0" + key).hexdigest()[:16]


def _mac(key: bytes, seal: RunSeal) -> str:
    return hmac.new(key, seal.body(), hashlib.sha256).hexdigest()


def _measure(run_dir: Path, key: bytes) -> RunSeal:
    """What the run directory holds now, in a seal's shape (its hmac unset)."""
    run = json.loads((run_dir / "run.json").read_text())
    scenario = json.loads((run_dir / "scenario.json").read_text())
    manifest = Path(scenario["manifest"])
    checks = [Path(scenario[k]) for k in CHECK_INPUTS if isinstance(scenario.get(k), str)]
    lines = list(read_journal(run_dir / "journal.jsonl"))
    origin = origin_record(manifest)
    return RunSeal(run_id=run["run_id"], status=run["status"], diff_sha256=run["diff_sha256"],
                   files={name: sha256_file(run_dir / name) for name in SEALED_FILES},
                   manifest=str(manifest), manifest_sha256=sha256_file(manifest) if manifest.is_file() else "",
                   origin_sha256=sha256_file(origin) if origin.is_file() else None,
                   checks={str(p): sha256_file(p) if p.is_file() else "" for p in checks},
                   protected_manifest_sha256=run.get("protected_manifest_sha256"),
                   pristine_tree_sha256=run.get("pristine_tree_sha256"), journal_lines=len(lines),
                   journal_head=lines[-1].get("record_sha256") if lines else None, key_id=_key_id(key))


def seal_run(run_dir: Path) -> RunSeal:
    """Seal the run directory as it is now (a run's end; a resume's end seals it again)."""
    key = seal_key()
    seal = _measure(Path(run_dir), key)
    seal = seal.model_copy(update={"hmac": _mac(key, seal)})
    atomic_write(Path(run_dir) / SEAL_FILE, seal.model_dump_json(indent=2))
    return seal


def verify_seal(run_dir: Path) -> RunSeal:
    """The run's seal, checked against this user's key and against the run directory as it is now."""
    run_dir = Path(run_dir)
    path = run_dir / SEAL_FILE
    if not path.is_file():
        raise RunNotSealed(f"run {run_dir.name} is not sealed (it was made before runs were sealed, or its "
                           f"{SEAL_FILE} was removed): it can be read, not released; re-run the scenario")
    try:
        seal = RunSeal.model_validate_json(path.read_text())
    except (OSError, ValidationError) as exc:
        raise SealBroken(f"{SEAL_FILE} cannot be read as a seal ({str(exc)[:200]})") from None
    key = seal_key()
    if seal.key_id != _key_id(key) or not hmac.compare_digest(seal.hmac, _mac(key, seal)):
        raise SealBroken(f"{SEAL_FILE} was not made with this user's seal key ({state_dir() / KEY_FILE}), or was "
                         "edited: the run directory cannot be trusted")
    try:
        now = _measure(run_dir, key)
    except (OSError, ValueError, KeyError) as exc:
        raise SealBroken(f"the sealed run directory cannot be read any more ({type(exc).__name__}: {exc})") from None
    changed = [name for name in SEALED_FILES if now.files.get(name) != seal.files.get(name)]
    if now.manifest != seal.manifest:
        changed.append(f"the scenario manifest scenario.json names ({seal.manifest} -> {now.manifest})")
    elif now.manifest_sha256 != seal.manifest_sha256:
        changed.append(f"the scenario manifest {seal.manifest}")
    changed += [f"the behaviour checks' file {path}" for path in sorted(set(now.checks) | set(seal.checks))
                if now.checks.get(path) != seal.checks.get(path)]
    if now.origin_sha256 != seal.origin_sha256:
        changed.append("the origin record of the repository the run was made on (where release writes)")
    if (now.journal_lines, now.journal_head) != (seal.journal_lines, seal.journal_head):
        changed.append("journal.jsonl")
    if changed:
        raise SealBroken(f"changed since the run was sealed: {', '.join(changed)}; the run directory does not match "
                         "its seal")
    return seal


def seal_warning(run_dir: Path) -> str | None:
    """What `show` and `runs` say about a run whose seal does not hold (None: it holds)."""
    try:
        verify_seal(run_dir)
    except SealError as exc:
        return f"{exc} (release will refuse this run)"
    return None
