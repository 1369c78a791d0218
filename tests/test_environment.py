"""Scenario environments and fetched sources.

Fast: the manifest sections, the environment key, and fetching a source (a PyPI-style sdist from a
local index server, a local git repository) with its verification. Docker: a built environment
with a runtime dependency running a real-project scenario through the corpus check, the same
image serving the sandbox with no network, and a failing install that names the package and
its log and tags nothing.
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from repair_agent.sandbox.environment import (BUILD_FILES, EnvironmentBuildError, EnvironmentSection,
                                              build_script, describe_failure, environment_key,
                                              environment_tag)
from repair_agent.scenarios.scenario import CACHE_ENV, ManifestError, load_manifest
from repair_agent.scenarios.sources import SourceError, SourceSection, fetch_source
from helpers import PypiIndex

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "sandbox_repos" / "real"


# -- the sections ----------------------------------------------------------------------------------

def test_environment_section_refuses_unpinned_and_escaping_input():
    assert EnvironmentSection(packages=("text-unidecode==1.3", "foo[bar]==2.0; python_version>'3'")).packages
    for bad in ({"packages": ["requests"]}, {"packages": ["requests>=2"]}, {"requirements": "../req.txt"},
                {"requirements": "/etc/passwd"}, {"env": {"1BAD": "x"}}, {"env": {"OK": "two\nlines"}},
                {"unknown": 1}):
        with pytest.raises(ValueError):
            EnvironmentSection.model_validate(bad)


def test_source_section_needs_one_pinned_kind():
    assert SourceSection(pypi="x==1.0", sha256="a" * 64).describe() == "pypi x==1.0"
    for bad in ({}, {"pypi": "x==1.0"}, {"pypi": "x>=1.0", "sha256": "a" * 64}, {"git": "."},
                {"git": ".", "rev": "main"}, {"git": ".", "rev": "a" * 40, "pypi": "x==1", "sha256": "a" * 64},
                {"pypi": "x==1.0", "sha256": "a" * 64, "rev": "b" * 40}):
        with pytest.raises(ValueError):
            SourceSection.model_validate(bad)


def _manifest(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "m.scenario.toml"
    path.write_text('name = "m"\n' + body + '\n[goal]\ntext = "g"\nfailure_signature = "s"\n'
                    '[acceptance]\ntarget_tests = ["tests/test_a.py::test_a"]\n')
    return path


def test_manifest_takes_a_repo_or_a_source_not_both(tmp_path):
    (tmp_path / "r").mkdir()
    with pytest.raises(ManifestError, match="exactly one of repo"):
        load_manifest(_manifest(tmp_path, 'repo = "r"\n[source]\npypi = "x==1"\nsha256 = "' + "a" * 64 + '"'))
    with pytest.raises(ManifestError, match="exactly one of repo"):
        load_manifest(_manifest(tmp_path, ""))
    with pytest.raises(ManifestError, match="environment.packages"):
        load_manifest(_manifest(tmp_path, 'repo = "r"\n[environment]\npackages = ["requests"]'))
    scenario = load_manifest(_manifest(tmp_path, 'repo = "r"\n[environment]\npackages = ["a==1"]\n'
                                                 'env = {X = "1"}'))
    assert scenario.environment.packages == ("a==1",) and scenario.summary()["environment"]["env"] == {"X": "1"}


def test_environment_key_covers_base_section_and_the_files_it_reads(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "req.txt").write_text("a==1\n")
    (tree / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    plain = EnvironmentSection(packages=("a==1",))
    key = environment_key(plain, "sha256:base", tree)
    assert key == environment_key(EnvironmentSection(packages=("a==1",)), "sha256:base", tree)  # stable
    assert key != environment_key(plain, "sha256:other-base", tree)
    assert key != environment_key(EnvironmentSection(packages=("a==2",)), "sha256:base", tree)
    assert key != environment_key(EnvironmentSection(packages=("a==1",), env={"X": "1"}), "sha256:base", tree)
    # Build files count only for an environment that installs the project itself.
    (tree / "pyproject.toml").write_text("[project]\nname = 'q'\n")
    assert key == environment_key(plain, "sha256:base", tree)
    installs = EnvironmentSection(install=("pip install -e .",))
    before = environment_key(installs, "sha256:base", tree)
    (tree / BUILD_FILES[0]).write_text("[project]\nname = 'r'\n")
    assert before != environment_key(installs, "sha256:base", tree)
    assert key != environment_key(EnvironmentSection(packages=("a==1",), plugins=("pytest-mock==3.14.0",)),
                                  "sha256:base", tree)
    reqs = EnvironmentSection(requirements="req.txt")
    before = environment_key(reqs, "sha256:base", tree)
    (tree / "req.txt").write_text("a==2\n")
    assert before != environment_key(reqs, "sha256:base", tree)
    assert environment_tag(key) == f"repair-agent-env:{key[:16]}"


def test_install_key_follows_what_the_install_depends_on_not_the_whole_build_files(tmp_path):
    """Two commits of one project that change its version, readme, pytest settings and code, but
    not its dependencies or layout, share one image; a dependency or a package layout change does not."""
    installs = EnvironmentSection(packages=("six==1.16.0",), install=("pip install --no-deps -e .",))

    def key(pyproject: str, setup_py: str = "from setuptools import setup\nsetup(name='p', version='1.0')\n",
            code: str = "X = 1\n") -> str:
        tree = tmp_path / hashlib.sha256((pyproject + setup_py + code).encode()).hexdigest()[:12]
        (tree / "p").mkdir(parents=True, exist_ok=True)
        (tree / "pyproject.toml").write_text(pyproject)
        (tree / "setup.py").write_text(setup_py)
        (tree / "p" / "__init__.py").write_text(code)
        return environment_key(installs, "sha256:base", tree)

    first = key('[project]\nname = "p"\nversion = "1.0"\ndependencies = ["six"]\n[tool.pytest.ini_options]\nx = 1\n')
    later = key('[project]\nname = "p"\nversion = "1.1"\ndescription = "new"\ndependencies = ["six"]\n'
                '[tool.pytest.ini_options]\nx = 2\n', "from setuptools import setup\nsetup(name='p', version='1.1',"
                " long_description='more')\n", code="X = 2\n")
    assert first == later
    assert first != key('[project]\nname = "p"\nversion = "1.0"\ndependencies = ["six", "attrs"]\n')
    assert first != key('[project]\nname = "p"\nversion = "1.0"\ndependencies = ["six"]\n'
                        '[tool.setuptools]\npackage-dir = {"" = "src"}\n')
    assert first != key('[project]\nname = "p"\nversion = "1.0"\ndependencies = ["six"]\n',
                        "from setuptools import setup\nsetup(name='p', version='1.0', packages=['p'])\n")
    assert first != key("[project\n")  # unreadable: the whole file counts


def test_what_a_tree_declares_is_read_without_running_it(tmp_path):
    from repair_agent.sandbox.declared import read_declared

    (tmp_path / "src/proj").mkdir(parents=True)
    (tmp_path / "src/proj/__init__.py").write_text("import text_unidecode\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "proj"\ndependencies = ["text-unidecode==1.3"]\n'
        '[project.optional-dependencies]\ntest = ["proj[extra]", "attrs>=20"]\ndocs = ["sphinx"]\n')
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    idna\n")
    # Never executed: a setup.py that would fail (or worse) when run is still read.
    (tmp_path / "setup.py").write_text("import sys\nsys.exit('never run')\nfrom setuptools import setup\n"
                                       "setup(name='proj', install_requires=['packaging'], extras_require="
                                       "{'testing': ['tomli'], 'docs': ['furo']}, tests_require=open('x').read())\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements-dev.txt").write_text("-r requirements/base.txt\n-e .\n--index-url http://x\nwcwidth==0.2\n")
    (tmp_path / "requirements/base.txt").write_text("# base\nsix  # inline\n")
    (tmp_path / "tests/helper_mod.py").write_text("")
    (tmp_path / "tests/test_a.py").write_text(
        "import os, json\nimport yaml\nimport proj\nimport helper_mod\nimport pytest\nimport attr\n"
        "from . import sibling\nimport sqlite3\n\n"
        "@pytest.mark.asyncio\nasync def test_a(mocker):\n    pass\n\ndef test_b(benchmark):\n    pass\n")
    declared = read_declared(tmp_path)
    assert declared.project == "proj" and declared.installable
    assert declared.requirements == ["text-unidecode==1.3", "attrs>=20", "idna", "packaging", "tomli", "six",
                                     "wcwidth==0.2"]
    # yaml is imported and declared nowhere (its distribution is PyYAML); attr is attrs, declared.
    assert declared.guesses == ["PyYAML"]
    assert declared.plugins == ["pytest-asyncio", "pytest-benchmark", "pytest-mock"]
    (tmp_path / "empty").mkdir()
    assert not read_declared(tmp_path / "empty").anything


def test_an_environment_file_has_the_fields_of_the_section(tmp_path):
    from repair_agent.sandbox.detect import environment_option

    (tmp_path / "env.toml").write_text('[environment]\npackages = ["six==1.16.0"]\nplugins = ["pytest-mock==3.14.0"]\n')
    (tmp_path / "flat.toml").write_text('install = ["pip install --no-deps -e ."]\n')
    (tmp_path / "bad.toml").write_text('packages = ["six"]\n')
    assert environment_option(str(tmp_path / "env.toml"), tmp_path) == EnvironmentSection(
        packages=("six==1.16.0",), plugins=("pytest-mock==3.14.0",))
    assert environment_option(str(tmp_path / "flat.toml"), tmp_path).install == ("pip install --no-deps -e .",)
    assert environment_option("none", tmp_path) is None and environment_option("declared", tmp_path) is None
    with pytest.raises(EnvironmentBuildError, match="packages: Value error, 'six' is not a pinned"):
        environment_option(str(tmp_path / "bad.toml"), tmp_path)
    with pytest.raises(EnvironmentBuildError, match="cannot be read"):
        environment_option(str(tmp_path / "absent.toml"), tmp_path)


def test_build_script_runs_each_step_and_failures_name_the_package():
    script = build_script(EnvironmentSection(packages=("a==1", "b==2"), requirements="r.txt",
                                             install=("pip install --no-deps -e .",)), has_ca=True)
    assert "pip install a==1 b==2" in script and "pip install -r r.txt" in script
    assert script.index("ra-step: packages") < script.index("ra-step: install") < script.index("import check")
    assert "PIP_CERT=/ra-build/ca.crt" in script and script.startswith("set -eu")
    pip_says = ["Collecting nosuch==9", "ERROR: Could not find a version that satisfies the requirement nosuch==9",
                "ERROR: No matching distribution found for nosuch==9"]
    assert "installing nosuch==9 failed at step 'packages'" in describe_failure("packages", pip_says, EnvironmentSection())
    assert "step 'install make'" in describe_failure("install make", ["make: *** no rule"], EnvironmentSection())


# -- sources ---------------------------------------------------------------------------------------

def _sdist(name: str, version: str, files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A PyPI-style JSON API and file host on localhost, serving what the test puts in `files`."""
    with PypiIndex() as served:
        monkeypatch.setenv("REPAIR_AGENT_PYPI_URL", served.url)
        monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
        yield served.files, served.hits


def test_pypi_source_is_fetched_verified_and_cached(index, tmp_path):
    files, hits = index
    data = _sdist("toy", "1.0", {"toy/__init__.py": "X = 1\n", "tests/test_toy.py": "def test(): pass\n"})
    files["toy-1.0.tar.gz"] = data
    source = SourceSection(pypi="toy==1.0", sha256=hashlib.sha256(data).hexdigest())
    tree = fetch_source(source, tmp_path, tmp_path / "cache")
    assert (tree / "toy" / "__init__.py").read_text() == "X = 1\n" and (tree / "tests" / "test_toy.py").is_file()
    count = len(hits)
    assert fetch_source(source, tmp_path, tmp_path / "cache") == tree and len(hits) == count  # cached, no request


def test_pypi_source_with_the_wrong_sha256_is_refused_and_not_cached(index, tmp_path):
    files, _ = index
    files["toy-2.0.tar.gz"] = data = _sdist("toy", "2.0", {"toy/__init__.py": "X = 2\n"})
    pinned = "0" * 64
    with pytest.raises(SourceError) as caught:
        fetch_source(SourceSection(pypi="toy==2.0", sha256=pinned), tmp_path, tmp_path / "cache")
    message = str(caught.value)
    assert "sha256 mismatch" in message and pinned in message and hashlib.sha256(data).hexdigest() in message
    assert not list((tmp_path / "cache" / "sources").glob("*/toy-2.0"))  # no tree was kept
    assert (tmp_path / "cache" / "downloads" / "toy-2.0.tar.gz.sha256-mismatch").read_bytes() == data
    with pytest.raises(SourceError, match="no such release|HTTP 404"):
        fetch_source(SourceSection(pypi="toy==9.9", sha256=pinned), tmp_path, tmp_path / "cache")


def test_a_manifest_with_a_pypi_source_applies_its_bug_patch_on_the_fetched_tree(index, tmp_path):
    files, _ = index
    files["toy-1.0.tar.gz"] = data = _sdist("toy", "1.0", {"toy/__init__.py": "X = 1\n"})
    (tmp_path / "bug.diff").write_text("--- a/toy/__init__.py\n+++ b/toy/__init__.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n")
    path = _manifest(tmp_path, f'bug_patch = "bug.diff"\n[source]\npypi = "toy==1.0"\n'
                               f'sha256 = "{hashlib.sha256(data).hexdigest()}"')
    scenario = load_manifest(path)
    assert (scenario.repo / "toy" / "__init__.py").read_text() == "X = 2\n"
    assert (scenario.source_repo / "toy" / "__init__.py").read_text() == "X = 1\n"
    bad = _manifest(tmp_path, '[source]\npypi = "toy==1.0"\nsha256 = "' + "1" * 64 + '"')
    with pytest.raises(ManifestError, match="field 'source'.*sha256 mismatch"):
        load_manifest(bad)


def test_git_source_is_the_commit_without_its_history(tmp_path):
    repo = tmp_path / "proj"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    (repo / "a.py").write_text("A = 1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    first = git("rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("A = 2\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")
    tree = fetch_source(SourceSection(git="proj", rev=first), tmp_path, tmp_path / "cache")
    assert (tree / "a.py").read_text() == "A = 1\n" and not (tree / ".git").exists()
    with pytest.raises(SourceError, match="not in the repository|fetch failed"):
        fetch_source(SourceSection(git="proj", rev="1" * 40), tmp_path, tmp_path / "cache")


def test_git_url_source_is_fetched_over_the_git_protocol(tmp_path):
    """A source named by URL: a real `git daemon` on loopback serves the repository; the commit is
    fetched by id, and a commit the server does not have is refused."""
    import socket

    from helpers import wait_until

    served = tmp_path / "served"
    repo = served / "proj"
    repo.mkdir(parents=True)
    run = dict(check=True, capture_output=True, text=True)
    subprocess.run(["git", "-C", str(repo), "init", "-q"], **run)
    (repo / "a.py").write_text("A = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], **run)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"],
                   **run)
    rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], **run).stdout.strip()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(["git", "daemon", "--export-all", f"--base-path={served}", "--reuseaddr",
                               "--listen=127.0.0.1", f"--port={port}", str(served)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"git://127.0.0.1:{port}/proj"
        wait_until(lambda: subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0, 20,
                   "git daemon to serve")
        tree = fetch_source(SourceSection(git=url, rev=rev), tmp_path, tmp_path / "cache")
        assert (tree / "a.py").read_text() == "A = 1\n" and not (tree / ".git").exists()
        with pytest.raises(SourceError, match="not in the repository|fetch failed"):
            fetch_source(SourceSection(git=url, rev="1" * 40), tmp_path, tmp_path / "cache2")
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_real_corpus_is_pinned_and_tagged():
    """The real-project corpus: every manifest names a PyPI sdist pinned by sha256, and the group
    spans three projects, one with a runtime dependency and one installed into its environment."""
    import tomllib

    manifests = sorted(REAL.glob("*.scenario.toml"))
    assert len(manifests) >= 12
    projects, with_deps, installed = set(), set(), set()
    for path in manifests:
        raw = tomllib.loads(path.read_text())
        assert "repo" not in raw and raw["source"]["pypi"].count("==") == 1 and len(raw["source"]["sha256"]) == 64
        assert "corpus:real" in raw["tags"] and (path.parent / raw["heldout"]).is_file()
        project = next(t for t in raw["tags"] if t.startswith("project:"))
        projects.add(project)
        env = raw.get("environment", {})
        if env.get("packages"):
            with_deps.add(project)
        if any("-e ." in c for c in env.get("install", [])):
            installed.add(project)
    assert len(projects) >= 3 and with_deps and installed, (projects, with_deps, installed)


# -- Docker --------------------------------------------------------------------------------------

@pytest.mark.docker
def test_environment_with_a_dependency_runs_a_real_scenario(docker_client, tmp_path):
    """python-slugify needs text-unidecode, which the sandbox image lacks: its environment image is
    built once (cached in the engine across sessions), the corpus check passes on it, and the same
    image gives candidate code the package but no network."""
    from repair_agent.scenarios.corpus import check_scenario
    from repair_agent.sandbox.environment import scenario_image
    from verifier.isolation import HardenedContainer

    scenario = load_manifest(REAL / "slugify-stopwords-lowercase.scenario.toml")
    image = scenario_image(docker_client, scenario, log=print)
    built: list[str] = []
    t0 = time.monotonic()
    assert scenario_image(docker_client, scenario, log=built.append) == image  # cached: no rebuild
    assert not any("building" in m for m in built) and time.monotonic() - t0 < 10

    check = check_scenario(scenario, tmp_path / "check", backend="docker", client=docker_client, log=print)
    assert check.ok, check.problems
    assert check.buggy_tree_ok and check.reference_fix_ok and check.collected > 50

    box = HardenedContainer(docker_client, image)
    try:
        res = box.exec(["python3", "-c", "import text_unidecode, socket\n"
                        "print(text_unidecode.unidecode('ž'))\n"
                        "try:\n    socket.create_connection(('pypi.org', 443), timeout=3)\n"
                        "except OSError as exc:\n    print('offline', type(exc).__name__)"], timeout_s=30)
    finally:
        box.close()
    assert res.ok and res.stdout.text.split()[:2] == ["z", "offline"], res


@pytest.mark.docker
def test_failing_install_names_the_package_and_the_log_and_tags_nothing(docker_client, tmp_path, monkeypatch):
    """Offline on purpose (--no-index): the failure is pip's, not the network's."""
    from repair_agent.sandbox.environment import ensure_environment_image, environment_key
    from repair_agent.sandbox.image import ensure_sandbox_image

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "mod.py").write_text("X = 1\n")
    env = EnvironmentSection(install=("pip install --no-index ra-absent-package==1.0",))
    base = ensure_sandbox_image(docker_client)
    tag = environment_tag(environment_key(env, docker_client.images.get(base).id, tree))
    with pytest.raises(EnvironmentBuildError) as caught:
        ensure_environment_image(docker_client, env, tree, "broken-env", log=print)
    message = str(caught.value)
    assert "ra-absent-package==1.0" in message and "no image was tagged" in message
    log = Path(message.rsplit("log: ", 1)[1].strip())
    assert log.is_file() and log.is_relative_to(tmp_path / "cache") and "ra-absent-package" in log.read_text()
    import docker.errors
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(tag)
    # No build container of this process is left (another worker's build may be running meanwhile).
    assert not docker_client.containers.list(all=True, ignore_removed=True, filters={"label": [
        "org.repair-agent.role=environment-build", f"org.repair-agent.owner-pid={os.getpid()}"]})


@pytest.mark.docker
def test_a_base_image_that_is_not_there_says_what_is(docker_client, sandbox_image, tmp_path):
    """No silent fallback to another Python: the error lists the images the engine has."""
    from repair_agent.sandbox.environment import ensure_environment_image

    with pytest.raises(EnvironmentBuildError) as caught:
        ensure_environment_image(docker_client, EnvironmentSection(base_image="repair-agent-absent/python:0.0"),
                                 tmp_path, "elsewhere")
    message = str(caught.value)
    assert "repair-agent-absent/python:0.0 is not available locally" in message and sandbox_image in message
