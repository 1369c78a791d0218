"""Shared fixtures: a Docker Engine (or a loud reason why not), the sandbox image, and a
session-end check that no managed container outlives the tests."""
from __future__ import annotations

import os
import signal
import sys

import pytest

from verifier.isolation import LABEL, OWNER_LABEL

REQUIRE_DOCKER_ENV = "REPAIR_AGENT_REQUIRE_DOCKER"

# A shell starts a background job (`cmd &`) with SIGINT ignored, and an ignored signal stays
# ignored in every child: the Ctrl-C tests would then interrupt nothing. A handler is reset to
# the default on exec, so every process the tests start can be interrupted again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# pytest caches a test module's assertion-rewritten bytecode only when the process may write bytecode:
# with PYTHONDONTWRITEBYTECODE set (as on the development machines) every worker would rewrite
# every test module on every run (~7 s of CPU each). Allowed in this process during collection
# only: what the tests import while they run (a scenario's own modules) writes no bytecode, and
# the processes the tests start keep the variable.
_DONT_WRITE_BYTECODE = sys.dont_write_bytecode
sys.dont_write_bytecode = False


def pytest_collection_finish(session):
    sys.dont_write_bytecode = _DONT_WRITE_BYTECODE

# Filled by `docker_client`: its presence means container tests actually ran in this session.
_engine: dict = {}


def _managed_containers(client) -> list:
    """Managed containers created by this test process (not by a concurrent run on the machine)."""
    return client.containers.list(all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={os.getpid()}"]}, ignore_removed=True)


@pytest.fixture(scope="session")
def docker_client():
    """A pinged Docker client. Without an engine: skip, or fail when CI demands containers."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:  # no socket, engine down, permission denied, docker SDK missing
        reason = f"no Docker Engine answers ({type(exc).__name__}: {exc})"
        if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
            pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but {reason}: container tests must run here, "
                        "a skipped isolation test proves nothing", pytrace=False)
        pytest.skip(reason)
    # Containers that predate this session belong to someone else: never remove those.
    _engine["client"] = client
    _engine["preexisting"] = {c.id for c in _managed_containers(client)}
    return client


@pytest.fixture(scope="session")
def sandbox_image(docker_client) -> str:
    """Tag of the sandbox image; built on first use (a minute or two on a fresh machine), cached after."""
    from repair_agent.sandbox.image import ensure_sandbox_image

    return ensure_sandbox_image(docker_client, log=print)


@pytest.fixture(scope="session", autouse=True)
def _seal_key_of_the_session(tmp_path_factory):
    """Runs are sealed with a key in the user's state directory: the tests' runs (in this process
    and in the CLI processes it starts) use one of the session's own, never the tester's."""
    if not os.environ.get("REPAIR_AGENT_STATE_DIR"):
        os.environ["REPAIR_AGENT_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    # Nor the tester's own models file (~/.config/repair-agent/models.toml would win over a test's).
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield


@pytest.fixture(scope="session", autouse=True)
def _no_leaked_containers():
    """Torn down last: any managed container still present after the docker tests is a leak.

    It is removed, and the session fails (a teardown error makes pytest exit non-zero)."""
    yield
    client = _engine.get("client")
    if client is None:  # no container test ran
        return
    try:
        leaked = [c for c in _managed_containers(client) if c.id not in _engine["preexisting"]]
    except Exception:  # the engine went away meanwhile: nothing to inspect
        return
    if not leaked:
        return
    names = [f"{c.name} ({c.short_id}, {c.status}, {c.labels})" for c in leaked]
    for c in leaked:
        try:
            c.remove(force=True, v=True)
        except Exception:
            pass
    pytest.fail(f"{len(leaked)} container(s) labelled {LABEL} leaked from this test session "
                f"(now removed): " + "; ".join(names), pytrace=False)


# scripts/test runs the suite on three workers (pytest-xdist, `--dist loadfile`): each worker is its
# own session (its own engine client and leak check; the pristine-suite cache is shared), and each test module
# runs whole on one worker, so a module-scoped fixture (a run, a verifier, a built wheel) is built
# once, as without workers. The modules with Ctrl-C tests (named test_ctrl_c_*) run together on one
# worker, one after another: no two Ctrl-C tests ever run at the same time.
INTERRUPT_TESTS = "::test_ctrl_c_"

# The slowest modules, with their seconds on one worker (measured 2026-12-05 on the 2-core machine
# under a load of 10-15, so only their order means something; the Ctrl-C modules count as one unit). They are handed out first, the
# longest first: xdist's own order (most tests first) started these few-test container modules
# last, and one that starts last keeps the other worker idle until it ends. Every other module
# follows in xdist's order; a stale figure only changes the order (tests/test_suite_rules.py checks
# that each name is still a module).
SLOW_MODULES = {
    "tests/test_hostile_trust.py": 500,
    "tests/test_import_real_habits.py": 260,
    "tests/test_bench_scripts.py": 190,
    "tests/test_environment_python.py": 180,
    "tests/test_corpus.py": 177,
    "tests/test_release.py": 140,
    "tests/test_import_environment.py": 120,
    "tests/test_sweep.py": 85,   # with test_pool and test_cli_docker: the Ctrl-C unit, 132 s
    "tests/test_hostile_verifier.py": 97,
    "tests/test_import_swebench.py": 87,
    "tests/test_import_hidden.py": 84,
    "tests/test_model_sweep.py": 79,
    "tests/test_model_runs.py": 79,
    "tests/test_resume.py": 55,
    "tests/test_real_suites.py": 53,
    "tests/test_hostile_runtime.py": 43,
    "tests/test_import_commit.py": 42,
    "tests/test_fuzz_proposals.py": 41,
    "tests/test_import_correct.py": 38,
    "tests/test_sandbox_docker.py": 38,
    "tests/test_pool.py": 24,
    "tests/test_cli_docker.py": 23,
}


# Modules that need no engine, the longest first (seconds on one worker, a rough guide). On an engine
# without the sandbox image (a fresh machine) the workers run these while this process builds the
# images (about a minute each); the slow container modules above would only wait for them. A module
# listed here that asks for the engine is a collection error (pytest_collection_modifyitems).
ENGINE_FREE_MODULES = {
    "tests/test_gate_fuzz.py": 90,
    "tests/test_mutation_analysis.py": 45,
    "tests/test_gate.py": 40,
    "tests/test_search_ranking.py": 25,
    "tests/test_inserted_edits.py": 25,
    "tests/test_in_sandbox.py": 20,
    "tests/test_diff_differential.py": 20,
    "tests/test_controller.py": 20,
    "tests/test_model_chooser.py": 20,
    "tests/test_real_project_habits.py": 15,
    "tests/test_condition_edits.py": 15,
    "tests/test_judge.py": 10,
    "tests/test_scope.py": 10,
    "tests/test_generated.py": 10,
}
# The images the suite's container tests use: the default sandbox, and the other Pythons'
# (tests/test_environment_python.py).
SUITE_IMAGES = (None, "3.9", "3.13")


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in ENGINE_FREE_MODULES and (item.get_closest_marker("docker") is not None or {
                "docker_client", "sandbox_image"} & set(item.fixturenames)):
            raise pytest.UsageError(f"{item.nodeid} needs the Docker Engine, but its module is in "
                                    "conftest.ENGINE_FREE_MODULES: take it out of the list")


class _ImageBuilds:
    """The images a run of the slow container modules uses, built in the background in this (the
    xdist controller's) process: a build that is already there takes one listing of the engine."""

    def __init__(self, pythons: tuple[str | None, ...]) -> None:
        import threading

        self.pythons = pythons
        self.sandbox_ready = threading.Event()
        self.thread = threading.Thread(target=self._build, name="suite-images", daemon=True)
        self.thread.start()

    def _build(self) -> None:
        try:
            import docker

            from repair_agent.sandbox.image import ensure_sandbox_image

            client = docker.from_env()
            client.ping()
            for python in self.pythons:
                ensure_sandbox_image(client, python=python)
                self.sandbox_ready.set()
        except Exception:  # no engine, or a failed build: each test's own fixture says why
            pass
        finally:
            self.sandbox_ready.set()


_builds: list[_ImageBuilds] = []


def pytest_sessionfinish(session):
    for builds in _builds:   # never leave a debootstrap running behind the suite
        builds.thread.join()


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: absent without it
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndInterrupts(LoadFileScheduling):
        interrupt_modules: set[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            if self.interrupt_modules is None:  # the collection is complete when the units are made
                self.interrupt_modules = {super(ModulesAndInterrupts, self)._split_scope(n)
                                          for n in self.collection or () if INTERRUPT_TESTS in n}
            return "interrupts" if module in self.interrupt_modules else module

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "slow_first", False):  # once, on the first unit handed out
                # the images, when the slow container modules are in this run (the whole suite)
                units = set(self.workqueue)
                if units & set(SLOW_MODULES):
                    _builds.append(_ImageBuilds(SUITE_IMAGES if "tests/test_environment_python.py" in units
                                                else SUITE_IMAGES[:1]))
                def seconds(unit: str) -> float:
                    modules = self.interrupt_modules if unit == "interrupts" else {unit}
                    return sum(SLOW_MODULES.get(m, 0) for m in modules or ())

                for unit in sorted((u for u in self.workqueue if seconds(u)), key=seconds):
                    self.workqueue.move_to_end(unit, last=False)
                self.slow_first = True
            if _builds and not _builds[0].sandbox_ready.is_set():   # no container test could start yet
                free = [u for u in self.workqueue if u in ENGINE_FREE_MODULES]
                if free:
                    self.workqueue.move_to_end(max(free, key=ENGINE_FREE_MODULES.__getitem__), last=False)
            super()._assign_work_unit(node)

    return ModulesAndInterrupts(config, log)


@pytest.fixture(scope="session")
def baseline_cache(tmp_path_factory):
    """One runs/.cache for the session: the pristine suites' test ids, keyed by tree, image and
    verifier setup (and trusted only whole), so a scenario's pristine suite runs once per session
    instead of once per test. Tests of the cache itself use their own directories.

    Under pytest-xdist the workers share it (in the run's own temporary directory, beside theirs):
    entries are written whole by a rename, so a worker reads another's entry or none at all."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "baseline-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("baseline-cache")


@pytest.fixture
def runs_dir(tmp_path, baseline_cache):
    """Where a test's runs go; its .cache is the session's."""
    from helpers import runs_dir_with_cache

    return runs_dir_with_cache(tmp_path / "runs", baseline_cache)
