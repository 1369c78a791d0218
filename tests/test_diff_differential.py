"""Diff parsing differentials: a diff that unidiff and `git apply` read differently never passes
the scope gate.

Each hostile diff below is written against a small real repository, and where git applies it the
test first shows what `git apply` (as the sandbox runs it) really does to the tree: a protected or
refused path written, a test file moved away, a symlink made. Then the scope check must refuse
it, with the rule named here, whatever a person granted. Honest diffs (the corpus's reference
fixes, as proposed and as the sandbox's `git diff` returns them) must still pass.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import hostile_choosers as h
from repair_agent.loop.journal import read_journal, verify_chain
from repair_agent.lifecycle.run import execute_run
from repair_agent.sandbox.base import DIFF_SCRIPT
from repair_agent.scenarios.scenario import discover, resolve
from repair_agent.loop.state import StopReason
from verifier import scope
from verifier.scope import GRANTABLE_RULES, check_scope, git_reading
from verifier.spec import AcceptanceSpec

SPEC = AcceptanceSpec(scenario="s", target_tests=("tests/test_a.py::test_a",), writable=("src/**",))
FILES = {"src/pkg/mod.py": "def f():\n    return 1\n", "src/pkg/plugin.py": "X = 1\n",
         "src/pkg/__init__.py": "", "tests/test_a.py": "def test_a():\n    assert f() == 2\n"}


class Repo:
    """A real git repository holding FILES, committed."""

    def __init__(self, tmp_path: Path, files: dict[str, str] = FILES):
        self.root = tmp_path / "repo"
        for rel, text in files.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(text)
        self.env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")

    def git(self, *args, data: bytes | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=self.root, env=self.env, input=data, capture_output=True)

    def apply(self, diff: str, *flags: str) -> set[str]:
        """Apply as the sandbox does; the changes git made, as `git status` names them."""
        proc = self.git("apply", "--whitespace=nowarn", *flags, "-", data=diff.encode("utf-8", "surrogateescape"))
        assert proc.returncode == 0, proc.stderr
        self.git("add", "-A")
        entries = self.git("status", "--porcelain", "-z").stdout.decode().split("\0")
        return {e for e in entries if e and e[2:3] == " "}

    def sandbox_diff(self) -> str:
        """The diff the sandbox hands the verifier (its DIFF_SCRIPT, against the base commit)."""
        return subprocess.run(["sh", "-c", DIFF_SCRIPT, "HEAD"], cwd=self.root, env=self.env, capture_output=True,
                              check=True).stdout.decode("utf-8", "surrogateescape")


def rules(verdict) -> set[str]:
    return {v.rule for v in verdict.violations}


CONFTEST = "+X = 1\n"
# (diff, rules the refusal must name, what `git apply` does with it: status entries, or None when
# git refuses to apply it anyway).
HOSTILE = [
    pytest.param("--- /dev/null\n+++ b/src/conftest.py\r\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"control-character", "ambiguous-diff", "protected"}, {"A  src/conftest.py"},
                 id="carriage-return-ends-the-plus-path"),
    pytest.param("--- /dev/null\n+++ b/src/conftest.py 2024-05-01 12:00:00.000000000 +0000\n@@ -0,0 +1 @@\n"
                 + CONFTEST, {"ambiguous-diff", "protected"}, {"A  src/conftest.py"},
                 id="timestamp-after-a-space"),
    pytest.param("diff --git a/src/pkg/mod.py b/src/pkg/mod.py\n--- a/tests/test_a.py\n+++ b/src/pkg/mod.py\n"
                 "@@ -1,2 +1,2 @@\n-def test_a():\n+def test_b():\n     assert f() == 2\n",
                 {"ambiguous-diff", "rename", "protected"}, {"M  src/pkg/mod.py", "D  tests/test_a.py"},
                 id="minus-line-names-another-file-than-the-header"),
    pytest.param("diff --git a/src/pkg/new.py b/src/pkg/new.py\nsimilarity index 100%\n"
                 "rename from tests/test_a.py\nrename to src/pkg/new.py\n",
                 {"ambiguous-diff", "rename", "protected"}, {"R  src/pkg/new.py"},
                 id="rename-from-a-test-under-a-src-header"),
    pytest.param("diff --git a/src/pkg/ok.py b/src/pkg/ok.py\nsimilarity index 100%\n"
                 "copy from src/pkg/plugin.py\ncopy to src/conftest.py\n",
                 {"ambiguous-diff", "copy", "protected"}, {"A  src/conftest.py"},
                 id="copy-into-conftest-under-another-header"),
    pytest.param("--- src/tests/test_a.py\n+++ src/tests/test_a.py\n@@ -1,2 +1,2 @@\n def test_a():\n"
                 "-    assert f() == 2\n+    assert True\n",
                 {"ambiguous-diff", "protected"}, {"M  tests/test_a.py"}, id="prefixless-path-stripped-by-p1"),
    pytest.param('--- /dev/null\n+++ "b/src/conf\\164est.py"\n@@ -0,0 +1 @@\n' + CONFTEST,
                 {"protected"}, {"A  src/conftest.py"}, id="octal-escape-in-a-quoted-path"),
    pytest.param('diff --git "a/src/x\\tb.py" "b/src/x\\tb.py"\nnew file mode 100644\n--- /dev/null\n'
                 '+++ "b/src/x\\tb.py"\n@@ -0,0 +1 @@\n' + CONFTEST,
                 {"control-character"}, {"A  src/x\tb.py"}, id="tab-escape-in-a-quoted-path"),
    pytest.param("--- /dev/null\n+++ b/src/conftest.py\0.txt\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"control-character", "ambiguous-diff", "protected"}, {"A  src/conftest.py"},
                 id="nul-cuts-the-path-for-git"),
    pytest.param("diff --git a/src/pkg/link b/src/pkg/link\nnew file mode 120000\r\n--- /dev/null\n+++ b/src/pkg/link\n"
                 "@@ -0,0 +1 @@\n+../../tests/test_a.py\n\\ No newline at end of file\n",
                 {"symlink", "ambiguous-diff"}, {"A  src/pkg/link"}, id="symlink-mode-line-ending-in-cr"),
    pytest.param("diff --git a/src/pkg/mod.py b/src/pkg/mod.py\nold mode 100644\r\nnew mode 100755\r\n",
                 {"mode-change", "ambiguous-diff"}, {"M  src/pkg/mod.py"}, id="mode-lines-ending-in-cr"),
    pytest.param("--- a/src/pkg/new.py\t1970-01-01 00:00:00.000000000 +0000\n"
                 "+++ b/src/pkg/new.py\t2024-05-01 12:00:00.000000000 +0000\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"ambiguous-diff"}, {"A  src/pkg/new.py"}, id="epoch-timestamp-makes-git-create"),
    pytest.param("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"ambiguous-diff", "path", "not-writable"}, {"A  dev/null"}, id="dev-null-on-both-sides"),
    pytest.param("diff --git a/src/pkg/mod.py b/src/pkg/mod.py\n--- /dev/null\n+++ b/src/pkg/mod.py\n"
                 "@@ -0,0 +1 @@\n" + CONFTEST, {"ambiguous-diff", "rename"}, None,
                 id="dev-null-under-a-git-header-is-a-file-to-git"),
    pytest.param("diff --git a/conftest.py b/src/x.py b/conftest.py b/src/x.py\nnew file mode 100644\n",
                 {"ambiguous-diff", "not-writable"}, {"A  conftest.py b/src/x.py"},
                 id="spaces-split-the-git-header-differently"),
    pytest.param("diff --git a/src/pkg/n.py b/src/pkg/n.py\nnew file mode 100644\n--- a/src/pkg/n.py\n"
                 "+++ b/src/pkg/n.py\n@@ -0,0 +1 @@\n" + CONFTEST, {"ambiguous-diff"}, None,
                 id="git-cannot-read-what-unidiff-reads"),
    pytest.param("--- /dev/null\n+++ b/src/ConfTest.py\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"confusable-path"}, {"A  src/ConfTest.py"}, id="case-only-difference"),
    pytest.param("--- /dev/null\n+++ b/src/\uff43onftest.py\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"confusable-path"}, {"A  src/\uff43onftest.py"}, id="fullwidth-look-alike"),
    pytest.param("--- /dev/null\n+++ b/src/conftest.py.\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"confusable-path"}, {"A  src/conftest.py."}, id="trailing-dot"),
    pytest.param("--- /dev/null\n+++ b/src/conf\u200btest.py\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"control-character"}, {"A  src/conf\u200btest.py"}, id="zero-width-space"),
    pytest.param("--- /dev/null\n+++ b/src/\u202eyp.tsetfnoc\n@@ -0,0 +1 @@\n" + CONFTEST,
                 {"control-character"}, {"A  src/\u202eyp.tsetfnoc"}, id="right-to-left-override"),
]


@pytest.mark.parametrize("diff, expected, effect", HOSTILE)
def test_a_diff_read_two_ways_is_refused(tmp_path, diff, expected, effect):
    if effect is not None:  # the attack is real: this is what the sandbox's `git apply` does
        changed = Repo(tmp_path).apply(diff)
        assert changed == effect, changed
    verdict = check_scope(diff, SPEC)
    assert not verdict.ok and expected <= rules(verdict), verdict.violations
    if expected - set(GRANTABLE_RULES):  # and no person's grant can waive it
        assert not check_scope(diff, SPEC, granted=("**",)).ok


def test_the_refusal_names_both_readings():
    diff = "--- /dev/null\n+++ b/src/conftest.py\r\n@@ -0,0 +1 @@\n" + CONFTEST
    verdict = check_scope(diff, SPEC)
    [ambiguous] = [v for v in verdict.violations if v.rule == "ambiguous-diff"]
    assert "unidiff reads added 'src/conftest.py\\r'" in ambiguous.detail
    assert "git apply reads added 'src/conftest.py'" in ambiguous.detail
    assert [f.path for f in verdict.files] == ["src/conftest.py\r"]
    assert [f.path for f in verdict.git_files] == ["src/conftest.py"]
    # git's reading is judged on its own: the conftest it would write is refused by name.
    assert any(v.rule == "protected" and v.path == "src/conftest.py" for v in verdict.violations)


def test_git_unreadable_diff_is_a_parse_error():
    diff = ("diff --git a/src/pkg/n.py b/src/pkg/n.py\nnew file mode 100644\n--- a/src/pkg/n.py\n"
            "+++ b/src/pkg/n.py\n@@ -0,0 +1 @@\n+x = 1\n")
    verdict = check_scope(diff, SPEC)
    assert verdict.parse_error and verdict.parse_error.startswith("git apply cannot read the diff")
    assert "expected /dev/null" in verdict.parse_error


def test_a_normalised_look_alike_of_a_protected_name_is_refused(tmp_path):
    spec = AcceptanceSpec(scenario="s", target_tests=("tests/test_a.py::test_a",), writable=("src/**",),
                          protected=("src/pkg/r\u00e9glages.py",))
    nfd = "src/pkg/re\u0301glages.py"  # the same name, decomposed: one file on a normalising file system
    diff = f"--- /dev/null\n+++ b/{nfd}\n@@ -0,0 +1 @@\n+X = 2\n"
    assert Repo(tmp_path).apply(diff) == {f"A  {nfd}"}
    assert "confusable-path" in rules(check_scope(diff, spec))


# Miscounted hunks. Whether unidiff is given the diff as written or with its hunk headers
# recounted first, what git applies is refused: by the disagreement, or by what unidiff then sees.

def test_a_line_past_a_miscounted_header_is_caught_when_the_apply_recounts(tmp_path, monkeypatch):
    """git --recount applies a `+` line that unidiff, trusting the header, leaves out: the check
    reads with the apply's flags, so it sees that line too."""
    diff = "--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n" \
           "+import _pytest\n"
    repo = Repo(tmp_path)
    repo.apply(diff, "--recount")
    assert "import _pytest" in (repo.root / "src/pkg/mod.py").read_text()
    monkeypatch.setattr(scope, "GIT_APPLY_READ_FLAGS", ("--recount",))
    verdict = check_scope(diff, SPEC)
    assert sum(f.added for f in verdict.files) == 2 or "ambiguous-diff" in rules(verdict), verdict.violations
    assert [(f.added, f.removed) for f in verdict.git_files] == [(2, 1)]  # what the gate reads, too


@pytest.mark.parametrize("flags", [(), ("--recount",)], ids=["as-applied-today", "recount"])
def test_a_second_section_inside_a_miscounted_hunk_is_refused(monkeypatch, flags):
    """The header promises one line more than the hunk has: git trusting it finds the patch
    corrupt, git recounting reads the `diff --git` section after it as a second file, a conftest."""
    diff = ("--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n@@ -1,2 +1,3 @@\n def f():\n-    return 1\n+    return 2\n"
            "diff --git a/src/conftest.py b/src/conftest.py\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/src/conftest.py\n@@ -0,0 +1 @@\n" + CONFTEST)
    read, problems = git_reading(diff, flags)
    if flags:
        assert [f.path for f in read] == ["src/pkg/mod.py", "src/conftest.py"]
    else:
        assert read is None and "corrupt patch" in problems[0]
    monkeypatch.setattr(scope, "GIT_APPLY_READ_FLAGS", flags)
    verdict = check_scope(diff, SPEC)
    assert not verdict.ok and rules(verdict) & {"unparsable", "protected"}, verdict.violations


def test_git_reading_of_renames_modes_symlinks_binaries_deletions_and_creations(tmp_path):
    """What git reports for every kind of change, read with no files present, equals unidiff's."""
    repo = Repo(tmp_path, {**FILES, "src/pkg/gone.py": "x = 1\n", "src/pkg/old.py": "a\nb\nc\nd\n"})
    root = repo.root
    (root / "src/pkg/gone.py").unlink()
    (root / "src/pkg/new.py").write_text("y = 2\n")
    (root / "src/pkg/old.py").rename(root / "src/pkg/moved.py")
    (root / "src/pkg/mod.py").chmod(0o755)
    os.symlink("mod.py", root / "src/pkg/link")
    (root / "src/pkg/blob.bin").write_bytes(b"\0\1\2")
    repo.git("add", "-A")
    diff = repo.git("diff", "--cached", "--binary", "-M", "HEAD").stdout.decode()
    read, problems = git_reading(diff)
    assert problems == []
    got = {f.path: (f.kind, f.source, f.source_mode, f.target_mode, f.binary) for f in read}
    assert got == {
        "src/pkg/blob.bin": ("added", None, None, "100644", True),
        "src/pkg/gone.py": ("removed", "src/pkg/gone.py", "100644", None, False),
        "src/pkg/link": ("added", None, None, "120000", False),
        "src/pkg/mod.py": ("modified", "src/pkg/mod.py", "100644", "100755", False),
        "src/pkg/moved.py": ("renamed", "src/pkg/old.py", None, None, False),
        "src/pkg/new.py": ("added", None, None, "100644", False),
    }
    verdict = check_scope(diff, SPEC)
    # Refused for what the diff does (binary, symlink, mode, rename), never because the readings differ.
    assert {"binary", "symlink", "mode-change", "rename"} <= rules(verdict) and "ambiguous-diff" not in rules(verdict)


def test_a_quoted_non_ascii_path_git_writes_is_read_alike(tmp_path):
    repo = Repo(tmp_path, {**FILES, "src/pkg/caf\u00e9.py": "x = 1\n"})
    (repo.root / "src/pkg/caf\u00e9.py").write_text("x = 2\n")
    diff = repo.sandbox_diff()
    assert '"a/src/pkg/caf\\303\\251.py"' in diff  # git quotes it
    verdict = check_scope(diff, SPEC)
    assert verdict.ok, verdict.violations
    assert [f.path for f in verdict.files] == [f.path for f in verdict.git_files] == ["src/pkg/caf\u00e9.py"]


def test_an_empty_file_gaining_lines_is_a_modification_for_both(tmp_path):
    repo = Repo(tmp_path)
    (repo.root / "src/pkg/__init__.py").write_text("from .mod import f\n")
    verdict = check_scope(repo.sandbox_diff(), SPEC)
    assert verdict.ok and [f.kind for f in verdict.files] == [f.kind for f in verdict.git_files] == ["modified"]


def _reference_fixes():
    scenarios, _ = discover()
    return [pytest.param(s, id=name) for name, s in sorted(scenarios.items()) if s.reference_fix]


@pytest.mark.parametrize("scenario", _reference_fixes())
def test_honest_reference_fixes_are_accepted_as_proposed_and_as_the_sandbox_returns_them(tmp_path, scenario):
    fix = scenario.reference_fix.read_text()
    spec = scenario.spec
    if scenario.expected != "awaiting_release_confirmation":  # a handoff scenario's fix needs a grant
        spec = spec.model_copy(update={"writable": ("**",)})  # as the corpus check widens it
    verdict = check_scope(fix, spec)
    assert verdict.ok, verdict.violations
    assert [(f.path, f.kind, f.added, f.removed) for f in verdict.files] == \
           [(f.path, f.kind, f.added, f.removed) for f in verdict.git_files]
    # The same fix applied to the buggy tree, as the sandbox's `git diff` (with `diff --git`
    # headers and index lines) hands it to run_target_test, run_full_suite and check_diff.
    shutil.copytree(scenario.repo, tmp_path / "tree", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    files = {str(p.relative_to(tmp_path / "tree")): p.read_text() for p in (tmp_path / "tree").rglob("*") if p.is_file()}
    repo = Repo(tmp_path / "git", files)
    repo.apply(fix)
    verdict = check_scope(repo.sandbox_diff(), spec)
    assert verdict.ok, verdict.violations


# -- through the controller ------------------------------------------------------------------------

class ProposesOnce:
    """Proposes one patch, then stops (the patch is refused first, so stop never comes)."""

    name = "scripted:diff-differential"

    def __init__(self, diff: str):
        self.diff = diff

    def choose(self, view):
        if not view.evidence:
            return {"tool": "apply_patch", "diff": self.diff}
        return {"tool": "stop", "reason": "done"}


def _refused_run(diff: str, runs_dir: Path, expected: StopReason) -> dict:
    record = execute_run(resolve("discount-bug"), ProposesOnce(diff), backend="local", runs_dir=runs_dir)
    assert record.status is expected and record.exit_code == expected.exit_code, record.detail
    run_dir = Path(record.run_dir)
    records = list(read_journal(run_dir / "journal.jsonl"))
    assert verify_chain(records) == []
    stop = records[-1]
    assert stop["event"] == "stop" and stop["status"] == expected.value
    assert stop["extra"]["raw"] == diff  # the raw diff, byte for byte (a CR, a NUL and all)
    assert (run_dir / "report.json").is_file()
    # Refused before anything ran: the workspace is still the pristine tree.
    workspace = run_dir / "workspace"
    assert not (workspace / "src/conftest.py").exists()
    assert (workspace / h.TESTS).read_text() == h.pristine(h.TESTS)
    return stop


def test_a_cr_ended_path_stops_the_run_at_the_gate(runs_dir):
    conftest = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    diff = h.unified("src/conftest.py", None, conftest).replace("+++ b/src/conftest.py\n", "+++ b/src/conftest.py\r\n")
    stop = _refused_run(diff, runs_dir, StopReason.AUTHORIZATION_REQUIRED)
    assert {"ambiguous-diff: src/conftest.py", "control-character: src/conftest.py\r", "protected: src/conftest.py"} <= \
           set(stop["extra"]["grant"]), stop["extra"]["grant"]


def test_a_hidden_move_of_the_target_test_stops_the_run_at_the_gate(runs_dir):
    # `--- a/tests/...` under a header and `+++` naming the pricing module: git would move the test
    # file onto pricing.py (deleting the target test); unidiff sees an edit of pricing.py.
    body = h.edit(h.TESTS, "assert apply_discount(100, 10) == 90", "assert apply_discount(100, 10) == 100")
    diff = (f"diff --git a/{h.PRICING} b/{h.PRICING}\n" + body.replace(f"+++ b/{h.TESTS}", f"+++ b/{h.PRICING}"))
    stop = _refused_run(diff, runs_dir, StopReason.AUTHORIZATION_REQUIRED)
    grants = set(stop["extra"]["grant"])
    assert {f"rename: {h.PRICING}", f"protected: {h.TESTS}"} <= grants and any("ambiguous-diff" in g for g in grants)


def test_a_diff_git_cannot_read_is_an_observation_and_nothing_runs(runs_dir):
    """No grant could make an unreadable diff acceptable: the chooser is told it is malformed (an
    observation it can act on), nothing is applied, and the run goes on to the chooser's stop."""
    diff = h.unified("src/discount_shop/extra.py", None, "X = 1\n").replace(
        "--- /dev/null", "diff --git a/src/discount_shop/extra.py b/src/discount_shop/extra.py\nnew file mode 100644\n"
                         "--- a/src/discount_shop/extra.py")
    record = execute_run(resolve("discount-bug"), ProposesOnce(diff), backend="local", runs_dir=runs_dir)
    assert record.status is StopReason.HANDOFF_REQUESTED and record.steps_used == 2, record.detail
    first = [r for r in read_journal(Path(record.run_dir) / "journal.jsonl") if r["event"] == "step"][0]
    assert first["proposal"]["diff"] == diff and first["result"]["source"] == "controller:diff-check"
    assert "your diff is malformed: git apply cannot read the diff" in first["result"]["raw_error"]
    assert not (Path(record.run_dir) / "workspace/src/discount_shop/extra.py").exists() and record.diff_sha256 == first["view"]["current_diff_sha256"]
