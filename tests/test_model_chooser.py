"""ModelChooser against a real loopback Chat Completions server: no mocks of the chooser or the SDK.

Each behaviour real OpenAI-compatible servers show (OpenAI, vLLM, Ollama, llama.cpp) is scripted
in tests/chat_server.py and answered here; whole runs on those servers are in test_model_runs.py.
Backoffs are milliseconds so the retries cost nothing."""
from __future__ import annotations

import json
import threading
import time

import pytest

from chat_server import (ChatServer, content, delay, drop_connection, http_error, openai_error, refusal, tool_call,
                         tool_calls)
from repair_agent.loop.actions import ReadFile, parse_action, tool_schemas
from repair_agent.choosers.base import ChooserError, ChooserUnavailable, MalformedReply
from repair_agent.choosers.base import ChooserStep
from repair_agent.choosers.model import SYSTEM_PROMPT, USER_PROMPT_CAP, ModelChooser, prompt, render_view
from repair_agent.loop.state import Authorization, ConditionState, Evidence, Goal, Grant, View

GOAL_TEXT = "Fix apply_discount so a 10% discount on 200.00 returns 180.00 instead of 20.00."
ALLOWED = ("search", "read_file", "apply_patch", "run_target_test", "stop")
FAST = {"retry_base_s": 0.001, "retry_max_s": 0.05}


# The fields an action of each tool needs when a test does not care which one it was.
SOME_FIELDS = {"search": {"query": "q"}, "read_file": {"path": "p.py"}, "apply_patch": {"diff": "d"},
               "replace_in_file": {"path": "p.py", "old": "a", "new": "b"}}


def _evidence(i: int, tool: str, summary: str, output: str, status: str = "ok", action: str | None = None,
              raw_error: str | None = None) -> Evidence:
    action = action or json.dumps({"tool": tool, **SOME_FIELDS.get(tool, {})})
    return Evidence(id=f"e{i}", step=i, tool=tool, action=action, status=status,
                    source="sandbox", started_at="2024-01-01T00:00:00Z", duration_s=0.1, summary=summary,
                    output=output, raw_error=raw_error, diff_sha256="0" * 64, fingerprint=f"fp{i}",
                    result_sha256=f"r{i}")


def make_view(evidence: tuple[Evidence, ...] | None = None, allowed: tuple[str, ...] = ALLOWED, **changes) -> View:
    goal = Goal(scenario="discount-bug", text=GOAL_TEXT,
                failure_signature="AssertionError: assert 20.0 == 180.0",
                target_tests=("tests/test_pricing.py::test_ten_percent_discount",),
                acceptance=("target test passes", "full suite passes", "diff stays in shop/"),
                constraints=("Do not edit tests or test configuration.", "Keep the public API of shop.pricing."))
    conditions = (
        ConditionState(name="target_passes", description="the target test passes", satisfied=False),
        ConditionState(name="suite_passes", description="the full suite passes", satisfied=False),
        ConditionState(name="diff_in_scope", description="the diff touches only writable paths", satisfied=False),
    )
    if evidence is None:
        evidence = (
            _evidence(1, "search", "2 matches for 'apply_discount'",
                      "shop/pricing.py:12:def apply_discount(price, pct):\ntests/test_pricing.py:5:"),
            _evidence(2, "run_target_test", "1 failed", "E   AssertionError: assert 20.0 == 180.0", "failed"),
        )
    fields = dict(step=3, state_version=3, goal=goal,
                  authorization=Authorization(writable=("shop/**",), protected=("tests/**", "pytest.ini")),
                  u=3, conditions=conditions, unknowns=("is pct a fraction or a percentage?",),
                  evidence=evidence, steps_left=6, exploration_left=4, allowed_tools=allowed,
                  action_schema=tuple(s for s in tool_schemas() if s["name"] in allowed),
                  current_diff_sha256="0" * 64, current_diff="")
    return View(**{**fields, **changes})


def journaled(step: ChooserStep) -> dict:
    """The step's call record as the controller journals it."""
    assert step.call is not None
    return step.call.model_dump(mode="json")


def journaled_error(error: ChooserError) -> dict:
    """A failed step's call record, as the controller journals it."""
    assert error.call is not None
    return error.call.model_dump(mode="json")


def chooser(srv: ChatServer, **kw) -> ModelChooser:
    return ModelChooser(base_url=srv.base_url, model="test-model", api_key="sk-test", **{**FAST, **kw})


# ------------------------------------------------------------------------------ the request
def test_tool_call_returns_dict_and_request_offers_only_allowed_tools():
    args = {"path": "shop/pricing.py", "start_line": 1, "end_line": 40}
    with ChatServer([tool_call("read_file", args)]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        proposal = step.proposal
    assert proposal == {"tool": "read_file", **args}
    assert isinstance(parse_action(proposal), ReadFile)
    (req,) = srv.requests
    assert req["model"] == "test-model" and req["tool_choice"] == "required"
    assert req["parallel_tool_calls"] is False            # one call per reply, asked for
    assert "temperature" not in req and "max_tokens" not in req  # unset: not sent at all
    assert [t["type"] for t in req["tools"]] == ["function"] * len(ALLOWED)
    assert {t["function"]["name"] for t in req["tools"]} == set(ALLOWED)
    assert all("parameters" in t["function"] for t in req["tools"])
    read = next(t["function"] for t in req["tools"] if t["function"]["name"] == "read_file")
    assert read["parameters"]["properties"]["line_numbers"]["type"] == "boolean"
    system, user = req["messages"]
    assert system["role"] == "system" and "exactly ONE" in system["content"]
    assert GOAL_TEXT in user["content"] and "Do not edit tests" in user["content"]
    assert "[unsatisfied] target_passes" in user["content"] and "assert 20.0 == 180.0" in user["content"]
    assert srv.headers[0]["authorization"] == "Bearer sk-test"
    assert journaled(step)["raw"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "read_file"
    assert journaled(step)["messages"] == req["messages"] and journaled(step)["latency_s"] >= 0
    assert journaled(step)["prompt_chars"] == len(system["content"]) + len(user["content"])


def test_configured_temperature_and_output_limit_are_sent():
    with ChatServer([tool_call("run_target_test")]) as srv:
        chooser(srv, temperature=0.2, max_output_tokens=512).choose(make_view())
    assert srv.requests[0]["temperature"] == 0.2 and srv.requests[0]["max_tokens"] == 512


def test_system_prompt_states_the_rules_that_end_a_run():
    for rule in ("same action twice in a row", "unchanged diff", "no_new_evidence", "conftest.py",
                 "ON TOP OF the current", "line_numbers=true", "authorization_required"):
        assert rule in SYSTEM_PROMPT, rule


# ---------------------------------------------------------------------- what replies look like
def test_arguments_as_a_json_object_are_accepted():
    """llama.cpp builds and Ollama send `arguments` as an object; the SDK's str type did not hold."""
    with ChatServer([tool_call("read_file", {"path": "shop/pricing.py", "line_numbers": True}, object_args=True)]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "read_file", "path": "shop/pricing.py", "line_numbers": True}
    assert journaled(step)["raw"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == {
        "path": "shop/pricing.py", "line_numbers": True}


def test_plain_json_content_is_accepted():
    with ChatServer([content('{"tool": "search", "query": "apply_discount"}')]) as srv:
        assert chooser(srv).choose(make_view()).proposal == {"tool": "search", "query": "apply_discount"}


@pytest.mark.parametrize("text", [
    'Let me look.\n```json\n{"name": "search", "arguments": {"query": "apply_discount"}}\n```',
    '<tool_call>\n{"name": "search", "arguments": {"query": "apply_discount"}}\n</tool_call>',
    '<tool_call>{"name": "search", "parameters": {"query": "apply_discount"}}</tool_call>',
    '{"name": "search", "parameters": {"query": "apply_discount"}}',
    '[TOOL_CALLS] [{"name": "search", "arguments": {"query": "apply_discount"}}]',
    '```\n{"type": "function", "function": {"name": "search", "arguments": "{\\"query\\": \\"apply_discount\\"}"}}\n```',
], ids=["fenced-json", "tool_call-tags", "tags-parameters", "bare-parameters", "mistral-list", "function-shape"])
def test_a_call_written_in_the_text_is_accepted(text):
    """vLLM without a tool parser, an Ollama template without tools: the standard shapes, fenced or tagged."""
    with ChatServer([content(text)]) as srv:
        assert chooser(srv).choose(make_view()).proposal == {"tool": "search", "query": "apply_discount"}


# Reply shapes as open models write them when the server has no tool parser for them.
QWEN3_CODER = ("<tool_call>\n<function=read_file>\n<parameter=path>\nshop/pricing.py\n</parameter>\n"
               "<parameter=start_line>\n30\n</parameter>\n<parameter=end_line>\n41\n</parameter>\n"
               "<parameter=line_numbers>\ntrue\n</parameter>\n</function>\n</tool_call>")
QWEN3_READ = {"tool": "read_file", "path": "shop/pricing.py", "start_line": 30, "end_line": 41, "line_numbers": True}


@pytest.mark.parametrize("text, expected", [
    ('<think>\nThe target fails with 20.0; the discount must be a percentage. Find apply_discount.\n</think>\n\n'
     '{"name": "search", "arguments": {"query": "apply_discount"}}', None),
    ('Okay, so the test says 20.0 == 180.0. I should look at the function.\n</think>\n\n```json\n'
     '{"name": "search", "arguments": {"query": "apply_discount"}}\n```', None),
    ("I'll search for the function first.\n"
     '{"name": "search", "arguments": {"query": "apply_discount"}}\nThen I will read it.', None),
    ('```python\nsearch(query="apply_discount")\n```', None),
    ('```python\n{"name": "search", "arguments": {"query": "apply_discount"}}\n```', None),
    ('<tool_call>\n{"name": "search", "arguments": {"query": "apply_discount"}}\n</tool_call>', None),
    (QWEN3_CODER, QWEN3_READ),
    ("<think>\nRead the end of the file.\n</think>\n" + QWEN3_CODER, QWEN3_READ),
], ids=["think-then-json", "lone-close-think-then-fence", "json-after-prose", "python-call", "python-fenced-json",
        "hermes-tool_call", "qwen3-coder-xml", "think-then-qwen3-coder-xml"])
def test_reply_formats_of_open_models_without_a_tool_parser(text, expected):
    """Thinking blocks, prose around JSON, ```python blocks, Hermes/Qwen <tool_call> JSON and
    Qwen3-coder's <function=…><parameter=…> XML: one call each, integers and booleans typed by the
    tool's schema, text parameters kept as written."""
    with ChatServer([content(text)]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == (expected or {"tool": "search", "query": "apply_discount"})
    assert journaled(step)["reasks"] == [] and journaled(step)["raw"]["choices"][0]["message"]["content"] == text


def test_extra_body_from_the_models_file_is_sent_with_every_request(tmp_path):
    """`extra_body` (e.g. Qwen3's chat_template_kwargs on vLLM) goes into each request as written,
    and is journaled with the request's parameters."""
    from repair_agent.choosers.models_file import load_models_file

    with ChatServer([tool_call("search", {"query": "x"}), tool_call("search", {"query": "y"})]) as srv:
        path = tmp_path / "models.toml"
        path.write_text(f'[models.qwen3]\nmodel = "Qwen/Qwen3-8B"\nbase_url = "{srv.base_url}"\ntemperature = 0.6\n'
                        'extra_body = {chat_template_kwargs = {enable_thinking = false}, top_k = 20}\n')
        settings = load_models_file(path)["qwen3"]
        mc = ModelChooser(settings=settings, name="qwen3", **FAST)
        step = mc.choose(make_view())
        step = mc.choose(make_view())
    assert [r["chat_template_kwargs"] for r in srv.requests] == [{"enable_thinking": False}] * 2
    assert srv.requests[0]["top_k"] == 20 and srv.requests[0]["temperature"] == 0.6
    assert journaled(step)["requests"][0]["params"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert mc.describe().model.parameters["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False},
                                                               "top_k": 20}


def test_two_tool_calls_act_on_the_first_and_the_next_prompt_says_so():
    with ChatServer([tool_calls(("search", {"query": "a"}), ("read_file", {"path": "b.py"})),
                     tool_call("read_file", {"path": "b.py"})]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "search", "query": "a"}
        assert [c["function"]["name"] for c in journaled(step)["not_executed"]] == ["read_file"]
        assert len(srv.requests) == 1  # one step, one request: nothing re-asked
        step = mc.choose(make_view())
    note = srv.requests[1]["messages"][1]["content"]
    assert "contained 2 tool calls" in note and "NOT executed" in note and "b.py" in note
    assert "About your previous reply" not in srv.requests[0]["messages"][1]["content"]


def test_a_refusal_becomes_a_stop_with_its_text():
    with ChatServer([refusal("I can't help with modifying this code.")]) as srv:
        proposal = chooser(srv).choose(make_view()).proposal
    assert proposal["tool"] == "stop" and "I can't help with modifying this code." in proposal["reason"]
    assert parse_action(proposal).summary == "I can't help with modifying this code."


# ------------------------------------------------------------------------------------ re-asks
def test_cut_off_arguments_are_reasked_with_the_error_in_the_same_step():
    cut = '{"diff": "--- a/shop/pricing.py\\n+++ b/shop/pricing.py\\n@@ -1,3 +1,3 @@\\n-    return price * (1 - pc'
    with ChatServer([tool_call("apply_patch", cut, finish_reason="length", usage={"prompt_tokens": 900, "completion_tokens": 4096}),
                     tool_call("read_file", {"path": "shop/pricing.py"})]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "read_file", "path": "shop/pricing.py"}
    assert len(srv.requests) == 2
    reask = srv.requests[1]["messages"]
    assert reask[:2] == srv.requests[0]["messages"] and [m["role"] for m in reask[2:]] == ["assistant", "user"]
    assert "cut off" in reask[3]["content"] and "not JSON" in reask[3]["content"]
    (record,) = journaled(step)["reasks"]
    assert record["raw"]["choices"][0]["finish_reason"] == "length"  # the raw reply of the re-asked turn
    # Both replies' tokens are counted.
    assert step.usage.model_dump() == {"prompt_tokens": 1020, "completion_tokens": 4126, "total_tokens": 5146, "requests": 2}


def test_schema_invalid_arguments_are_reasked_with_the_validation_error():
    with ChatServer([tool_call("read_file", {"file": "shop/pricing.py"}),
                     tool_call("read_file", {"path": "shop/pricing.py"})]) as srv:
        mc = chooser(srv)
        assert mc.choose(make_view()).proposal == {"tool": "read_file", "path": "shop/pricing.py"}
    error = srv.requests[1]["messages"][3]["content"]
    assert "path: Field required" in error and "file: Extra inputs are not permitted" in error
    assert json.loads(srv.requests[1]["messages"][2]["content"])["tool_calls"][0]["function"]["name"] == "read_file"


def test_still_schema_invalid_after_the_reasks_goes_to_the_controller_as_proposed():
    """The controller's rule is unchanged: it validates what it gets (and ends invalid_action)."""
    with ChatServer([tool_call("read_file", {"file": "a.py"}), tool_call("read_file", {"file": "a.py"})]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "read_file", "file": "a.py"}
    assert len(srv.requests) == 2 and len(journaled(step)["reasks"]) == 1


def test_max_reasks_is_configurable():
    with ChatServer([tool_call("read_file", {"file": "a.py"})] * 3 + [tool_call("run_target_test")]) as srv:
        mc = chooser(srv, max_reasks=3)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "run_target_test"}
    assert len(srv.requests) == 4 and step.usage.model_dump()["total_tokens"] == 4 * 150
    with ChatServer([tool_call("read_file", {"file": "a.py"})]) as srv:
        assert chooser(srv, max_reasks=0).choose(make_view()).proposal == {"tool": "read_file", "file": "a.py"}
    assert len(srv.requests) == 1


def test_malformed_arguments_keep_raw_reply():
    bad = '{"path": "shop/pricing.py", '
    with ChatServer([tool_call("read_file", bad), tool_call("read_file", bad)]) as srv:
        with pytest.raises(MalformedReply) as err:
            chooser(srv).choose(make_view())
    assert err.value.raw["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == bad
    assert err.value.usage.total_tokens == 300  # the re-ask's tokens too


def test_non_object_arguments_are_malformed():
    with ChatServer([tool_call("search", '["apply_discount"]')]) as srv:
        with pytest.raises(MalformedReply, match="not a JSON object"):
            chooser(srv, max_reasks=0).choose(make_view())


def test_plain_prose_is_malformed():
    prose = "I think the bug is in pricing.py, let me look."
    with ChatServer([content(prose), content(prose)]) as srv:
        with pytest.raises(MalformedReply, match="no tool call") as err:
            chooser(srv).choose(make_view())
    assert err.value.raw["choices"][0]["message"]["content"].startswith("I think the bug")


# ----------------------------------------------------------------------------------- retries
def test_transient_errors_are_retried_honouring_retry_after():
    script = [openai_error(429, "Rate limit reached", type="requests", code="rate_limit_exceeded",
                           headers={"retry-after-ms": "30"}),
              openai_error(503, "overloaded", type="server_error", headers={"Retry-After": "0"}),
              http_error(502, "<html>bad gateway</html>"),
              drop_connection(),
              http_error(500, {"error": {"message": "engine hiccup"}}),
              tool_call("run_target_test")]
    with ChatServer(script) as srv:
        mc = chooser(srv, max_retries=5)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "run_target_test"}
    reqs = journaled(step)["requests"]
    assert len(srv.requests) == len(reqs) == 6  # one step: every attempt journaled
    assert [(r.get("error") or {}).get("status_code") for r in reqs] == [429, 503, 502, None, 500, None]
    assert reqs[3]["error"]["type"] == "APIConnectionError"
    assert reqs[0]["retry_in_s"] == 0.03 and reqs[1]["retry_in_s"] == 0.0  # as the server asked
    assert all(0 < r["retry_in_s"] <= 0.05 for r in reqs[2:5])            # bounded exponential backoff
    assert srv.requests[0] == srv.requests[5]                              # the same request again


def test_a_read_timeout_is_retried():
    with ChatServer([delay(3.0, tool_call("stop")), tool_call("run_target_test")]) as srv:
        mc = chooser(srv, timeout_s=0.3)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "run_target_test"}
    assert journaled(step)["requests"][0]["error"]["type"] == "APITimeoutError"


def test_retries_are_bounded_and_end_unavailable_with_every_attempt():
    with ChatServer([http_error(503, {"error": {"message": f"down {i}"}}) for i in range(3)]) as srv:
        mc = chooser(srv, max_retries=2)
        with pytest.raises(ChooserUnavailable, match="after 2 retries") as err:
            mc.choose(make_view())
    assert len(srv.requests) == 3 and err.value.infrastructure
    assert [json.loads(e["response_text"]) for e in err.value.raw["errors"]] == [
        {"error": {"message": f"down {i}"}} for i in range(3)]
    assert err.value.raw["status_code"] == 503 and journaled_error(err.value)["raw"] == err.value.raw


def test_a_retry_after_longer_than_allowed_is_not_waited_for():
    with ChatServer([openai_error(429, "slow down", code="rate_limit_exceeded", headers={"retry-after": "120"})]) as srv:
        started = time.monotonic()
        with pytest.raises(ChooserUnavailable, match="does not fit"):
            chooser(srv).choose(make_view())
        assert time.monotonic() - started < 2.0 and len(srv.requests) == 1


def test_retries_stay_inside_the_step_deadline():
    with ChatServer([http_error(503, "down")] * 10) as srv:
        mc = chooser(srv, retry_base_s=0.2, retry_max_s=5.0, max_retries=10)
        mc.set_deadline(time.monotonic() + 0.5)  # what the controller does before each step
        started = time.monotonic()
        with pytest.raises(ChooserUnavailable):
            mc.choose(make_view())
        assert time.monotonic() - started < 2.0 and len(srv.requests) < 5  # 10 retries would take > 20 s


@pytest.mark.parametrize("error, infrastructure", [
    (openai_error(429, "You exceeded your current quota, please check your plan and billing details.",
                  type="insufficient_quota", code="insufficient_quota"), True),
    (openai_error(401, "Incorrect API key provided: sk-test.", code="invalid_api_key"), True),
    (openai_error(403, "Project does not have access to model", code="model_not_found"), True),
    (openai_error(400, "This model's maximum context length is 8192 tokens. However, your messages resulted in "
                       "12000 tokens.", param="messages", code="context_length_exceeded"), False),
], ids=["insufficient_quota", "auth-401", "forbidden-403", "context_length_exceeded"])
def test_quota_auth_and_context_length_are_not_retried(error, infrastructure):
    with ChatServer([error, tool_call("stop")]) as srv:
        with pytest.raises(ChooserUnavailable, match="not retried") as err:
            chooser(srv).choose(make_view())
    assert len(srv.requests) == 1
    assert json.loads(err.value.raw["response_text"]) == error["body"]  # the raw error, kept
    assert err.value.infrastructure is infrastructure


def test_connection_refused_is_unavailable():
    srv = ChatServer([]).start()
    mc = chooser(srv, max_retries=1)
    srv.stop()
    with pytest.raises(ChooserUnavailable) as err:
        mc.choose(make_view())
    assert err.value.raw["type"] == "APIConnectionError" and len(journaled_error(err.value)["requests"]) == 2


def test_timeout_is_unavailable():
    with ChatServer([delay(6.0, tool_call("stop", {"reason": "late"}))]) as srv:
        mc = chooser(srv, timeout_s=0.5, max_retries=0)
        started = time.monotonic()
        with pytest.raises(ChooserUnavailable) as err:
            mc.choose(make_view())
        assert time.monotonic() - started < 4.0  # cut off long before the 6 s answer, even on a busy machine
    assert err.value.raw["type"] == "APITimeoutError" and err.value.raw["status_code"] is None


# ----------------------------------------------------------------- parameters servers reject
def test_reasoning_model_rejections_drop_exactly_those_parameters_once():
    """o-series / gpt-5: only the default temperature, and max_completion_tokens instead of max_tokens."""
    script = [openai_error(400, "Unsupported value: 'temperature' does not support 0.2 with this model. Only the "
                                "default (1) value is supported.", param="temperature", code="unsupported_value"),
              openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                "'max_completion_tokens' instead.", param="max_tokens", code="unsupported_parameter"),
              tool_call("search", {"query": "a"}), tool_call("search", {"query": "b"})]
    with ChatServer(script) as srv:
        mc = chooser(srv, temperature=0.2, max_output_tokens=2048, max_retries=0)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "search", "query": "a"}
        assert [r.get("adjusted") for r in journaled(step)["requests"]] == [
            "temperature omitted", "max_tokens -> max_completion_tokens", None]
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "search", "query": "b"}  # remembered: no failing request
    first, second, third, fourth = srv.requests
    assert first["temperature"] == 0.2 and first["max_tokens"] == 2048
    assert "temperature" not in second and second["max_tokens"] == 2048
    assert "temperature" not in third and "max_tokens" not in third and third["max_completion_tokens"] == 2048
    assert fourth == {**third, "messages": fourth["messages"]}


def test_an_unsupported_parameter_we_did_not_send_is_not_retried():
    with ChatServer([openai_error(400, "Unsupported parameter: 'top_p'", param="top_p", code="unsupported_parameter")]) as srv:
        with pytest.raises(ChooserUnavailable):
            chooser(srv).choose(make_view())
    assert len(srv.requests) == 1


def test_tool_choice_required_rejected_falls_back_to_auto():
    rejection = {"error": {"message": "tool_choice 'required' is not supported", "type": "invalid_request_error",
                           "param": "tool_choice"}}
    with ChatServer([http_error(400, rejection), tool_call("run_target_test"), tool_call("search", {"query": "x"})]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "run_target_test"}
        assert journaled(step)["tool_choice"] == "auto" and journaled(step)["tool_choice_fallback"] is True
        step = mc.choose(make_view())
    assert [r["tool_choice"] for r in srv.requests] == ["required", "auto", "auto"]


def test_other_400_is_not_retried():
    with ChatServer([http_error(400, {"error": {"message": "bad request"}})]) as srv:
        with pytest.raises(ChooserUnavailable) as err:
            chooser(srv).choose(make_view())
    assert err.value.raw["status_code"] == 400 and len(srv.requests) == 1


def test_fallback_retry_shares_the_timeout():
    rejection = {"error": {"message": "unsupported tool_choice: required"}}
    with ChatServer([http_error(400, rejection), delay(2.0, tool_call("run_target_test"))]) as srv:
        started = time.monotonic()
        mc = chooser(srv, timeout_s=0.5, max_retries=0)
        mc.set_deadline(time.monotonic() + 0.5)
        with pytest.raises(ChooserUnavailable) as err:
            mc.choose(make_view())
        assert time.monotonic() - started < 1.5
    assert err.value.raw["type"] == "APITimeoutError" and len(srv.requests) == 2


# ------------------------------------------------------------------------------------- tokens
def test_token_usage_accumulates():
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    with ChatServer([tool_call("search", {"query": "x"}, usage=usage)] * 2) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        step = mc.choose(make_view())
    assert step.usage.model_dump() == {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, "requests": 1}
    assert mc.tokens_used == 240


def test_missing_usage_is_unknown_not_zero():
    with ChatServer([tool_call("run_target_test", None, usage=None)]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
        assert step.proposal == {"tool": "run_target_test"}
    assert step.usage.model_dump() == {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "requests": 1}
    # One reply of a step without usage makes the step's count unknown, even if another had it.
    with ChatServer([tool_call("read_file", {"file": "x"}), tool_call("run_target_test", None, usage=None)]) as srv:
        mc = chooser(srv)
        step = mc.choose(make_view())
    assert step.usage.model_dump()["total_tokens"] is None and step.usage.model_dump()["requests"] == 2


# ------------------------------------------------------------------------------ prompt size
def test_prompt_stays_bounded_and_keeps_goal():
    many = tuple(_evidence(i, "read_file", f"read chunk {i}", f"OUT{i}:" + "x" * 20_000) for i in range(1, 61))
    with ChatServer([tool_call("stop", {"summary": "stuck"})]) as srv:
        chooser(srv).choose(make_view(evidence=many))
    user = srv.requests[0]["messages"][1]["content"]
    assert GOAL_TEXT in user and "Keep the public API" in user and "tests/**" in user
    assert "OUT60:" in user and "OUT55:" not in user  # 5 newest outputs shown (capped), older ones not
    assert "- e55 (step 55) read_file [ok]: read chunk 55" in user  # older ones as one line
    assert "(15 earlier items omitted)" in user and "- e15 (step 15)" not in user
    assert "chars omitted" in user  # each output capped
    assert len(user) < 30_000        # 60 x 20 kB of output did not reach the prompt


def test_every_part_of_the_prompt_is_capped(monkeypatch):
    """A failed 150 kB patch used to come back whole as the evidence's `action:` (a 201k-character prompt)."""
    huge_patch = json.dumps({"tool": "apply_patch", "diff": "+x = 1\n" * 21_000})
    huge = "y" * 50_000
    evidence = tuple(_evidence(i, "apply_patch", huge, huge, status="error", action=huge_patch, raw_error=huge)
                     for i in range(1, 60))
    goal = Goal(scenario="s" * 500, text=huge, failure_signature=huge, target_tests=(huge,) * 100,
                acceptance=(huge,) * 100, constraints=(huge,) * 100)
    auth = Authorization(writable=(huge,) * 100, protected=(huge,) * 100,
                         grants=tuple(Grant(allow=(huge,) * 50, reason=huge, who=huge, when="t", after_step=1)
                                      for _ in range(20)))
    view = make_view(evidence=evidence, goal=goal, authorization=auth, unknowns=(huge,) * 100,
                     current_diff=huge * 4,
                     conditions=tuple(ConditionState(name="c", description=huge, satisfied=False) for _ in range(50)))
    user = render_view(view, notes=[huge] * 10)
    assert len(user) <= USER_PROMPT_CAP
    assert user.startswith("# Goal (") and user.endswith("Propose exactly one tool call now.")
    # The parts' own caps hold it there: the cap on the whole is only a safeguard.
    monkeypatch.setattr(prompt, "USER_PROMPT_CAP", 10**9)
    assert len(render_view(view, notes=[huge] * 10)) <= USER_PROMPT_CAP


def test_read_file_with_line_numbers_is_offered():
    with ChatServer([tool_call("read_file", {"path": "shop/pricing.py", "line_numbers": True})]) as srv:
        proposal = chooser(srv).choose(make_view()).proposal
    assert parse_action(proposal).line_numbers is True


# ---------------------------------------------------------------------------- concurrency
def test_max_concurrency_bounds_requests_in_flight(tmp_path):
    """Four choosers of one named model in four threads, max_concurrency=1: one request at a time."""
    script = [delay(0.15, tool_call("run_target_test")) for _ in range(4)]
    with ChatServer(script) as srv:
        choosers = [ModelChooser(base_url=srv.base_url, model="m", name="slow", max_concurrency=1,
                                 lock_dir=tmp_path, **FAST) for _ in range(4)]
        steps: list[ChooserStep] = []
        threads = [threading.Thread(target=lambda c=c: steps.append(c.choose(make_view()))) for c in choosers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert len(srv.requests) == 4 and srv.max_in_flight == 1
    waits = sorted(journaled(step)["requests"][0]["slot_wait_s"] for step in steps)
    assert waits[-1] >= 0.3  # the last one waited for the three before it


def test_max_concurrency_two_lets_two_through(tmp_path):
    gate = threading.Barrier(2, timeout=10)
    script = [delay(1.0, tool_call("run_target_test")) for _ in range(2)]  # long enough to overlap on a busy machine
    with ChatServer(script) as srv:
        choosers = [ModelChooser(base_url=srv.base_url, model="m", name="pair", max_concurrency=2,
                                 lock_dir=tmp_path, **FAST) for _ in range(2)]

        def go(c):
            gate.wait()
            c.choose(make_view())

        threads = [threading.Thread(target=go, args=(c,)) for c in choosers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert srv.max_in_flight == 2


# ------------------------------------------------------------------------ settings and names
def test_missing_model_name_is_value_error(monkeypatch):
    for var in ("REPAIR_AGENT_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="REPAIR_AGENT_MODEL"):
        ModelChooser(base_url="http://127.0.0.1:9/v1")


def test_settings_come_from_env(monkeypatch):
    with ChatServer([tool_call("check_diff")]) as srv:
        monkeypatch.setenv("REPAIR_AGENT_MODEL_BASE_URL", srv.base_url)
        monkeypatch.setenv("REPAIR_AGENT_MODEL", "env-model")
        monkeypatch.delenv("REPAIR_AGENT_MODEL_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        assert ModelChooser().choose(make_view(allowed=("check_diff", "stop"))).proposal == {"tool": "check_diff"}
    assert srv.requests[0]["model"] == "env-model"
    assert srv.headers[0]["authorization"] == "Bearer not-needed"


def test_an_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="temprature"):
        ModelChooser(base_url="http://127.0.0.1:9/v1", model="m", temprature=0.1)
