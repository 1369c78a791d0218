"""Where scenario manifests live and which manifest a scenario's name picks.

Only the standard library: a run's command finds its manifest (and starts its sandbox) before
the manifest's models are imported and validated (scenario.py)."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Iterator

from ..resources import data_path

BUILTIN_DIR = data_path("sandbox_repos")
SCENARIO_PATH_ENV = "REPAIR_AGENT_SCENARIO_PATH"
SUFFIX = ".scenario.toml"
ORIGIN_SUFFIX = ".origin.json"  # beside a `run --repo` scenario's manifest: the repository it came from


def origin_record(manifest: Path) -> Path:
    """Where a manifest's origin record is (present only for `run --repo` scenarios)."""
    manifest = Path(manifest)
    return manifest.with_name(manifest.name.removesuffix(SUFFIX) + ORIGIN_SUFFIX)


def scenario_dirs(extra: list[Path] | None = None) -> list[Path]:
    dirs = [BUILTIN_DIR]
    dirs += [Path(p) for p in os.environ.get(SCENARIO_PATH_ENV, "").split(os.pathsep) if p]
    return dirs + list(extra or [])


def manifests_named(name: str, extra: list[Path] | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The manifests that declare `name`, with their raw tables, in the order discovery reads
    them (the first usable one is the scenario); unreadable manifests are skipped, as there."""
    for directory in scenario_dirs(extra):
        for manifest in sorted(Path(directory).glob(f"*{SUFFIX}")) if Path(directory).is_dir() else ():
            try:
                raw = tomllib.loads(manifest.read_text())
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if raw.get("name") == name:
                yield manifest, raw


def first_manifest(name_or_path: str, extra: list[Path] | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The manifest a scenario name or manifest path most likely resolves to, read but not
    validated: None when there is none or it is unreadable (resolving it then says why)."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.is_file():
        try:
            return candidate, tomllib.loads(candidate.read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None
    return next(manifests_named(name_or_path, extra), None)
