"""What the person sees is the truth: text a chooser or a candidate wrote is shown, never acted on.

A hostile plug-in (tests/hostile_choosers.py:HiddenBackdoor) runs discount-bug in Docker through the
real CLI: its search query carries markup and terminal escape sequences, its diff a backdoor line
followed by a comment that erases the line above it in a terminal, bidi controls, and a second
backdoor that a carriage return overwrites with a comment. The gate asks a
person about those characters (control-character); granted and resumed, the diff verifies and waits
for the release prompt. Every view of the run (the step lines, `show`, `show --diff`, `--json`,
`replay`, `runs`, report.md, report.html, the interactive release prompt) names each hidden character
(`\\x1b`, `<U+202E>`) and never sends it, and the backdoor line stays in sight.
"""
from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hostile_choosers as h
from helpers import runs_dir_with_cache

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
CHOOSER = "hostile_choosers:HiddenBackdoor"
# What must never reach the person's terminal or page as itself.
RAW = ("\x1b", "\x07", "\r", "\u202e", "\u2066", "\u2069", "\u200b")


def cli(runs_dir: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    """The CLI's output as sent: bytes decoded without newline translation, so a carriage return
    that reached the terminal is seen as one."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
           "REPAIR_AGENT_RELEASER": "view-tester"}
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs_dir), *args], cwd=ROOT,
                          env=env, capture_output=True, timeout=600, **kw)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def text_of(path: Path) -> str:
    return path.read_bytes().decode()  # no newline translation: a carriage return stays one


def assert_shown_not_sent(text: str) -> None:
    found = [f"U+{ord(c):04X}" for c in RAW if c in text]
    assert not found, f"sent as themselves: {found}"


@pytest.fixture(scope="module")
def refused(docker_client, sandbox_image, tmp_path_factory, baseline_cache):
    """The hostile run, stopped by the gate: (runs dir, run dir, the run command's output)."""
    runs = runs_dir_with_cache(tmp_path_factory.mktemp("view") / "runs", baseline_cache)
    proc = cli(runs, "run", "discount-bug", "--chooser", CHOOSER, "--sandbox", "docker")
    assert proc.returncode == 16, proc.stdout + proc.stderr  # authorization_required
    (run_dir,) = [p.parent for p in runs.glob("*/run.json")]
    return runs, run_dir, proc


@pytest.fixture(scope="module")
def verified(refused):
    """The same run after a person granted the gate's findings by key and resumed it: the diff is now
    the candidate's, verified and awaiting the release prompt."""
    runs, run_dir, _ = refused
    keys = [f["key"] for f in json.loads((run_dir / "report.json").read_text())["code_findings"]]
    assert keys, "the refused patch's findings are listed in the report"
    grant = cli(runs, "grant", run_dir.name, *[a for k in keys for a in ("--allow", k)],
                "--reason", "reviewed the comments")
    assert grant.returncode == 0, grant.stderr
    resumed = cli(runs, "resume", run_dir.name)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr  # awaiting_release_confirmation
    return runs, run_dir, resumed


def test_the_step_lines_of_a_run_name_the_hidden_characters_of_its_query(refused):
    _, _, proc = refused
    assert_shown_not_sent(proc.stdout + proc.stderr)
    step1 = next(line for line in proc.stdout.splitlines() if line.startswith("step 1/"))
    assert "<script>alert(1)</script>\\x1b[2J\\x1b]0;pwned\\x07" in step1
    assert "authorization_required" in proc.stdout and "control-character" in proc.stdout


def test_the_gate_asks_a_person_about_each_line_with_hidden_characters_and_the_report_lists_it(refused):
    runs, run_dir, _ = refused
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "authorization_required" and record["steps_used"] == 2
    findings = json.loads((run_dir / "report.json").read_text())["code_findings"]
    constructs = {f["construct"] for f in findings if f["rule"] == "control-character"}
    assert constructs == {"U+001B", "U+200B, U+202E, U+2066, U+2069",
                          "U+000D (a lone carriage return: a line break to Python)"}, findings
    assert all(not f["granted"] for f in findings)
    shown = cli(runs, "show", run_dir.name)
    assert shown.returncode == 0, shown.stderr
    assert_shown_not_sent(shown.stdout)
    assert "**not granted**: `control-character` at `src/discount_shop/pricing.py:" in shown.stdout
    assert "`# rounding rule\\u001B[1A\\u001B[2K`" in shown.stdout  # the finding's snippet, escaped


def test_json_replay_and_runs_show_the_same_data_with_hidden_characters_escaped(refused):
    runs, run_dir, _ = refused
    shown = cli(runs, "show", run_dir.name, "--json")
    assert shown.returncode == 0, shown.stderr
    assert_shown_not_sent(shown.stdout)
    assert json.loads(shown.stdout) == json.loads((run_dir / "report.json").read_text())  # same data
    step = cli(runs, "replay", run_dir.name, "--step", "1")
    assert_shown_not_sent(step.stdout)
    assert json.loads(step.stdout)["proposal"]["query"] == h.HIDDEN_QUERY  # exactly what was proposed
    table = cli(runs, "replay", run_dir.name)
    assert table.returncode == 0 and "hash chain: OK" in table.stdout
    assert_shown_not_sent(table.stdout)
    listing = cli(runs, "runs")
    assert_shown_not_sent(listing.stdout)
    assert f"{run_dir.name} authorization_required" in " ".join(listing.stdout.split())


def test_show_diff_names_the_escape_sequence_and_keeps_the_backdoor_line_in_sight(verified):
    runs, run_dir, _ = verified
    proc = cli(runs, "show", run_dir.name, "--diff")
    assert proc.returncode == 0, proc.stderr
    assert_shown_not_sent(proc.stdout)
    lines = proc.stdout.splitlines()
    backdoor = lines.index("+" + h.BACKDOOR)
    assert lines[backdoor + 1] == "+    # rounding rule\\x1b[1A\\x1b[2K"  # the line that would erase it
    assert lines[backdoor + 2] == "+    # <U+202E> <U+2066>ok<U+2069><U+200B>"
    assert lines[backdoor + 3] == f"+{h.CR_BACKDOOR}\\x0d{h.CR_COVER}"  # the overwritten one, in sight
    # The bytes on disk are the ones verified and released: only their rendering changed.
    assert h.ERASE_LINE_ABOVE in (run_dir / "candidate.diff").read_text()


def test_report_html_shows_hidden_characters_by_name_and_markup_as_text(verified):
    _, run_dir, _ = verified
    page = text_of(run_dir / "report.html")
    assert_shown_not_sent(page)
    assert "&lt;U+202E&gt; &lt;U+2066&gt;ok&lt;U+2069&gt;&lt;U+200B&gt;" in page
    assert "rounding rule\\x1b[1A\\x1b[2K" in page and "if discount == 42: return 0" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_report_md_escapes_chooser_text_and_names_hidden_characters(verified):
    _, run_dir, _ = verified
    md = text_of(run_dir / "report.md")
    assert_shown_not_sent(md)
    assert "<script" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;\\\\x1b\\[2J" in md
    assert "<b>" not in md and "Chooser: hostile:&lt;b&gt;HiddenBackdoor&lt;/b&gt;" in md
    fence = re.search(r"^```diff\n(.*?)^```$", md, re.S | re.M)
    assert fence and f"+{h.BACKDOOR}\n+    # rounding rule\\x1b[1A\\x1b[2K\n" in fence.group(1)


def test_the_release_prompt_shows_the_backdoor_line_and_names_the_escape(verified):
    """`release --confirm` in a terminal prints the diff for the person's yes: the escape that would
    erase the backdoor line is named, and a no releases nothing."""
    runs, run_dir, resumed = verified
    assert_shown_not_sent(resumed.stdout + resumed.stderr)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "awaiting_release_confirmation"
    master, slave = pty.openpty()
    try:
        os.write(master, b"no\n")
        proc = cli(runs, "release", run_dir.name, "--confirm", stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 1 and "not released" in proc.stdout, proc.stdout + proc.stderr
    assert_shown_not_sent(proc.stdout)
    lines = proc.stdout.splitlines()
    assert lines[lines.index("+" + h.BACKDOOR) + 1] == "+    # rounding rule\\x1b[1A\\x1b[2K"
    assert f"+{h.CR_BACKDOOR}\\x0d{h.CR_COVER}" in lines
    assert "Release this diff?" in proc.stdout and not (run_dir / "release.json").exists()


def test_the_granted_findings_stay_listed_for_the_person(verified):
    runs, run_dir, _ = verified
    findings = json.loads((run_dir / "report.json").read_text())["code_findings"]
    assert findings and all(f["granted"] for f in findings)
    md = text_of(run_dir / "report.md")
    assert "- granted: `control-character` at `src/discount_shop/pricing.py:" in md
    assert_shown_not_sent(md + text_of(run_dir / "report.html"))


def test_a_goal_of_several_lines_shows_its_lines_and_none_becomes_markup():
    from repair_agent.untrusted.visible import md_lines

    goal = "Fix intword for 1000 decillion\n\nThese tests fail: tests/test_number.py::test_intword\n---\n1. x\n# h\n<b>y</b>"
    lines = md_lines(goal)
    # Broken where the text breaks (no literal "\n"), each line still shown as text.
    assert lines[0] == "Fix intword for 1000 decillion  " and not any("\\n" in line for line in lines)
    assert lines[3:] == ["\\---  ", "1\\. x  ", "\\# h  ", "&lt;b&gt;y&lt;/b&gt;"]
