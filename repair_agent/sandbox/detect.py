"""What a tree declares it needs, resolved to pinned packages: `--environment auto|none|FILE` of the
importers and `run --repo` (docs/environments.md, "Detected environments").

The tree is read, never run (declared.py). The requirements are resolved once per set by pip in a
throwaway container of the sandbox image (with the network), pytest and what it runs on held at the
image's versions; the resolver installs them there and starts pytest (in_build/pytest_starts.py), so
a plugin that does not start with the image's pytest is replaced by an older release. The result is
cached under the cache directory: later imports of the same project get the same pins and image.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from .declared import Declared, normalize, read_declared, requirement_name
from .environment import (BUILD_ROLE, BUILD_TIMEOUT_S, RECIPE, ROLE_LABEL, EnvironmentBuildError, EnvironmentSection,
                          Log, discard_build, stream_lines, pip_setup, build_files, cache_dir)
from .in_build import pytest_starts

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
        (ra / "resolve.sh").write_text("\n".join(pip_setup(has_ca)) + RESOLVE_SCRIPT)
        shutil.copyfile(Path(pytest_starts.__file__), ra / "pytest_starts.py")
        container = client.containers.run(
            base, command=["sh", "/ra-build/resolve.sh"], user="0:0", detach=True,
            mounts=[Mount("/ra-build", str(ra), type="bind", read_only=True)],
            labels={ROLE_LABEL: BUILD_ROLE, "org.repair-agent.owner-pid": str(os.getpid())})
        code = container.wait(timeout=BUILD_TIMEOUT_S).get("StatusCode", -1)
        return code, list(stream_lines([container.logs()]))
    except docker.errors.DockerException as exc:
        raise EnvironmentBuildError(f"resolving the declared requirements: the engine failed: {exc}") from None
    finally:
        discard_build(container, build)


