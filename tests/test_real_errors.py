"""Real bugs as a user brings them, through the real CLI and Docker: a hang under a short suite
limit fails alone; a file pytest cannot collect is named with pytest's own cause; a target whose
test imports a name the fix adds fails before the fix (SWE-bench's reading), a pass-to-pass test
that cannot be collected is refused with its cause; `run --repo --pass-to-pass @FILE` makes the
listed tests the suite condition."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from helpers import committed_tree
from rangekit_project import build_rangekit

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]
WHO = git.Actor("Project Dev", "dev@example.org")
PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\ntestpaths = ["tests"]\n'


def cli(runs: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def project(root: Path, files: dict[str, str], manifest: str | None = None, fix: str | None = None) -> Path:
    """A git repository of `files`; with a manifest (and its reference fix) beside it."""
    committed_tree(root, {"pyproject.toml": PYPROJECT, **files})
    if manifest is None:
        return root
    (root.parent / "fix.diff").write_text(fix or "")
    path = root.parent / f"{root.name}.scenario.toml"
    path.write_text(manifest)
    return path


LOOP_TESTS = '''\
from looper import label, settle


def test_settle_negative():
    assert settle(-3) == "settled"


def test_settle_positive():
    assert settle(3) == "settled"


def test_label():
    assert label(7) == "#7"
'''
# The hang waits between decrements (as a call stuck on I/O does) instead of spinning: the per-test
# limit cuts it all the same, and its 5 s, in every check that runs it, are not 5 s of a busy core.
LOOP = '''\
import time


def settle(balance):
    while balance != 0:      # the bug: a negative balance never reaches 0
        balance -= 1
        time.sleep(0.05)
    return "settled"


def label(x):
    return f"#{x}"
'''
LOOP_FIX = '''\
--- a/src/looper/__init__.py
+++ b/src/looper/__init__.py
@@ -4,6 +4,6 @@
 def settle(balance):
-    while balance != 0:      # the bug: a negative balance never reaches 0
+    while balance > 0:       # the bug: a negative balance never reaches 0
         balance -= 1
         time.sleep(0.05)
     return "settled"
 
'''
LOOP_MANIFEST = '''
name = "looper"
repo = "looper"
reference_fix = "fix.diff"
[goal]
text = "settle must end for a negative balance"
failure_signature = "Timeout"
[acceptance]
target_tests = ["tests/test_loop.py::test_settle_negative"]
writable = ["src/**"]
test_timeout_s = 20
[budget]
max_steps = 6
[baseline]
search = "while balance != 0:"
replace = "while balance > 0: "
'''


def test_a_hang_under_a_short_suite_limit_fails_alone_and_the_run_reaches_the_chooser(tmp_path, sandbox_image):
    manifest = project(tmp_path / "looper", {"src/looper/__init__.py": LOOP, "tests/test_loop.py": LOOP_TESTS},
                       LOOP_MANIFEST, LOOP_FIX)
    # The per-test limit (60 s by default) is cut to a quarter of the suite's 20 s: the hanging target
    # fails alone, with pytest-timeout's words, and the other tests keep their results.
    proc = cli(tmp_path / "runs", "check", str(manifest), "--json")
    check = json.loads(proc.stdout)[0]
    assert proc.returncode == 0 and check["ok"], proc.stdout + proc.stderr[-2000:]
    assert check["collected"] == 3 and check["known_failing"] == []
    assert "Timeout" in check["target_failures"]["tests.test_loop::test_settle_negative"]
    proc = cli(tmp_path / "runs", "run", str(manifest), "--json")
    record = json.loads(proc.stdout)
    assert record["status"] == "awaiting_release_confirmation", proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((Path(record["run_dir"]) / "report.json").read_text())
    assert [v["summary"] for v in report["verdicts"]][:2] == ["target_test: 1/1 passed", "full_suite: 3/3 passed"]


SHOP = {
    "src/shop/__init__.py": "from .core import total\n",
    "src/shop/core.py": "def total(xs):\n    return sum(xs)\n\n\ndef mean(xs):\n    return total(xs) / len(xs)\n",
    "tests/test_total.py": "from shop import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
    # The fix's test imports a name the fix adds: the module cannot be imported before the fix.
    "tests/test_mean.py": "from shop import mean\n\n\ndef test_mean():\n    assert mean([1, 3]) == 2\n\n\n"
                          "def test_mean_one():\n    assert mean([5]) == 5\n",
}
SHOP_FIX = '''\
--- a/src/shop/__init__.py
+++ b/src/shop/__init__.py
@@ -1 +1 @@
-from .core import total
+from .core import mean, total
'''
SHOP_MANIFEST = '''
name = "shop-mean"
repo = "shop"
reference_fix = "fix.diff"
[goal]
text = "export mean"
failure_signature = "cannot import name 'mean'"
[acceptance]
target_tests = ["tests/test_mean.py::test_mean"]
writable = ["src/**"]
[budget]
max_steps = 6
[baseline]
search = "from .core import total"
replace = "from .core import mean, total"
'''


def test_a_target_that_cannot_be_collected_before_the_fix_counts_as_failing(tmp_path, sandbox_image):
    manifest = project(tmp_path / "shop", SHOP, SHOP_MANIFEST, SHOP_FIX)
    proc = cli(tmp_path / "runs", "check", str(manifest), "--json")
    check = json.loads(proc.stdout)[0]
    assert proc.returncode == 0 and check["ok"], proc.stdout + proc.stderr[-2000:]
    said = check["target_failures"]["tests.test_mean::test_mean"]
    assert said.startswith("collection error: ImportError: cannot import name 'mean' from 'shop'"), said
    assert "tests/test_mean.py:1" in said
    # A run gets past the baseline, repairs, and the other test of the module (unknown before the
    # fix) is no "unknown test" after it.
    proc = cli(tmp_path / "runs", "run", str(manifest), "--json")
    record = json.loads(proc.stdout)
    assert record["status"] == "awaiting_release_confirmation", proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((Path(record["run_dir"]) / "report.json").read_text())
    assert [v["summary"] for v in report["verdicts"]][:2] == ["target_test: 1/1 passed", "full_suite: 3/3 passed"]


def test_a_missing_dependency_is_named_per_test_as_the_user_wrote_it(tmp_path, sandbox_image):
    files = {**SHOP, "src/shop/__init__.py": "from .core import mean, total\n",
             "src/shop/core.py": SHOP["src/shop/core.py"].replace("/ len(xs)", "/ (len(xs) + 1)"),  # MEAN_FIX's bug
             "tests/test_six.py": "import six\n\n\ndef test_text_type():\n    assert six.text_type is str\n"}
    repo = project(tmp_path / "shop", files)
    # A pass-to-pass test whose module cannot be imported contradicts the list: refused, with the cause.
    proc = cli(tmp_path / "runs", "run", "--repo", str(repo), "--test", "tests/test_mean.py::test_mean",
               "--pass-to-pass", "tests/test_six.py::test_text_type", "--environment", "none", "--json")
    record = json.loads(proc.stdout)
    assert record["status"] == "dependency_failure", proc.stdout[-2000:]
    assert ("pass-to-pass tests not collected on the pristine repository: tests/test_six.py::test_text_type "
            "(collection error: ModuleNotFoundError: No module named 'six' at tests/test_six.py:1 "
            "(add it to the environment))") in record["detail"], record["detail"]
    # A target in that module fails before the fix, but no fix can make it pass: the corpus check
    # names pytest's cause.
    manifest = tmp_path / "six.scenario.toml"
    manifest.write_text(SHOP_MANIFEST.replace('"tests/test_mean.py::test_mean"', '"tests/test_six.py::test_text_type"')
                        .replace('name = "shop-mean"', 'name = "shop-six"'))
    (tmp_path / "fix.diff").write_text(MEAN_FIX)
    proc = cli(tmp_path / "runs", "check", str(manifest), "--json")
    check = json.loads(proc.stdout)[0]
    assert proc.returncode == 1 and not check["ok"], proc.stdout
    assert check["target_failures"]["tests.test_six::test_text_type"] == (
        "collection error: ModuleNotFoundError: No module named 'six' at tests/test_six.py:1 "
        "(add it to the environment)")
    # Under the whole-suite rule a module no target is in that cannot be imported is named too.
    manifest.write_text(SHOP_MANIFEST.replace('name = "shop-mean"', 'name = "shop-whole"'))
    proc = cli(tmp_path / "runs", "check", str(manifest), "--json")
    check = json.loads(proc.stdout)[0]
    assert proc.returncode == 1 and not check["buggy_tree_ok"], proc.stdout
    assert ("test modules cannot be collected on the buggy tree: tests.test_six [collection error: "
            "ModuleNotFoundError: No module named 'six' at tests/test_six.py:1 (add it to the environment)]"
            ) in check["problems"], check["problems"]


MEAN_FIX = '''\
--- a/src/shop/core.py
+++ b/src/shop/core.py
@@ -5,2 +5,2 @@
 def mean(xs):
-    return total(xs) / (len(xs) + 1)
+    return total(xs) / len(xs)
'''


def commit_all(root: Path, message: str) -> None:
    repo = git.Repo(root)
    repo.git.add(A=True)
    repo.index.commit(message, author=WHO, committer=WHO)
    repo.close()


def test_import_commit_counts_an_unimportable_target_module_failing_and_names_a_missing_dependency(tmp_path,
                                                                                                   sandbox_image):
    before = {k: v for k, v in SHOP.items() if k != "tests/test_mean.py"}
    project(tmp_path / "shop", before)
    (tmp_path / "shop/src/shop/__init__.py").write_text("from .core import mean, total\n")
    (tmp_path / "shop/tests/test_mean.py").write_text(SHOP["tests/test_mean.py"])
    commit_all(tmp_path / "shop", "export mean")
    # Relative paths, as a user types them: the repository and --out, mounted into containers.
    proc = cli(tmp_path / "runs", "import", "commit", "shop", "HEAD", "--out", "imported", "--json", cwd=tmp_path)
    summary = json.loads(proc.stdout)
    assert proc.returncode == 0 and summary["usable"] == 1, proc.stdout + proc.stderr[-3000:]
    assert summary["results"][0]["target_tests"] == ["tests/test_mean.py::test_mean", "tests/test_mean.py::test_mean_one"]
    assert (tmp_path / "imported" / Path(summary["results"][0]["manifest"]).name).is_file()

    # A fix whose test needs a package the environment lacks: the table says which, and what to do.
    core = tmp_path / "shop/src/shop/core.py"
    core.write_text(core.read_text().replace("return sum(xs)", "return sum(xs, 0)"))
    (tmp_path / "shop/tests/test_six.py").write_text("import six\n\n\ndef test_total_text():\n    assert six\n")
    commit_all(tmp_path / "shop", "total: start at 0")
    # (`--environment auto` would install six, from the test's import: none keeps the image bare.)
    proc = cli(tmp_path / "runs", "import", "commit", "shop", "HEAD", "--out", "imported", "--environment", "none",
               cwd=tmp_path)
    assert proc.returncode == 1
    assert ("collection error in tests.test_six: ModuleNotFoundError: No module named 'six' at tests/test_six.py:1 "
            "(add it to the environment)") in proc.stdout, proc.stdout


def test_run_repo_pass_to_pass_from_a_file_is_the_suite_condition(tmp_path, sandbox_image):
    rk = build_rangekit(tmp_path / "rangekit")
    repo = git.Repo(rk.path)
    repo.git.checkout(rk.initial, "--", "src")  # the in_range regression comes back
    # A module of the suite that cannot run here: with a pass-to-pass list it is not run at all.
    (rk.path / "tests/test_slow.py").write_text("import six\n\n\ndef test_six():\n    assert six\n")
    repo.git.add(A=True)
    repo.index.commit("core: simplify", author=WHO, committer=WHO)
    repo.close()
    listed = tmp_path / "p2p.txt"
    listed.write_text("# kept passing\ntests/test_core.py::test_clamp_inside\n\ntests/test_core.py::test_span_is_positive\n")
    proc = cli(tmp_path / "runs", "run", "--repo", str(rk.path), "--test", "tests/test_core.py::test_in_range_includes_high",
               "--pass-to-pass", f"@{listed}", "--writable", "src/**", "--chooser", "search", "--environment", "none",
               "--json")
    record = json.loads(proc.stdout)
    assert record["status"] == "awaiting_release_confirmation", proc.stdout[-2000:] + proc.stderr[-2000:]
    scenario = json.loads((Path(record["run_dir"]) / "scenario.json").read_text())
    assert "tests/test_core.py::test_span_is_positive" in json.dumps(scenario)
    report = json.loads((Path(record["run_dir"]) / "report.json").read_text())
    assert "full_suite: 3/3 passed" in [v["summary"] for v in report["verdicts"]]
    # A list file that does not exist is a usage error that names it.
    proc = cli(tmp_path / "runs", "run", "--repo", str(rk.path), "--test", "tests/test_core.py::test_in_range_includes_high",
               "--pass-to-pass", f"@{tmp_path / 'nope.txt'}")
    assert proc.returncode == 2 and "nope.txt" in proc.stderr, proc.stderr


def test_a_pytest_that_crashes_before_any_test_says_why_first(tmp_path, sandbox_image):
    repo = project(tmp_path / "shop", {**SHOP, "tests/conftest.py": "import six\n"})
    proc = cli(tmp_path / "runs", "run", "--repo", str(repo), "--test", "tests/test_total.py::test_total",
               "--environment", "none", "--json")
    record = json.loads(proc.stdout)
    assert record["status"] == "dependency_failure", proc.stdout[-2000:]
    first_line = record["detail"].splitlines()[0]
    assert ("the pristine repository's suite could not be run: no JUnit report was written (pytest exited 4: "
            "ModuleNotFoundError: No module named 'six' at tests/conftest.py:1 (add it to the environment))"
            ) in first_line, record["detail"][:2000]


def test_import_swebench_reads_collection_errors_as_swebench_does(tmp_path, sandbox_image):
    """FAIL_TO_PASS in a module the buggy tree cannot import: usable. PASS_TO_PASS in a module that
    needs a package the environment lacks: skipped, and the table says which package."""
    base = {k: v for k, v in SHOP.items() if k != "tests/test_mean.py"}
    root = project(tmp_path / "repos" / "shop", base)
    repo = git.Repo(root)
    initial = repo.head.commit.hexsha
    (root / "tests/test_mean.py").write_text(SHOP["tests/test_mean.py"])
    (root / "tests/test_six.py").write_text("import six\n\n\ndef test_text_type():\n    assert six.text_type is str\n")
    repo.git.add(A=True)
    test_patch = repo.git.diff("--cached", "--no-color") + "\n"
    repo.git.reset("--hard")
    repo.close()
    shared = {"repo": "example/shop", "base_commit": initial, "patch": SHOP_FIX, "test_patch": test_patch,
              "FAIL_TO_PASS": ["tests/test_mean.py::test_mean"], "problem_statement": "export mean"}
    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text(json.dumps({**shared, "instance_id": "shop-1", "PASS_TO_PASS": ["tests/test_total.py::test_total"]})
                     + "\n" + json.dumps({**shared, "instance_id": "shop-2",
                                          "PASS_TO_PASS": ["tests/test_six.py::test_text_type"]}) + "\n")
    proc = cli(tmp_path / "runs", "import", "swebench", str(jsonl), "--repos", str(tmp_path / "repos"), "--out",
               str(tmp_path / "out"), "--environment", "none")  # auto would install six
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("shop-")}
    assert " usable " in rows["shop-1"], proc.stdout
    assert rows["shop-2"].split(None, 4)[1:] == ["skipped", "1", "1", "collection error: ModuleNotFoundError: No "
                                                 "module named 'six' at tests/test_six.py:1 (add it to the "
                                                 "environment)"], proc.stdout
