"""Secrets never reach a record: a model server that echoes the key back in its 401, a token it
quotes in an error, and credentials in the base URL are in no file under the run directory and in
nothing the CLI prints (`run`, `--json`, `show`, `replay`, `runs`).

Real CLI, a real loopback Chat Completions server (tests/chat_server.py), real git and pytest in the
local sandbox: the model chooser's path needs no container to reach the journal and the reports.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chat_server import ChatServer, openai_error, tool_call
from helpers import PRICING_REL

ROOT = Path(__file__).resolve().parents[1]
KEY = "hostile-key-7f3a9c1e5b2d4a60"        # no known shape: only its registration can find it
UNREGISTERED = "sk-proj-Zq8Wn3Lp5Rt7Yv9Xb2Md4"  # a key-shaped token the server quotes, never configured
PASSWORD = "url-pass-Q4v8T2k9"


def cli(runs: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "tests"), **(env or {})})


def views(runs: Path, run_id: str, cwd: Path) -> list[subprocess.CompletedProcess]:
    """Everything a person can print about the run."""
    return [cli(runs, *a, cwd=cwd) for a in (("show", run_id), ("show", run_id, "--json"), ("show", run_id, "--diff"),
                                             ("replay", run_id), ("replay", run_id, "--step", "1"),
                                             ("replay", run_id, "--faults"), ("runs", "--json"), ("runs",))]


def assert_nowhere(secrets: tuple[str, ...], runs: Path, outputs: list[subprocess.CompletedProcess]) -> None:
    files = [p for p in runs.rglob("*") if p.is_file()]
    assert any(p.name == "journal.jsonl" for p in files) and any(p.name == "report.html" for p in files)
    for secret in secrets:
        assert not [p for p in files if secret.encode() in p.read_bytes()], f"{secret} recorded"
        assert not [o.args for o in outputs if secret in o.stdout + o.stderr], f"{secret} printed"


def test_a_key_echoed_in_a_401_is_in_no_record_and_no_output(tmp_path):
    """The key comes from the variable the models file names; the server's 401 quotes it in full,
    with a bearer header and another key-shaped token. The run ends dependency_failure, and says why."""
    message = (f"Incorrect API key provided: {KEY}. Header was Authorization: Bearer {KEY}; "
               f"also tried {UNREGISTERED}.")
    with ChatServer([openai_error(401, message, type="invalid_request_error", code="invalid_api_key")]) as srv:
        (tmp_path / "models.toml").write_text(f'[models.echo]\nmodel = "coder"\nbase_url = "{srv.base_url}"\n'
                                              'api_key_env = "HOSTILE_TEST_KEY"\nretry_base_s = 0.001\n')
        runs = tmp_path / "runs"
        # The user's own models file (named with --models) may name a key variable; ./models.toml may not.
        run = cli(runs, "run", "discount-bug", "--chooser", "model:echo", "--models", str(tmp_path / "models.toml"),
                  "--sandbox", "local", "--json",
                  cwd=tmp_path, env={"HOSTILE_TEST_KEY": KEY})
        assert srv.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was really sent
    assert run.returncode == 17, run.stdout + run.stderr  # dependency_failure
    out = json.loads(run.stdout)
    assert "401" in out["detail"] and "Incorrect API key provided: [REDACTED]" in out["detail"]
    journal = (Path(out["run_dir"]) / "journal.jsonl").read_text()
    assert "Authorization: Bearer [REDACTED]; also tried [REDACTED]" in journal
    replay = cli(runs, "replay", out["run_id"], cwd=tmp_path)
    assert "hash chain: OK" in replay.stdout, replay.stdout + replay.stderr  # redacted before it was hashed
    assert_nowhere((KEY, UNREGISTERED), runs, [run, *views(runs, out["run_id"], tmp_path)])


def test_credentials_in_the_base_url_are_in_no_record_and_no_output(tmp_path):
    """`--model-base-url http://user:pass@host/v1`: the run works (the client sends them), every record
    names the endpoint without them."""
    script = [tool_call("search", {"query": "price * (1 - discount)", "path_glob": "src/**"}),
              tool_call("read_file", {"path": PRICING_REL})]
    with ChatServer(script) as srv:
        plain = srv.base_url
        url = plain.replace("http://", f"http://reviewer-bot:{PASSWORD}@")
        runs = tmp_path / "runs"
        run = cli(runs, "run", "discount-bug", "--chooser", "model", "--model", "coder", "--model-base-url", url,
                  "--sandbox", "local", "--max-steps", "2", cwd=tmp_path)
        assert len(srv.requests) == 2
    assert run.returncode == 11, run.stdout + run.stderr  # step_budget: both steps ran
    (run_dir,) = [p.parent for p in runs.glob("*/run.json")]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["model"]["endpoint"] == plain.replace("http://", "http://[REDACTED]@")
    assert "http://\\[REDACTED\\]@127.0.0.1" in (run_dir / "report.md").read_text()  # Markdown-escaped
    assert_nowhere((PASSWORD, "reviewer-bot"), runs, [run, *views(runs, run_dir.name, tmp_path)])



def test_a_key_inside_a_proposal_nested_past_the_recursion_limit_is_in_no_record(tmp_path):
    """The journal keeps a chooser's raw proposal, however deep it nests (JSON allows far more levels
    than Python's recursion limit): redaction walks it without recursing. A plug-in whose proposal
    nests 900 levels with the key in the innermost ends `invalid_action`, the chain intact, and
    the key is in no file and no output."""
    runs = tmp_path / "runs"
    run = cli(runs, "run", "discount-bug", "--sandbox", "local", "--json", "--chooser", "hostile_choosers:DeepSecret",
              cwd=tmp_path, env={"HOSTILE_TEST_KEY": KEY, "OPENAI_API_KEY": KEY})
    assert run.returncode != 0 and run.stdout.strip().startswith("{"), run.stdout[-2000:] + run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["status"] == "invalid_action", out
    replay = cli(runs, "replay", out["run_id"], cwd=tmp_path)
    assert "hash chain: OK" in replay.stdout, replay.stdout[-2000:]
    assert_nowhere((KEY,), runs, [run, *views(runs, out["run_id"], tmp_path)])
