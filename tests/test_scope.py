"""The diff-scope check and the glob rules, on real diffs produced by git."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from verifier.scope import check_scope
from verifier.spec import AcceptanceSpec, glob_match, nodeid_to_junit_key

SPEC = AcceptanceSpec(scenario="s", target_tests=("tests/test_a.py::test_a",), writable=("src/**",))


def git_diff(tmp_path: Path, change) -> str:
    """Make a real repository, apply `change(root)`, return `git diff` of it (binary, full index)."""
    root = tmp_path / "repo"
    (root / "src/pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src/pkg/mod.py").write_text("def f():\n    return 1\n")
    (root / "tests/test_a.py").write_text("def test_a():\n    assert True\n")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    run = lambda *a: subprocess.run(["git", *a], cwd=root, env=env, check=True, capture_output=True, text=True)
    run("init", "-q")
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    change(root)
    run("add", "-A")
    return run("diff", "--cached", "--binary", "HEAD").stdout


def rules(verdict) -> set[str]:
    return {v.rule for v in verdict.violations}


def test_a_source_fix_is_in_scope(tmp_path):
    v = check_scope(git_diff(tmp_path, lambda r: (r / "src/pkg/mod.py").write_text("def f():\n    return 2\n")), SPEC)
    assert v.ok and [f.path for f in v.files] == ["src/pkg/mod.py"] and v.added_lines == 1


@pytest.mark.parametrize("change, rule", [
    (lambda r: (r / "tests/test_a.py").write_text("def test_a():\n    assert 1\n"), "protected"),
    (lambda r: (r / "tests/test_a.py").unlink(), "protected"),
    (lambda r: (r / "conftest.py").write_text("x = 1\n"), "protected"),
    (lambda r: (r / "src/conftest.py").write_text("x = 1\n"), "protected"),
    (lambda r: (r / "pyproject.toml").write_text("[tool.pytest.ini_options]\n"), "protected"),
    (lambda r: (r / "src/sitecustomize.py").write_text("x = 1\n"), "test-infrastructure"),
    (lambda r: (r / "src/evil.pth").write_text("import os\n"), "test-infrastructure"),
    (lambda r: (r / "src/pytest.py").write_text("x = 1\n"), "test-infrastructure"),
    (lambda r: (r / "README.md").write_text("hi\n"), "not-writable"),
    (lambda r: os.symlink("/etc/passwd", r / "src/link"), "symlink"),
    (lambda r: (r / "src/pkg/mod.py").chmod(0o755), "mode-change"),
    (lambda r: (r / "src/pkg/blob.bin").write_bytes(b"\0\1\2\3"), "binary"),
    (lambda r: (r / "src/pkg/mod.py").rename(r / "src/pkg/other.py"), "rename"),
    (lambda r: (r / "src/pkg/mod.py").write_text("import _pytest\ndef f():\n    return 2\n"), "harness-tampering"),
    (lambda r: (r / "src/pkg/mod.py").write_text("import sys\nX = 'pytest' in sys.modules\n"), "harness-tampering"),
], ids=["edit-test", "delete-test", "root-conftest", "src-conftest", "pytest-config", "sitecustomize", "pth",
        "shadow-pytest", "outside-writable", "symlink", "mode-change", "binary", "rename-in-src", "import-_pytest",
        "sys-modules"])
def test_out_of_scope_changes_are_refused(tmp_path, change, rule):
    v = check_scope(git_diff(tmp_path, change), SPEC)
    assert not v.ok and rule in rules(v), rules(v)


def test_path_escapes_and_garbage():
    escape = "--- a/../outside.py\n+++ b/../outside.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert "path" in rules(check_scope(escape, SPEC))
    absolute = "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"
    assert not check_scope(absolute, SPEC).ok
    git_dir = "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n"
    assert "protected" in rules(check_scope(git_dir, SPEC))
    assert "empty" in rules(check_scope("", SPEC))
    junk = check_scope("hello\nworld\n", SPEC)
    assert not junk.ok and rules(junk) & {"unparsable", "empty"}


def test_size_limit():
    big = "--- a/src/x.py\n+++ b/src/x.py\n@@ -1,1 +1,3000 @@\n-a\n" + "".join(f"+l{i}\n" for i in range(3000))
    assert "size" in rules(check_scope(big, SPEC))


def test_globs_and_junit_keys():
    assert glob_match("src/a/b.py", ["src/**"]) and not glob_match("srcx/a.py", ["src/**"])
    assert glob_match("conftest.py", ["**/conftest.py"]) and glob_match("a/b/conftest.py", ["**/conftest.py"])
    assert not glob_match("src/a.py", ["src/*.txt"]) and glob_match("src/a.py", ["src/*.py"])
    assert not glob_match("src/a/b.py", ["src/*.py"])
    assert SPEC.is_protected("tests/x.py") and SPEC.is_protected(".git/HEAD") and not SPEC.is_writable("tests/x.py")
    assert nodeid_to_junit_key("tests/test_a.py::TestX::test_y[1-2]") == "tests.test_a.TestX::test_y[1-2]"
    assert nodeid_to_junit_key("tests/test_a.py::test_b") == "tests.test_a::test_b"
