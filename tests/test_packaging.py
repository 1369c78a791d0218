"""`pip install .` gives a working tool from any directory.

The wheel is built the way `pip install .` builds it (pip, with build isolation: a fresh setuptools
from PyPI) from a copy of the source tree that holds only what git would (no .venv, build/ or
caches), and installed with `--no-deps` into a fresh venv (no system site-packages) created
from the base interpreter. Its dependencies are not downloaded again: a .pth file in the fresh
venv appends the project venv's site-packages to sys.path, after the venv's own, so the wheel's
`repair_agent` and `verifier` are the ones imported (asserted below) while pydantic, docker, ...
come from the project venv. That a .pth does not pull in the project's editable install (its
finder is itself loaded by a .pth, which an appended directory does not process) is asserted
too. What this shortcut cannot show -- that the wheel declares every third-party module it
imports -- is checked on the wheel's own files and metadata.
"""
from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from repair_agent.in_sandbox import SHIPPED_PREFIX
from repair_agent.scenarios.scenario import discover

ROOT = Path(__file__).resolve().parents[1]


class Installed:
    def __init__(self, wheel: Path, venv: Path, elsewhere: Path, env: dict[str, str]):
        self.wheel, self.venv, self.elsewhere, self.env = wheel, venv, elsewhere, env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """The installed `repair-agent`, from a directory that is not the checkout."""
        return subprocess.run([str(self.venv / "bin" / "repair-agent"), *args], cwd=self.elsewhere, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def python(self, code: str) -> str:
        proc = subprocess.run([str(self.venv / "bin" / "python"), "-c", code], cwd=self.elsewhere, env=self.env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout


def _source_copy(dest: Path) -> Path:
    """The files git would check out (tracked, plus new files not ignored), as a clean clone has them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():  # a tracked file deleted in the working tree is not part of it
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel, follow_symlinks=False)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("packaging")
    src = _source_copy(tmp / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("repair_agent-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                    "--disable-pip-version-check", "-q", str(wheel)], check=True, capture_output=True, timeout=300)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(purelib) / "project-venv-dependencies.pth").write_text("".join(f"{d}\n" for d in deps))
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "REPAIR_AGENT_SCENARIO_PATH", "REPAIR_AGENT_RUNS_DIR", "VIRTUAL_ENV"}}
    # Buggy trees are built from the wheel's own copies, not found ready in the user's cache.
    env["REPAIR_AGENT_CACHE_DIR"] = str(tmp / "cache")
    return Installed(wheel, venv, elsewhere, env)


def test_the_wheel_carries_the_dockerfile_and_every_file_of_sandbox_repos(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    shipped = {f"repair_agent/_data/{p.relative_to(ROOT).as_posix()}"
               for p in [ROOT / "Dockerfile", *(ROOT / "sandbox_repos").rglob("*")]
               if p.is_file() and not {"__pycache__", ".pytest_cache"} & set(p.parts) and p.suffix != ".pyc"}
    assert shipped - names == set()
    assert {"repair_agent/reports/templates/report.html.j2", "verifier/probe.py"} <= names
    assert (ROOT / "Dockerfile").read_bytes() == zipfile.ZipFile(installed.wheel).read("repair_agent/_data/Dockerfile")


def test_installed_tool_lists_the_builtin_scenarios_from_another_directory(installed):
    where = json.loads(installed.python(
        "import json, repair_agent, verifier, repair_agent.scenarios.scenario as s, repair_agent.resources as r;"
        "print(json.dumps([repair_agent.__file__, verifier.__file__, str(s.BUILTIN_DIR), str(r.data_path('Dockerfile'))]))"))
    for path in where:  # the wheel's files, not the checkout's (which the editable install points at)
        assert Path(path).is_relative_to(installed.venv), where
    proc = installed.run("scenarios", "--json")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    expected, _ = discover()
    assert len(listed) >= 28 and {s["name"] for s in listed} == set(expected)
    assert all(Path(s["manifest"]).is_relative_to(installed.venv) for s in listed)
    table = installed.run("scenarios")
    assert table.returncode == 0 and f"{len(listed)} scenario(s) over 3 repositories" in table.stdout


def test_the_wheel_declares_every_third_party_module_it_imports(installed):
    """Each import of a module outside the standard library and the wheel itself is covered by a
    Requires-Dist of the wheel (the optional Ray executor by its extra)."""
    wheel = zipfile.ZipFile(installed.wheel)
    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    declared: set[str] = set()
    for line in wheel.read(metadata).decode().splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or req.marker.evaluate({"extra": "ray"}):
                declared.add(canonicalize_name(req.name))
    own = {"repair_agent", "verifier"}
    # in_sandbox's modules import their siblings under the names the sandbox's loader gives them
    own |= {SHIPPED_PREFIX + Path(n).stem for n in wheel.namelist() if n.startswith("repair_agent/in_sandbox/")
            and n.endswith(".py")}
    imported: dict[str, str] = {}
    for name in wheel.namelist():
        if not name.endswith(".py") or name.split("/")[0] not in own or "/_data/" in name:
            continue
        for node in ast.walk(ast.parse(wheel.read(name))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in own:
                    imported.setdefault(top, name)
    providers = importlib.metadata.packages_distributions()
    undeclared = {top: (where, providers.get(top)) for top, where in imported.items()
                  if not {canonicalize_name(d) for d in providers.get(top, [])} & declared}
    assert imported and not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_the_project_venv_on_the_path_does_not_bring_the_editable_install(installed):
    """The shortcut above is honest only if the appended directories add dependencies, not the checkout."""
    out = installed.python("import sys; print('\\n'.join(sys.path))")
    assert str(ROOT) not in out.splitlines()


@pytest.mark.docker
def test_installed_tool_runs_discount_bug_in_docker_from_another_directory(installed, docker_client, sandbox_image,
                                                                         tmp_path):
    proc = installed.run("run", "discount-bug", "--runs-dir", str(tmp_path / "runs"), "--json", timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["status"] == "awaiting_release_confirmation" and out["sandbox"]["kind"] == "docker"
    assert Path(out["run_dir"]).parent == tmp_path / "runs"
    # The wheel's Dockerfile is the checkout's: the installed tool found the same image, built nothing.
    assert out["image"] == sandbox_image
    assert docker_client.containers.list(all=True, filters={"label": f"org.repair-agent.run={out['run_id']}"}, ignore_removed=True) == []


def test_a_mistyped_scenarios_dir_is_reported_not_taken_for_an_empty_one(installed):
    proc = installed.run("scenarios", "--json", "--scenarios-dir", "no-such-dir")
    assert proc.returncode == 0 and "no-such-dir: no such scenario directory" in proc.stderr
    assert len(json.loads(proc.stdout)) >= 28  # the built-in ones are still listed
