"""Helpers shared by the test modules (a test module never imports another test module).

The discount repository's fix, a scripted chooser and a local run; a user-written scenario;
sweep result lines; polling for an event with a bound; the rule for a required part that is
missing (skip on a developer's machine, fail where REPAIR_AGENT_REQUIRE_DOCKER=1 demands it); and a
small calculator repository with a buggy `clamp` in a local sandbox (localization, mutation analysis)."""
from __future__ import annotations

import difflib
import hashlib
import http.server
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

import pytest

if TYPE_CHECKING:
    from repair_agent.sweep import SweepResult

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
REQUIRE_DOCKER_ENV = "REPAIR_AGENT_REQUIRE_DOCKER"

PRICING_REL = "src/discount_shop/pricing.py"
PRICING = ROOT / "sandbox_repos/discount_shop" / PRICING_REL

T = TypeVar("T")


# -- required parts and waiting ----------------------------------------------------------------------

# A module whose bug is an infinite loop: settle() of a negative balance never returns.
LOOP = '''\
def settle(balance):
    while balance != 0:      # the bug: a negative balance never reaches 0
        balance -= 1
    return "settled"


def label(x):
    return f"#{x}"
'''


def import_usable_commit(repo: Path, rev: str, out: Path, cache: Path) -> dict:
    """`repair-agent import commit REPO REV --out OUT --json` (Docker), whose one result must be usable."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "repair_agent", "import", "commit", str(repo), rev, "--out", str(out),
                           "--json"], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "REPAIR_AGENT_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = json.loads(proc.stdout)["results"]
    assert result["status"] == "usable", result
    return result


class PypiIndex:
    """A PyPI-style JSON API and file host on localhost serving what a test puts in `files`
    (`NAME-VERSION.tar.gz` -> bytes); `hits` lists the paths requested. `digests=False` serves no
    sha256, as an index may. Use as a context manager; `url` is the REPAIR_AGENT_PYPI_URL value."""

    def __init__(self, digests: bool = True) -> None:
        self.files: dict[str, bytes] = {}
        self.hits: list[str] = []
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                index.hits.append(self.path)
                parts = self.path.strip("/").split("/")
                filename = f"{parts[1]}-{parts[2]}.tar.gz" if len(parts) == 4 else ""
                if parts[0] == "pypi" and parts[-1] == "json" and filename in index.files:
                    sha = {"sha256": hashlib.sha256(index.files[filename]).hexdigest()} if digests else {}
                    data = json.dumps({"urls": [{"packagetype": "sdist", "filename": filename,
                                                 "url": f"../../../files/{filename}", "digests": sha}]}).encode()
                elif parts[0] == "files" and parts[-1] in index.files:
                    data = index.files[parts[-1]]
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/pypi"

    def __enter__(self) -> "PypiIndex":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()


def required() -> bool:
    """CI (`.ci/run`) sets REPAIR_AGENT_REQUIRE_DOCKER=1: every part a test needs must be there."""
    return os.environ.get(REQUIRE_DOCKER_ENV) == "1"


def skip_unless_present(reason: str) -> None:
    """A part this test needs is missing: skip on a developer's machine, fail loudly where required."""
    if required():
        pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but {reason}: this test must run here", pytrace=False)
    pytest.skip(reason)


def import_required(module: str):
    """pytest.importorskip that fails instead of skipping where REPAIR_AGENT_REQUIRE_DOCKER=1."""
    try:
        return __import__(module)
    except ImportError as exc:
        skip_unless_present(f"{module} cannot be imported ({exc})")


def wait_until(predicate: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll `predicate` until it returns something true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout_s:g}s for {what}", pytrace=False)
        time.sleep(interval_s)


def runs_dir_with_cache(runs: Path, cache: Path) -> Path:
    """A runs directory whose .cache is `cache` (conftest's session-wide `baseline_cache`)."""
    runs.mkdir(parents=True, exist_ok=True)
    (runs / ".cache").symlink_to(cache, target_is_directory=True)
    return runs


# -- the discount repository ----------------------------------------------------------------------

def fix_diff() -> str:
    """The one-line repair of the discount bug, as a unified diff."""
    old = PRICING.read_text().splitlines(keepends=True)
    new = [line.replace("price * (1 - discount)", "price * (1 - discount / 100)") for line in old]
    return "".join(difflib.unified_diff(old, new, f"a/{PRICING_REL}", f"b/{PRICING_REL}"))


class Scripted:
    """Proposes the given items in order (dicts or callables of the view)."""

    name = "scripted"

    def __init__(self, *items):
        self.items, self.calls = list(items), 0

    def choose(self, view):
        item = self.items[min(self.calls, len(self.items) - 1)]
        self.calls += 1
        return item(view) if callable(item) else item


def local_run(chooser, runs_dir, **kw):
    """The discount-bug scenario with the local backend (real git, real pytest, real verifier)."""
    from repair_agent.lifecycle.run import execute_run
    from repair_agent.scenarios.scenario import resolve

    return execute_run(resolve("discount-bug"), chooser, backend="local", runs_dir=runs_dir, **kw)


# -- a scenario a user writes for their own repository ---------------------------------------------

USER_MANIFEST = """
name = "word-count"
repo = "wordy"
[goal]
text = "count_words must ignore repeated spaces"
failure_signature = "assert 4 == 2"
[acceptance]
target_tests = ["tests/test_words.py::test_repeated_spaces"]
writable = ["src/**"]
[budget]
max_steps = 6
[baseline]
search = 'text.split(" ")'
replace = "text.split()"
"""


def make_user_scenario(root: Path) -> Path:
    repo = root / "wordy"
    (repo / "src/wordy").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\ntestpaths = ["tests"]\n')
    (repo / "src/wordy/__init__.py").write_text(
        'def count_words(text):\n    """Number of words in text."""\n    return len([w for w in text.split(" ")])\n')
    (repo / "tests/test_words.py").write_text(
        "from wordy import count_words\n\n\n"
        "def test_single_word():\n    assert count_words('hello') == 1\n\n\n"
        "def test_two_words():\n    assert count_words('hello world') == 2\n\n\n"
        "def test_repeated_spaces():\n    assert count_words('a   b') == 2\n")
    manifest = root / "word-count.scenario.toml"
    manifest.write_text(USER_MANIFEST)
    return manifest


# -- sweep results as results.jsonl holds them -------------------------------------------------------

GREEN, BUDGET, HANDOFF = "awaiting_release_confirmation", "step_budget", "handoff_requested"
SCENARIOS = [f"bug-{i:02d}" for i in range(28)]


def sweep_line(scenario: str, chooser: str, seed: int, green: bool, *, budget: int = 12,
               correctness: str | None = "correct", expected: str = GREEN, status: str | None = None,
               steps: int = 6, complete: bool = True) -> SweepResult:
    """One results.jsonl line, as load_results reads it back. `correctness` is set only on green runs,
    as the run record does; pass `correctness=...` (Ellipsis) to leave the field out, as older lines do."""
    from repair_agent.sweep import SweepResult

    status = status or (GREEN if green else BUDGET)
    row = SweepResult(scenario=scenario, kind="k", tags=["t"], expected=expected, chooser=chooser, budget=budget,
                      seed=seed, status=status, exit_code=0, correct=status == expected, steps=steps,
                      max_steps=budget, tokens=0, wall_s=3.0, run_dir=None,
                      rubric={"complete": complete}).model_dump()
    if correctness is not ...:
        row["correctness"] = correctness if status == GREEN else None
    return SweepResult.model_validate(json.loads(json.dumps(row, sort_keys=True)))


def cell_lines(chooser: str, repaired: set[str] | dict[int, set[str]], seeds: int = 3, **kw) -> list[SweepResult]:
    """Every scenario × seed of one cell; `repaired` is the green scenarios (per seed when a dict)."""
    out = []
    for seed, scenario in itertools.product(range(seeds), SCENARIOS):
        greens = repaired[seed] if isinstance(repaired, dict) else repaired
        out.append(sweep_line(scenario, chooser, seed, scenario in greens, **kw))
    return out


# -- a small repository with a buggy clamp, in a local sandbox ---------------------------------
CALC = '''\
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return lo
    return x


def mean(values):
    total = 0
    for v in values:
        total += v
    return total / (len(values) + 1)


def span(values):
    return max(values) - min(values)
'''

CALC_TESTS = '''\
from calc import clamp, mean, span


def test_clamp_low():
    assert clamp(-1, 0, 5) == 0


def test_clamp_mid():
    assert clamp(3, 0, 5) == 3


def test_clamp_high():
    assert clamp(9, 0, 5) == 5


def test_span():
    assert span([1, 4, 2]) == 3


def test_mean():
    assert mean([2, 4]) == 3


def test_mean_one():
    assert mean([5]) == 5
'''


def target_observation(output: str, localization=None):
    """The Evidence of a failed run_target_test whose output is `output` (and, given, its localization)."""
    from repair_agent.loop.state import Evidence
    return Evidence(id="E1", step=1, tool="run_target_test", status="failed", source="sandbox",
                    started_at="2026-01-01T00:00:00+00:00", duration_s=0.1, summary="target fails", output=output,
                    diff_sha256="0" * 64, fingerprint="f", result_sha256="r", action='{"tool": "run_target_test"}',
                    localization=localization)


def calc_sandbox(tmp_path: Path, source: str = CALC, tests: str = CALC_TESTS):
    """`source` as src/calc.py and `tests` as tests/test_calc.py, committed, in a LocalSandbox."""
    from repair_agent.sandbox import LocalSandbox, create_workspace

    repo = tmp_path / "pristine"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (repo / "src/calc.py").write_text(source)
    (repo / "tests/test_calc.py").write_text(tests)
    base = create_workspace(repo, tmp_path / "ws", for_container=False)
    (tmp_path / "out").mkdir()
    return LocalSandbox(tmp_path / "ws", base, output_dir=tmp_path / "out")


def git_history(root: Path, author: str = "Project Dev", email: str = "dev@example.org"):
    """A new git repository at `root` (branch `main`), and a function that commits everything in the
    working tree with a message and returns the commit's sha."""
    import git

    git.Repo.init(root, initial_branch="main").close()
    who = git.Actor(author, email)

    def commit(message: str) -> str:
        with git.Repo(root) as repo:
            repo.git.add(A=True)
            return repo.index.commit(message, author=who, committer=who).hexsha

    return commit


def committed_tree(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` holding `files` (path -> text) in one commit on `main`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git_history(root)("initial")
    return root
