"""Whole discount-bug runs with the model chooser on loopback servers that behave like real ones
(tests/chat_server.py): the recoverable behaviours still reach awaiting_release_confirmation,
a refusal hands over, quota and context-length errors end dependency_failure without a retry.

Local sandbox and verifier (real git, real pytest), as the other model runs in test_controller.py,
and one run in Docker; test_model_sweep.py has the sweep."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chat_server import (ChatServer, content, delay, drop_connection, http_error, openai_error, refusal, tool_call,
                         tool_calls)
from helpers import PRICING_REL as PRICING
from helpers import fix_diff
from repair_agent.choosers.model import ModelChooser
from repair_agent.loop.actions import TOOL_NAMES
from repair_agent.loop.journal import read_journal
from repair_agent.reports.records import load_record
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason

ROOT = Path(__file__).resolve().parents[1]
FAST = {"retry_base_s": 0.001, "retry_max_s": 0.05}


def miscounted(diff: str) -> str:
    """The commonest slip in a model-written diff: hunk headers whose counts do not match the body."""
    bad = re.sub(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@", lambda m: f"@@ -{m[1]},{int(m[2]) + 4} +{m[3]},{int(m[4]) - 2} @@",
                 diff, flags=re.M)
    assert bad != diff
    return bad


def run(srv: ChatServer, runs_dir: Path, chooser_kw: dict | None = None, sandbox: str = "local", **kw):
    chooser = ModelChooser(base_url=srv.base_url, model="scripted-model", **{**FAST, **(chooser_kw or {})})
    return execute_run(resolve("discount-bug"), chooser, backend=sandbox, runs_dir=runs_dir, **kw)


def steps(rec) -> list[dict]:
    return [r for r in read_journal(Path(rec.run_dir) / "journal.jsonl") if r["event"] == "step"]


def report(rec) -> dict:
    return json.loads((Path(rec.run_dir) / "report.json").read_text())


def test_transient_errors_and_rejected_parameters_are_absorbed_and_the_run_repairs(runs_dir):
    """Rate limits, 5xx, a dropped connection, a read timeout and a reasoning model's 400s on
    temperature and max_tokens: each retried inside its step, every attempt journaled."""
    script = [
        openai_error(429, "Rate limit reached", type="requests", code="rate_limit_exceeded",
                     headers={"retry-after-ms": "20"}),
        openai_error(503, "The engine is currently overloaded", type="server_error", headers={"Retry-After": "0"}),
        drop_connection(),
        tool_call("search", {"query": "price * (1 - discount)", "path_glob": "src/**"}),      # step 1
        delay(3.0, tool_call("stop")),                                                      # read timeout
        tool_call("read_file", {"path": PRICING, "line_numbers": True}),                    # step 2
        openai_error(400, "Unsupported value: 'temperature' does not support 0 with this model.",
                     param="temperature", code="unsupported_value"),
        openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                          "'max_completion_tokens' instead.", param="max_tokens", code="unsupported_parameter"),
        tool_call("apply_patch", {"diff": fix_diff()}),                                     # step 3
        http_error(502, "<html><body>502 Bad Gateway</body></html>"),
        tool_call("run_target_test"),                                                       # step 4
        tool_call("run_full_suite"),                                                        # step 5
        tool_call("check_diff"),                                                            # step 6
    ]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir, {"temperature": 0.0, "max_output_tokens": 1024, "timeout_s": 1.0})
        assert not srv.script
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 6
    calls = [s["chooser_call"] for s in steps(rec)]
    assert [len(c["requests"]) for c in calls] == [4, 2, 3, 2, 1, 1]  # one step each, however many requests
    assert [(r.get("error") or {}).get("status_code") for r in calls[0]["requests"]] == [429, 503, None, None]
    assert calls[0]["requests"][2]["error"]["type"] == "APIConnectionError"
    assert calls[1]["requests"][0]["error"]["type"] == "APITimeoutError"
    assert [r.get("adjusted") for r in calls[2]["requests"]] == [
        "temperature omitted", "max_tokens -> max_completion_tokens", None]
    assert "<html>" in calls[3]["requests"][0]["error"]["response_text"]  # the raw error, verbatim
    assert rec.usage.requests == 13 and rec.usage.total_tokens == 6 * 150  # failed requests report no tokens
    assert rec.model["model"] == "scripted-model" and rec.model["parameters"]["temperature"] == 0.0
    assert "sk-" not in (Path(rec.run_dir) / "run.json").read_text()


@pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_odd_replies_are_understood_and_the_run_repairs(runs_dir, sandbox, request):
    """Two calls in one reply, calls in the text (fenced, tagged), arguments as an object, a cut-off
    reply and schema-invalid arguments (each re-asked once in its step), a miscounted hunk header
    and a reply without usage. Once in Docker too: line numbers and the recount in the container."""
    if sandbox == "docker":
        request.getfixturevalue("sandbox_image")
    patch = miscounted(fix_diff())
    script = [
        tool_calls(("run_target_test", {}), ("search", {"query": "never run"})),                   # step 1
        content('Let me find it.\n```json\n{"name": "search", "arguments": {"query": '
                '"price * (1 - discount)"}}\n```'),                                                # step 2
        content('<tool_call>\n{"name": "read_file", "parameters": {"path": "%s", "line_numbers": true}}\n'
                '</tool_call>' % PRICING),                                                         # step 3
        tool_call("apply_patch", json.dumps({"diff": patch})[:120], finish_reason="length"),
        tool_call("apply_patch", {"diff": patch}, object_args=True),                               # step 4
        tool_call("run_target_test", {"verbose": True}),
        tool_call("run_target_test"),                                                              # step 5
        tool_call("run_full_suite", usage=None),                                                   # step 6
        tool_call("check_diff"),                                                                   # step 7
    ]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir, sandbox=sandbox)
        assert not srv.script
        second_prompt = srv.requests[1]["messages"][1]["content"]
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 7
    journaled = steps(rec)
    assert journaled[0]["proposal"] == {"tool": "run_target_test"}
    assert journaled[0]["chooser_call"]["not_executed"][0]["function"]["name"] == "search"
    assert "NOT executed" in second_prompt and "never run" in second_prompt
    assert journaled[2]["result"]["output"].startswith("     1\t")  # read_file with line numbers
    assert [len(s["chooser_call"]["reasks"]) for s in journaled] == [0, 0, 0, 1, 1, 0, 0]
    assert "cut off" in journaled[3]["chooser_call"]["reasks"][0]["error"]
    assert "verbose: Extra inputs are not permitted" in journaled[4]["chooser_call"]["reasks"][0]["error"]
    assert journaled[3]["result"]["status"] == "ok"  # the miscounted patch applied (recounted)
    assert "discount / 100" in (Path(rec.run_dir) / "candidate.diff").read_text()
    # Re-asks are counted; the reply without usage makes the run's tokens unknown, not 0.
    assert journaled[3]["usage"]["total_tokens"] == 300 and journaled[5]["usage"]["total_tokens"] is None
    assert rec.usage.total_tokens is None and rec.usage.unknown_steps == 1
    assert load_record(rec.run_dir).usage.total_tokens is None
    assert report(rec)["tokens_used"] is None
    assert "Tokens used: unknown" in (Path(rec.run_dir) / "report.md").read_text()
    assert "unknown (the model endpoint reported no usage)" in (Path(rec.run_dir) / "report.html").read_text()
    # Every prompt of the run stayed small.
    assert max(s["chooser_call"]["prompt_chars"] for s in journaled) < 16_000


def test_a_refusal_hands_over_with_the_refusal_text(runs_dir):
    with ChatServer([refusal("I'm sorry, I can't assist with that request.")]) as srv:
        rec = run(srv, runs_dir)
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.exit_code == 10
    assert "I'm sorry, I can't assist with that request." in rec.detail
    assert steps(rec)[0]["decision"]["accepted"] is True  # a valid stop, validated as ever


@pytest.mark.parametrize("error, infrastructure", [
    (openai_error(429, "You exceeded your current quota, please check your plan and billing details.",
                  type="insufficient_quota", code="insufficient_quota"), True),
    (openai_error(400, "This model's maximum context length is 8192 tokens. However, your messages resulted in "
                       "9000 tokens. Please reduce the length of the messages.", param="messages",
                  code="context_length_exceeded"), False),
], ids=["insufficient_quota", "context_length_exceeded"])
def test_quota_and_context_length_end_dependency_failure_without_retry(runs_dir, error, infrastructure):
    with ChatServer([error, tool_call("stop")]) as srv:
        rec = run(srv, runs_dir)
        assert len(srv.requests) == 1
    assert rec.status is StopReason.DEPENDENCY_FAILURE and rec.steps_used == 1
    assert rec.infrastructure_failure is infrastructure
    stop = [r for r in read_journal(Path(rec.run_dir) / "journal.jsonl") if r["event"] == "stop"][0]
    assert json.loads(stop["extra"]["raw"]["response_text"]) == error["body"]


def test_an_invalid_proposal_that_reaches_the_controller_still_ends_invalid_action(runs_dir):
    with ChatServer([tool_call("read_file", {"file": PRICING})] * 2) as srv:
        rec = run(srv, runs_dir)
    assert rec.status is StopReason.INVALID_ACTION and rec.steps_used == 1  # one step, one invocation
    (step,) = steps(rec)
    assert step["proposal"] == {"tool": "read_file", "file": PRICING} and len(step["chooser_call"]["reasks"]) == 1
    assert "path" in step["decision"]["error"] and step["usage"]["total_tokens"] == 300


def test_a_token_budget_with_an_endpoint_that_reports_no_usage_is_refused(runs_dir):
    with ChatServer([tool_call("search", {"query": "discount"}, usage=None), tool_call("stop")]) as srv:
        rec = run(srv, runs_dir, max_tokens=10_000)
        assert len(srv.requests) == 1
    assert rec.status is StopReason.DEPENDENCY_FAILURE and rec.steps_used == 1
    assert "reports no token usage" in rec.detail and "--max-tokens" in rec.detail
    assert not rec.infrastructure_failure and steps(rec)[0]["decision"]["accepted"] is False


def test_a_failed_huge_patch_does_not_blow_up_the_next_prompt(runs_dir):
    """A 150 kB patch that does not apply: its text comes back capped, not whole."""
    body = "".join(f"+x{i} = '{'a' * 70}'\n" for i in range(1900))  # inside the scope check's line limit
    huge = f"--- a/{PRICING}\n+++ b/{PRICING}\n@@ -1,1 +1,1900 @@\n-nothing like this\n" + body
    with ChatServer([tool_call("apply_patch", {"diff": huge}), tool_call("stop", {"reason": "done"})]) as srv:
        rec = run(srv, runs_dir)
        second = srv.requests[1]["messages"][1]["content"]
    assert steps(rec)[0]["result"]["status"] == "error"
    assert len(huge) > 140_000 and len(second) < 16_000


def test_a_named_model_runs_and_resumes_from_its_models_file(tmp_path):
    """`--chooser model:NAME` from ./models.toml; the run records the model; a resume from another
    directory finds the same file through the journal."""
    import os
    import subprocess
    import sys

    with ChatServer([], responder=lambda body: FIX_SEQUENCE[_step_of(body) - 1]) as srv:
        url = srv.base_url
        (tmp_path / "models.toml").write_text(f'[models.local-coder]\nmodel = "coder-7b"\nbase_url = "{srv.base_url}"\n'
                                              f'temperature = 0.1\nmax_output_tokens = 2048\nretry_base_s = 0.001\n')
        runs = tmp_path / "runs"
        cli = lambda *a, cwd: subprocess.run([sys.executable, "-m", "repair_agent", *a, "--runs-dir", str(runs)],
                                             capture_output=True, text=True, cwd=cwd, timeout=300,
                                             env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})
        first = cli("run", "discount-bug", "--chooser", "model:local-coder", "--sandbox", "local", "--max-steps", "2",
                    "--json", cwd=tmp_path)
        assert first.returncode == 11, first.stderr  # step_budget
        out = json.loads(first.stdout)
        assert out["chooser"] == "model:local-coder" and out["model"]["name"] == "local-coder"
        assert out["model"]["model"] == "coder-7b" and out["model"]["endpoint"] == srv.base_url
        assert out["model"]["parameters"]["temperature"] == 0.1 and out["usage"]["total_tokens"] == 300
        assert srv.requests[0]["temperature"] == 0.1 and srv.requests[0]["max_tokens"] == 2048
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        resumed = cli("resume", out["run_id"], "--max-steps", "6", "--json", cwd=elsewhere)
        assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "awaiting_release_confirmation"
    md = (Path(out["run_dir"]) / "report.md").read_text()
    assert f"Model: local-coder: coder-7b at {url}" in md and "Tokens used: 900 (720 prompt, 180 completion)" in md
    assert 'id="model"' in (Path(out["run_dir"]) / "report.html").read_text()


def test_a_bad_models_file_is_a_clear_usage_error(tmp_path):
    import subprocess
    import sys

    (tmp_path / "models.toml").write_text('[models.m]\nmodel = "x"\ntemprature = 0\n')
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "run", "discount-bug", "--chooser", "model:m",
                           "--sandbox", "local", "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "models.toml" in proc.stderr and "models.m.temprature" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "run", "discount-bug", "--chooser", "model:nope",
                           "--models", str(tmp_path / "none.toml")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no such file" in proc.stderr


FIX_SEQUENCE = [tool_call("search", {"query": "price * (1 - discount)", "path_glob": "src/**"}),
                tool_call("read_file", {"path": PRICING}), tool_call("apply_patch", {"diff": fix_diff()}),
                tool_call("run_target_test"), tool_call("run_full_suite"), tool_call("check_diff")]


def _step_of(body: dict) -> int:
    return int(re.search(r"^Step (\d+);", body["messages"][1]["content"], re.M)[1])


# -- edits a model gets wrong, and what it is shown ---------------------------------------
FIX_OLD, FIX_NEW = "    discounted = price * (1 - discount)\n", "    discounted = price * (1 - discount / 100)\n"
CHECKS = [tool_call("run_target_test"), tool_call("run_full_suite"), tool_call("check_diff")]


@pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_replace_in_file_repairs_and_a_missing_or_repeated_old_text_is_an_observation(runs_dir, sandbox, request):
    """replace_in_file becomes a unified diff the scope check, the gate and the verifier see as for
    apply_patch; an `old` that is not in the file, or is in it twice, is an observation showing the
    file's own lines with numbers, and the run goes on. Once in Docker too: the file is read in the
    container."""
    if sandbox == "docker":
        request.getfixturevalue("sandbox_image")
    script = [
        tool_call("replace_in_file", {"path": PRICING, "old": "discounted = price * (1 - discount )",
                                      "new": "discounted = price * (1 - discount / 100)"}),          # step 1
        tool_call("replace_in_file", {"path": PRICING, "old": "_check_number(", "new": "check("}),  # step 2
        tool_call("replace_in_file", {"path": PRICING, "old": FIX_OLD, "new": FIX_NEW}),            # step 3
        *CHECKS,                                                                                    # steps 4-6
    ]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir, sandbox=sandbox)
        assert not srv.script
        prompts = [r["messages"][1]["content"] for r in srv.requests]
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 6
    journaled = steps(rec)
    assert [s["result"]["status"] for s in journaled[:3]] == ["error", "error", "ok"]
    assert "`old` was not found" in journaled[0]["result"]["raw_error"]
    # The nearest real line, numbered as read_file shows it, reaches the model's next prompt.
    assert "    37\t    discounted = price * (1 - discount)" in journaled[0]["result"]["raw_error"]
    assert "    37\t    discounted = price * (1 - discount)" in prompts[1]
    assert "occurs 4 times" in journaled[1]["result"]["raw_error"] and "at lines 8, 20, 30, 31" in prompts[2]
    # The edit was applied as a diff: the same diff as the hand-written fix, checked by the verifier.
    assert journaled[2]["result"]["data"]["applied_diff"] == fix_diff()
    assert (Path(rec.run_dir) / "candidate.diff").read_text().count("discount / 100") == 1
    assert journaled[5]["result"]["summary"].startswith("diff scope ok: 1 file(s), +1 -1")
    assert journaled[2]["result"]["raw_error"] is None  # no git "Applied patch ... cleanly" under error:


def test_a_failed_or_malformed_patch_is_an_observation_with_the_real_lines(runs_dir):
    """A hunk whose context is misremembered shows the file's nearest lines with their numbers
    (not git's echo of the patch); a hand-written hunk with no context that only adds lines, which
    the scope check refuses as ambiguous, tells the model its diff is malformed instead of asking a
    person for a grant; both leave the tree as it was, and the run repairs."""
    wrong = fix_diff().replace("    if discounted < 0:\n", "    if discounted <= 0:\n")
    add_only = (f"--- a/{PRICING}\n+++ b/{PRICING}\n@@ -36,0 +37,1 @@\n+    discount = discount / 100\n")
    script = [tool_call("apply_patch", {"diff": wrong}), tool_call("apply_patch", {"diff": add_only}),
              tool_call("apply_patch", {"diff": fix_diff()}), *CHECKS]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir)
        prompts = [r["messages"][1]["content"] for r in srv.requests]
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 6
    failed, malformed = (s["result"] for s in steps(rec)[:2])
    assert failed["status"] == "error" and "patch does not apply" in failed["raw_error"]
    assert "while searching for" not in failed["raw_error"] and "Checking patch" not in failed["raw_error"]
    assert "The closest lines in src/discount_shop/pricing.py (lines" in failed["raw_error"]
    assert "    38\t    if discounted < 0:" in failed["raw_error"] and "    38\t    if discounted < 0:" in prompts[1]
    assert malformed["status"] == "error" and malformed["source"] == "controller:diff-check"
    assert malformed["raw_error"].startswith("your diff is malformed: ") and "context lines" in malformed["raw_error"]
    assert "your diff is malformed" in prompts[2]
    assert [s["decision"]["accepted"] for s in steps(rec)] == [True] * 6


# -- what the model has read stays in front of it -----------------------------------------
def test_a_re_read_after_other_work_is_not_a_repeat_and_the_files_read_stay_in_the_prompt(runs_dir):
    """The scripted sequence that used to end no_new_evidence at step 7: read pricing.py, two
    searches, three reads (one a window of a file), read pricing.py again. The re-read's identical
    result is older than the five observations shown in full, so it is a re-read, and the run goes
    on to repair. Each prompt carries "Files you have read": the latest read of each file on the
    current diff, with line numbers; a patch makes them stale, so they leave the section."""
    cart = "src/discount_shop/cart.py"
    script = [
        tool_call("read_file", {"path": PRICING}),                                             # 1
        tool_call("search", {"query": "apply_discount"}),                                      # 2
        tool_call("search", {"query": "round_money"}),                                         # 3
        tool_call("read_file", {"path": cart, "start_line": 1, "end_line": 12}),                # 4 a window
        tool_call("read_file", {"path": "src/discount_shop/coupons.py"}),                      # 5
        tool_call("read_file", {"path": "src/discount_shop/money.py", "line_numbers": True}),  # 6
        tool_call("read_file", {"path": PRICING}),                                             # 7 again
        tool_call("replace_in_file", {"path": PRICING, "old": FIX_OLD, "new": FIX_NEW}),       # 8
        *CHECKS,                                                                               # 9-11
    ]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir, max_steps=12)
        prompts = [r["messages"][1]["content"] for r in srv.requests]
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 11, rec.detail
    files = [p.split("# Files you have read", 1)[1].split("\n# Evidence", 1)[0] if "# Files you have read" in p
             else "" for p in prompts]
    # Step 7's prompt: pricing.py (read at step 1) still there in full, numbered, below newer reads.
    assert "## src/discount_shop/pricing.py (lines 1-41; E1, step 1)" in files[6]
    assert "    37\t    discounted = price * (1 - discount)" in files[6]
    assert f"## {cart} (lines 1-12; E4, step 4)" in files[6]
    assert files[6].index("money.py") < files[6].index("coupons.py") < files[6].index(cart) < files[6].index(PRICING)
    # The re-read replaces the earlier entry; the evidence points at the section instead of repeating it.
    assert files[7].count("## src/discount_shop/pricing.py") == 1 and "E7, step 7" in files[7]
    assert 'output: (under "Files you have read")' in prompts[7]
    # After the edit the reads describe a tree that no longer exists: the section is gone.
    assert files[8] == ""
    # The warning names what would end the run next (step 10: the target test already ran on this diff).
    assert "# Warning: these next actions would END the run" in prompts[9]
    assert "run_target_test again before the diff changes: no_new_evidence" in prompts[9]


def test_the_same_read_among_the_last_five_still_ends_the_run(runs_dir):
    """The progress rule still ends a loop: a read repeated while its result is still in view."""
    script = [tool_call("read_file", {"path": PRICING}), tool_call("search", {"query": "round_money"}),
              tool_call("read_file", {"path": PRICING})]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir)
        prompts = [r["messages"][1]["content"] for r in srv.requests]
    assert rec.status is StopReason.NO_NEW_EVIDENCE and rec.steps_used == 3
    assert "the same read or search as one of the last 5" in prompts[2] and '"path":"%s"' % PRICING in prompts[2]


def test_notes_are_shown_back_journaled_with_the_observation_and_replay_exactly(runs_dir):
    """A `note` on any call comes back under "Your notes" in every later prompt; it is journaled in
    the proposal and with the observation, so each journaled View renders the prompt the model was
    sent, byte for byte; and a note does not disguise a repeated action."""
    from repair_agent.choosers.model import render_view
    from repair_agent.loop.journal import JournaledView
    from repair_agent.lifecycle.resume import load_checkpoint

    script = [
        tool_call("read_file", {"path": PRICING, "note": "plan: read pricing, then fix the percent"}),
        tool_call("replace_in_file", {"path": PRICING, "old": FIX_OLD, "new": FIX_NEW,
                                      "note": "discount is a percentage: divide by 100"}),
        tool_call("run_target_test", {"note": "check the target"}),
        tool_call("run_target_test", {"note": "a different note, the same action"}),
    ]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir)
        prompts = [r["messages"][1]["content"] for r in srv.requests]
    assert rec.status is StopReason.REPEATED_ACTION and rec.steps_used == 4
    assert "# Your notes" not in prompts[0]
    # Each acceptance condition is stated once (under Conditions, with its status), not three times.
    for prompt in prompts:
        assert prompt.count("the current diff stays inside the writable globs and touches nothing protected") == 1
        assert "Acceptance: the conditions below\n" in prompt
    assert "# Your notes (from your earlier calls)\n- step 1 (read_file): plan: read pricing, then fix the percent\n" \
           "- step 2 (replace_in_file): discount is a percentage: divide by 100" in prompts[2]
    journaled = steps(rec)
    assert journaled[1]["proposal"]["note"] == "discount is a percentage: divide by 100"
    assert journaled[1]["result"]["note"] == "discount is a percentage: divide by 100"
    evidence = {e.id: e for e in load_checkpoint(Path(rec.run_dir)).evidence}
    for step, prompt in zip(journaled, prompts):
        view = JournaledView.model_validate(step["view"]).view(evidence)
        assert render_view(view) == prompt == step["chooser_call"]["messages"][1]["content"]


def test_open_model_reply_formats_repair_the_bug(runs_dir):
    """A whole run on replies as open models write them without a server-side tool parser: a call
    after a <think> block, JSON after prose, a ```python call, Hermes <tool_call> JSON, and
    Qwen3-coder's <function=…> XML (a replace_in_file whose multi-line text keeps its indentation,
    and an apply_patch whose last newline the template dropped). Request extras go out every time."""
    def qwen3_coder(name: str, **params: str) -> str:
        body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
        return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"

    undo = fix_diff().replace("-    discounted = price * (1 - discount)\n", "-@@@\n").replace(
        "+    discounted = price * (1 - discount / 100)\n", "+    discounted = price * (1 - discount)\n").replace(
        "-@@@\n", "-    discounted = price * (1 - discount / 100)\n")
    other_fix = fix_diff().replace("+    discounted = price * (1 - discount / 100)\n",
                                   "+    discounted = price * (100 - discount) / 100\n")
    script = [
        content("<think>\nThe target test fails; find where the discount is applied.\n</think>\n\n"
                '{"name": "search", "arguments": {"query": "price * (1 - discount)"}}'),                  # 1
        content(qwen3_coder("read_file", path=PRICING, start_line="30", end_line="41", line_numbers="true")),  # 2
        content(qwen3_coder("replace_in_file", path=PRICING, old=FIX_OLD.rstrip("\n"),
                            new=FIX_NEW.rstrip("\n"), note="percent, not fraction")),                   # 3
        content("I'll run the target test now.\n{\"name\": \"run_target_test\", \"arguments\": {}}"),  # 4
        content(qwen3_coder("apply_patch", diff=undo.rstrip("\n"))),                                   # 5 undo
        content('<tool_call>\n{"name": "apply_patch", "arguments": %s}\n</tool_call>'
                % json.dumps({"diff": other_fix})),                                                    # 6 redo
        content('```python\nrun_target_test()\n```'),                                                  # 7
        content("<think>\nTarget passes. Now the suite.\n</think>\n```json\n{\"name\": \"run_full_suite\"}\n```"),
        content(qwen3_coder("check_diff")),                                                            # 9
    ]
    with ChatServer(script) as srv:
        rec = run(srv, runs_dir, {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}, max_steps=12)
        assert not srv.script
        requests = srv.requests
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 9, rec.detail
    journaled = steps(rec)
    assert [s["result"]["status"] for s in journaled] == ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"]
    assert journaled[1]["proposal"] == {"tool": "read_file", "path": PRICING, "start_line": 30, "end_line": 41,
                                        "line_numbers": True}
    assert journaled[2]["result"]["data"]["applied_diff"] == fix_diff()
    assert journaled[4]["proposal"]["diff"] == undo  # the dropped final newline put back
    assert "price * (100 - discount) / 100" in (Path(rec.run_dir) / "candidate.diff").read_text()
    assert all(len(s["chooser_call"]["reasks"]) == 0 for s in journaled)
    assert all(r["chat_template_kwargs"] == {"enable_thinking": False} for r in requests)
    assert rec.model["parameters"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}


def test_a_run_that_edited_with_replace_in_file_resumes_from_its_journal(runs_dir):
    """The workspace of a resumed run is rebuilt from the journaled diffs: replace_in_file's is the
    one it was applied as (the result's data.applied_diff), so the rebuilt diff hashes as journaled."""
    from repair_agent.lifecycle.resume import resume_run

    with ChatServer([tool_call("replace_in_file", {"path": PRICING, "old": FIX_OLD, "new": FIX_NEW}),
                     tool_call("run_target_test"), *CHECKS[1:]]) as srv:
        stopped = run(srv, runs_dir, max_steps=2)
        assert stopped.status is StopReason.STEP_BUDGET
        resumed = resume_run(Path(stopped.run_dir), chooser_spec="model", extra_steps=3, runs_dir=runs_dir,
                             model_options={"base_url": srv.base_url, "model": "scripted-model", **FAST})
        assert not srv.script
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION and resumed.steps_used == 4
    assert resumed.diff_sha256 == stopped.diff_sha256
    assert "discount / 100" in (Path(stopped.run_dir) / "candidate.diff").read_text()


def test_models_check_says_which_models_can_drive_a_run_and_how(tmp_path):
    """`repair-agent models check`: one request per model as a step makes it. A model with native
    tool calls, one whose call comes as Qwen3-coder XML text without usage, one whose server refuses
    the key (its message, escape sequence and all, shown by name), one with an unset key variable."""
    import os
    import subprocess
    import sys

    xml = "<tool_call>\n<function=search>\n<parameter=query>\nmodels-check\n</parameter>\n</function>\n</tool_call>"
    with ChatServer([tool_call("search", {"query": "models-check"})]) as native, \
            ChatServer([content("<think>\nThey want a search.\n</think>\n" + xml, usage=None)]) as textual, \
            ChatServer([openai_error(401, "Incorrect API key provided\x1b[2K", type="invalid_request_error",
                                     code="invalid_api_key")]) as refused:
        (tmp_path / "models.toml").write_text(
            f'[models.native]\nmodel = "gpt-x"\nbase_url = "{native.base_url}"\ntemperature = 0\n'
            f'[models.qwen3-coder]\nmodel = "Qwen/Qwen3-Coder"\nbase_url = "{textual.base_url}"\n'
            f'[models.refused]\nmodel = "m"\nbase_url = "{refused.base_url}"\n'
            f'[models.nokey]\nmodel = "m"\nbase_url = "{refused.base_url}"\napi_key_env = "RA_TEST_UNSET_KEY"\n')
        cli = lambda *a: subprocess.run([sys.executable, "-m", "repair_agent", "models", "check", *a],
                                        capture_output=True, text=True, cwd=tmp_path, timeout=120,
                                        env={k: v for k, v in os.environ.items() if k != "RA_TEST_UNSET_KEY"})
        proc = cli("--json")
        assert native.requests[0]["temperature"] == 0 and len(native.requests[0]["tools"]) == len(TOOL_NAMES)
    assert proc.returncode == 1, proc.stderr
    results = {r["name"]: r for r in json.loads(proc.stdout)}
    assert results["native"]["ok"] and results["native"]["call_format"] == "tool_calls"
    assert results["native"]["usage_reported"] is True
    assert results["qwen3-coder"]["ok"] and results["qwen3-coder"]["call_format"] == "text"
    assert results["qwen3-coder"]["usage_reported"] is False
    assert not results["refused"]["ok"] and "HTTP 401 invalid_api_key" in results["refused"]["problem"]
    assert not results["nokey"]["ok"] and "RA_TEST_UNSET_KEY" in results["nokey"]["problem"]
    with ChatServer([tool_call("search", {"query": "models-check"})] * 2) as native, \
            ChatServer([openai_error(401, "Incorrect API key provided\x1b[2K", code="invalid_api_key")]) as refused:
        (tmp_path / "models.toml").write_text(f'[models.native]\nmodel = "gpt-x"\nbase_url = "{native.base_url}"\n'
                                              f'[models.refused]\nmodel = "m"\nbase_url = "{refused.base_url}"\n')
        text = cli("native", "refused")
        only = cli("native")
    assert text.returncode == 1 and only.returncode == 0
    assert "native: ok — gpt-x at" in text.stdout and "native tool_calls; usage reported" in text.stdout
    assert "refused: FAILED" in text.stdout and "\\x1b[2K" in text.stdout and "\x1b" not in text.stdout


def test_replace_in_file_on_a_protected_file_needs_a_grant_as_a_patch_would(runs_dir):
    """The edit's diff goes through the same scope check: editing the target test waits for a person."""
    tests_file = "tests/test_pricing.py"
    with ChatServer([tool_call("replace_in_file", {"path": tests_file, "old": "== 90", "new": "== 100"})]) as srv:
        rec = run(srv, runs_dir)
    assert rec.status is StopReason.AUTHORIZATION_REQUIRED and rec.steps_used == 1
    stop = [r for r in read_journal(Path(rec.run_dir) / "journal.jsonl") if r["event"] == "stop"][0]
    assert any(tests_file in g for g in stop["extra"]["grant"]) and "+    assert" in stop["extra"]["raw"]
    assert "== 90" in (Path(rec.run_dir) / "workspace" / tests_file).read_text()  # nothing was applied


def test_a_refused_replace_in_file_is_granted_on_its_diff_and_reoffered_on_resume(runs_dir):
    """A person grants README.md after a replace_in_file there was refused: the grant is checked
    against the diff the edit became; the resumed run re-offers the edit, now accepted."""
    from repair_agent.lifecycle.resume import ResumeRefused, record_grant, resume_run

    readme_edit = {"path": "README.md", "old": "# discount-shop\n", "new": "# discount-shop\n\nDiscounts are percent.\n"}
    script = [tool_call("replace_in_file", readme_edit),                                       # 1, refused
              tool_call("replace_in_file", {"path": PRICING, "old": FIX_OLD, "new": FIX_NEW}),  # 3 (2: re-offer)
              *CHECKS]
    with ChatServer(script) as srv:
        refused = run(srv, runs_dir)
        assert refused.status is StopReason.AUTHORIZATION_REQUIRED and refused.steps_used == 1
        with pytest.raises(ResumeRefused, match="would still be refused"):
            record_grant(Path(refused.run_dir), ["docs/**"], "not the file it edits")
        record_grant(Path(refused.run_dir), ["README.md"], "the fix deserves a line in the README")
        resumed = resume_run(Path(refused.run_dir), chooser_spec="model", runs_dir=runs_dir,
                             model_options={"base_url": srv.base_url, "model": "scripted-model", **FAST})
        assert not srv.script
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION, resumed.detail
    journaled = steps(refused)
    assert journaled[1]["proposal"] == journaled[0]["proposal"] and journaled[1]["decision"]["accepted"]
    diff = (Path(refused.run_dir) / "candidate.diff").read_text()
    assert "+Discounts are percent." in diff and "discount / 100" in diff


def test_a_cost_budget_stops_the_run_says_what_it_spent_and_a_resume_grants_more(tmp_path):
    """--max-cost, priced from the models file: 120 prompt + 30 completion tokens a step at 2.5 / 10
    per million are 0.0006 a step, so a budget of 0.0015 ends the run cost_budget (exit 18) before
    its fourth step; resume refuses to go on without more money, and with --max-cost 0.01 more it
    repairs. An unpriced model with --max-cost is a usage error before any request."""
    import os
    import subprocess
    import sys

    sequence = list(FIX_SEQUENCE)
    with ChatServer([], responder=lambda body: sequence.pop(0)) as srv:
        models = tmp_path / "models.toml"
        models.write_text(f'[models.priced]\nmodel = "p-1"\nbase_url = "{srv.base_url}"\nprice_per_mtok_in = 2.5\n'
                          f'price_per_mtok_out = 10.0\n\n[models.free]\nmodel = "f-1"\nbase_url = "{srv.base_url}"\n')
        runs = tmp_path / "runs"
        cli = lambda *a: subprocess.run([sys.executable, "-m", "repair_agent", *a, "--runs-dir", str(runs), "--json"],
                                        capture_output=True, text=True, cwd=tmp_path, timeout=300,
                                        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})
        refused = cli("run", "discount-bug", "--chooser", "model:free", "--models", str(models), "--sandbox", "local",
                      "--max-cost", "1")
        assert refused.returncode == 2 and "free has no price_per_mtok_in" in refused.stderr
        assert srv.requests == [] and not runs.exists()

        first = cli("run", "discount-bug", "--chooser", "model:priced", "--models", str(models), "--sandbox", "local",
                    "--max-cost", "0.0015")
        assert first.returncode == 18, first.stderr
        out = json.loads(first.stdout)
        assert out["status"] == "cost_budget" and out["steps_used"] == 3 and len(srv.requests) == 3
        assert out["usage"]["cost"] == 0.0018 and "cost budget spent: 0.0018 of 0.0015" in out["detail"]

        again = cli("resume", out["run_id"], "--models", str(models))
        assert again.returncode == 2 and "--max-cost" in again.stderr and len(srv.requests) == 3
        resumed = cli("resume", out["run_id"], "--models", str(models), "--max-cost", "0.01")
        assert resumed.returncode == 0, resumed.stderr
    done = json.loads(resumed.stdout)
    assert done["status"] == "awaiting_release_confirmation" and done["usage"]["cost"] == 0.0036
    setups = [r for r in read_journal(Path(out["run_dir"]) / "journal.jsonl") if r["event"] == "setup"]
    assert [s["max_cost"] for s in setups] == [0.0015, 0.0118]  # the resume's: spent + what it granted
