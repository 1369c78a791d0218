"""Comparing models in one sweep: two named models (a models file) on two loopback servers that
behave differently, and a deterministic chooser, through `repair-agent sweep` (local sandbox).

Server alpha is priced, reports usage and is limited to one request at a time; server beta
reports no usage, sends arguments as JSON objects, and refuses its first request with a quota
error: that run is an infrastructure failure, left out of the success rate, and running the
sweep again into the same directory runs exactly it again."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from chat_server import ChatServer, openai_error, tool_call
from repair_agent.sweep import RESULTS
from helpers import PRICING_REL as PRICING
from helpers import fix_diff

TESTS = Path(__file__).resolve().parent


def fix_sequence(**kw) -> list[dict]:
    return [tool_call("search", {"query": "price * (1 - discount)", "path_glob": "src/**"}, **kw),
            tool_call("read_file", {"path": PRICING}, **kw), tool_call("apply_patch", {"diff": fix_diff()}, **kw),
            tool_call("run_target_test", **kw), tool_call("run_full_suite", **kw), tool_call("check_diff", **kw)]


def step_of(body: dict) -> int:
    """Which step of its run a request is for: the prompt says so."""
    return int(re.search(r"^Step (\d+);", body["messages"][1]["content"], re.M)[1])


class Beta:
    """Replies by step; the very first request of all gets a quota error (not retried)."""

    def __init__(self):
        self.lock, self.failed = threading.Lock(), False
        self.sequence = fix_sequence(usage=None, object_args=True)

    def __call__(self, body: dict) -> dict:
        with self.lock:
            if not self.failed:
                self.failed = True
                return openai_error(429, "You exceeded your current quota, please check your plan and billing "
                                         "details.", type="insufficient_quota", code="insufficient_quota")
        return self.sequence[step_of(body) - 1]


def sweep(cwd: Path, out: Path, *extra: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", "sweep", "--scenarios", "discount-bug",
                           "--chooser", "model:alpha", "model:beta", "baseline", "--budgets", "8", "--seeds", "2",
                           "--workers", "2", "--sandbox", "local", "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=480)


def test_two_models_and_a_baseline_get_their_own_rows_with_tokens_and_cost(tmp_path):
    alpha_sequence = fix_sequence()
    with ChatServer([], responder=lambda body: alpha_sequence[step_of(body) - 1]) as alpha, \
            ChatServer([], responder=Beta()) as beta:
        alpha_url = alpha.base_url
        # The user's own models file (their config directory): the only kind that may name a key variable.
        models = tmp_path / "config" / "repair-agent" / "models.toml"
        models.parent.mkdir(parents=True)
        models.write_text(f"""
[models.alpha]
model = "alpha-1"
base_url = "{alpha.base_url}"
temperature = 0
price_per_mtok_in = 2.5
price_per_mtok_out = 10.0
max_concurrency = 1
retry_base_s = 0.001
retry_max_s = 0.01

[models.beta]
model = "beta-1"
base_url = "{beta.base_url}"
api_key_env = "BETA_TEST_KEY"
max_retries = 1
retry_base_s = 0.001
retry_max_s = 0.01
""")
        env = {**os.environ, "BETA_TEST_KEY": "sk-beta-secret", "REPAIR_AGENT_LOCK_DIR": str(tmp_path / "locks"),
               "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
        out = tmp_path / "sweep"
        proc = sweep(tmp_path, out, env=env)  # the config directory's models.toml
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert alpha.max_in_flight == 1 and len(alpha.requests) == 12  # two runs, one request at a time
        assert all(h["authorization"] == "Bearer sk-beta-secret" for h in beta.headers)
        first = json.loads((out / "summary.json").read_text())

        # Running it again into the same directory runs exactly the infrastructure failure again.
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        again = sweep(elsewhere, out, "--models", str(models), env={**env, "XDG_CONFIG_HOME": str(elsewhere)})
        assert again.returncode == 0, again.stderr[-3000:]
        assert "1 run(s) now, 5 already finished, of 6" in again.stdout
        second = json.loads((out / "summary.json").read_text())

    cells = {c["chooser"]: c for c in first["cells"]}
    alpha_cell, beta_cell, base_cell = cells["model:alpha"], cells["model:beta"], cells["baseline"]
    # Alpha: 2 runs of 6 steps at 120 prompt + 30 completion tokens a step, priced.
    assert alpha_cell["success_rate"] == 1.0 and alpha_cell["n"] == 2
    assert (alpha_cell["prompt_tokens"], alpha_cell["completion_tokens"]) == (1440, 360)
    assert alpha_cell["cost"] == round((1440 * 2.5 + 360 * 10.0) / 1e6, 6)
    assert alpha_cell["median_step_latency_s"] > 0 and alpha_cell["model"]["endpoint"] == alpha_url
    # Beta: no usage reported -> unknown tokens and cost, never 0; its quota failure is not a repair failure.
    assert beta_cell["n"] == 1 and beta_cell["success_rate"] == 1.0 and beta_cell["infrastructure_failures"] == 1
    assert beta_cell["prompt_tokens"] is None and beta_cell["cost"] is None and beta_cell["median_tokens"] is None
    (infra,) = first["infrastructure_failures"]
    assert infra["chooser"] == "model:beta" and "insufficient_quota" in infra["detail"]
    assert base_cell["model"] is None and base_cell["prompt_tokens"] == 0 and base_cell["success_rate"] == 1.0

    md = (out / "summary.md").read_text()
    assert "## Models" in md and "## Infrastructure failures" not in md  # the second summary: none left
    section = md.split("## Models", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| model:")]
    assert len(rows) == 2 and "| 1440 | 360 | 0.0072 |" in rows[0] and "| — | — | — |" in rows[1]
    html = (out / "summary.html").read_text()
    assert html.count('<tr class="model-row">') == 2 and "alpha-1" in html and "beta-1" in html
    assert "Models" in proc.stdout and "Infrastructure failures" in proc.stdout  # the terminal too

    second_cells = {c["chooser"]: c for c in second["cells"]}
    assert second_cells["model:beta"]["n"] == 2 and second_cells["model:beta"]["infrastructure_failures"] == 0
    assert second["infrastructure_failures"] == []
    lines = [json.loads(line) for line in (out / RESULTS).read_text().splitlines()]
    assert len(lines) == 7  # six runs, and the one run again
    beta_lines = [x for x in lines if x["chooser"] == "model:beta"]
    assert sorted(x["infrastructure_failure"] for x in beta_lines) == [False, False, True]
    assert beta_lines[-1]["infrastructure_failure"] is False  # the run again, on a server that now answers
    assert beta_lines[0]["model"]["api_key_env"] == "BETA_TEST_KEY" and beta_lines[0]["model"]["name"] == "beta"
    assert "sk-beta-secret" not in (out / RESULTS).read_text()
    assert all(x["tokens"] is None for x in beta_lines if not x["infrastructure_failure"])


class FailsTwiceThenFixes:
    """Two 503s (the chooser's one retry included) end the first step; afterwards the fix, in order."""

    def __init__(self):
        self.lock, self.errors, self.sequence = threading.Lock(), 2, fix_sequence()

    def __call__(self, body: dict) -> dict:
        with self.lock:
            if self.errors:
                self.errors -= 1
                return openai_error(503, "The engine is currently overloaded", type="server_error")
            return self.sequence.pop(0)


def test_a_sweep_run_whose_endpoint_failed_journals_its_requests_and_resumes_without_losing_the_step(tmp_path):
    """Records of an endpoint failure, end to end: the failed step journals both requests it sent
    (run.json and the sweep's line count them), the sweep's run names its chooser so that
    `repair-agent resume RUN` continues it, and the failed step is given back: the six-step fix
    fits the run's budget of six after the resume."""
    with ChatServer([], responder=FailsTwiceThenFixes()) as srv:
        config = tmp_path / "config"
        (config / "repair-agent").mkdir(parents=True)
        (config / "repair-agent" / "models.toml").write_text(
            f'[models.alpha]\nmodel = "alpha-1"\nbase_url = "{srv.base_url}"\nmax_retries = 1\n'
            'retry_base_s = 0.001\nretry_max_s = 0.01\n')
        env = {**os.environ, "REPAIR_AGENT_LOCK_DIR": str(tmp_path / "locks"), "XDG_CONFIG_HOME": str(config),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
        out = tmp_path / "sweep"
        proc = subprocess.run([sys.executable, "-m", "repair_agent", "sweep", "--scenarios", "discount-bug",
                               "--chooser", "model:alpha", "--budgets", "6", "--seeds", "1", "--workers", "1",
                               "--sandbox", "local", "--out", str(out)],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (line,) = [json.loads(x) for x in (out / RESULTS).read_text().splitlines()]
        assert line["status"] == "dependency_failure" and line["infrastructure_failure"] is True
        assert line["requests"] == 2 and len(srv.requests) == 2
        run_dir = Path(line["run_dir"])
        (step,) = [json.loads(x) for x in (run_dir / "journal.jsonl").read_text().splitlines()
                   if json.loads(x)["event"] == "step"]
        assert [r["error"]["status_code"] for r in step["chooser_call"]["requests"]] == [503, 503]
        assert json.loads((run_dir / "run.json").read_text())["usage"]["requests"] == 2

        resumed = subprocess.run([sys.executable, "-m", "repair_agent", "resume", str(run_dir), "--json"],
                                 capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    record = json.loads(resumed.stdout)
    assert record["status"] == "awaiting_release_confirmation" and record["chooser"] == "model:alpha"
    assert (record["steps_used"], record["max_steps"]) == (7, 7)  # the failed step, then six of the model's
    assert len(srv.requests) == 8


def test_a_sweep_stops_starting_runs_once_its_cost_limit_is_reached_and_says_so(tmp_path):
    """`sweep --max-cost`: a run of the six-step fix costs 6 × (120 × 2.5 + 30 × 10) / 1e6 = 0.0036;
    with 0.004 the second run starts (0.0036 spent) and the third does not (0.0072). The summary
    says so; the same command with a larger limit runs only the one left, here with
    `--max-run-cost 0.0015`, which stops that run cost_budget after three steps (0.0018). An
    unpriced model is a usage error before anything runs."""
    sequence = fix_sequence()
    with ChatServer([], responder=lambda body: sequence[step_of(body) - 1]) as srv:
        models = tmp_path / "models.toml"
        models.write_text(f'[models.alpha]\nmodel = "alpha-1"\nbase_url = "{srv.base_url}"\nprice_per_mtok_in = 2.5\n'
                          f'price_per_mtok_out = 10.0\n\n[models.free]\nmodel = "f-1"\nbase_url = "{srv.base_url}"\n')
        env = {**os.environ, "REPAIR_AGENT_LOCK_DIR": str(tmp_path / "locks"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
        out = tmp_path / "sweep"

        def run(chooser: str, limit: str, *extra: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "repair_agent", "sweep", "--scenarios", "discount-bug",
                                   "--chooser", chooser, "--models", str(models), "--budgets", "6", "--seeds", "3",
                                   "--workers", "1", "--sandbox", "local", "--out", str(out), "--max-cost", limit,
                                   *extra],
                                  capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)

        unpriced = run("model:free", "1")
        assert unpriced.returncode == 2 and "free has no price_per_mtok_in" in unpriced.stderr
        assert srv.requests == [] and not out.exists()

        first = run("model:alpha", "0.004")
        assert first.returncode == 0, first.stderr[-3000:]
        assert len(srv.requests) == 12 and len((out / RESULTS).read_text().splitlines()) == 2
        summary = json.loads((out / "summary.json").read_text())
        assert summary["cost_limit"] == {"max_cost": 0.004, "spent": 0.0072, "unknown_cost_runs": 0, "not_started": 1}
        assert "The limit was reached: 1 run(s) were not started." in first.stdout
        assert "The limit was reached: 1 run(s) were not started." in (out / "summary.html").read_text()

        more = run("model:alpha", "0.02", "--max-run-cost", "0.0015")
        assert more.returncode == 0, more.stderr[-3000:]
        assert "1 run(s) now, 2 already finished, of 3" in more.stdout and len(srv.requests) == 15
    last = json.loads((out / RESULTS).read_text().splitlines()[-1])
    assert (last["status"], last["exit_code"], last["steps"], last["cost"]) == ("cost_budget", 18, 3, 0.0018)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_limit"]["spent"] == 0.009 and summary["cost_limit"]["not_started"] == 0
    assert "not started" not in (out / "summary.md").read_text()
