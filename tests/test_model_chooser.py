"""ModelChooser against a real loopback Chat Completions server: no mocks of the chooser or the SDK."""
from __future__ import annotations

import json
import time

import pytest

from chat_server import ChatServer, content, delay, http_error, tool_call, tool_calls
from repair_agent.actions import ReadFile, parse_action, tool_schemas
from repair_agent.choosers.base import ChooserUnavailable, MalformedReply, TokenBudgetExceeded
from repair_agent.choosers.model import ModelChooser
from repair_agent.state import Authorization, ConditionState, Evidence, Goal, View

GOAL_TEXT = "Fix apply_discount so a 10% discount on 200.00 returns 180.00 instead of 20.00."
ALLOWED = ("search", "read_file", "apply_patch", "run_target_test", "stop")


def _evidence(i: int, tool: str, summary: str, output: str, status: str = "ok") -> Evidence:
    return Evidence(id=f"e{i}", step=i, tool=tool, action=json.dumps({"tool": tool}), status=status,
                    source="sandbox", started_at="2024-01-01T00:00:00Z", duration_s=0.1, summary=summary,
                    output=output, diff_sha256="0" * 64, fingerprint=f"fp{i}", result_sha256=f"r{i}")


def make_view(evidence: tuple[Evidence, ...] | None = None, allowed: tuple[str, ...] = ALLOWED) -> View:
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
    return View(step=3, state_version=3, goal=goal,
                authorization=Authorization(writable=("shop/**",), protected=("tests/**", "pytest.ini")),
                u=3, conditions=conditions, unknowns=("is pct a fraction or a percentage?",),
                evidence=evidence, steps_left=6, exploration_left=4, allowed_tools=allowed,
                action_schema=tuple(s for s in tool_schemas() if s["name"] in allowed),
                current_diff_sha256="0" * 64, current_diff="")


def chooser(srv: ChatServer, **kw) -> ModelChooser:
    return ModelChooser(base_url=srv.base_url, model="test-model", api_key="sk-test", **kw)


def test_tool_call_returns_dict_and_request_offers_only_allowed_tools():
    args = {"path": "shop/pricing.py", "start_line": 1, "end_line": 40}
    with ChatServer([tool_call("read_file", args)]) as srv:
        mc = chooser(srv)
        proposal = mc.choose(make_view())
    assert proposal == {"tool": "read_file", **args}
    assert isinstance(parse_action(proposal), ReadFile)
    (req,) = srv.requests
    assert req["model"] == "test-model" and req["tool_choice"] == "required"
    assert [t["type"] for t in req["tools"]] == ["function"] * len(ALLOWED)
    assert {t["function"]["name"] for t in req["tools"]} == set(ALLOWED)
    assert all("parameters" in t["function"] for t in req["tools"])
    system, user = req["messages"]
    assert system["role"] == "system" and "exactly ONE" in system["content"]
    assert GOAL_TEXT in user["content"] and "Do not edit tests" in user["content"]
    assert "[unsatisfied] target_passes" in user["content"] and "assert 20.0 == 180.0" in user["content"]
    assert srv.headers[0]["authorization"] == "Bearer sk-test"
    assert mc.last_call["raw"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "read_file"
    assert mc.last_call["messages"] == req["messages"] and mc.last_call["latency_s"] >= 0


def test_plain_json_content_is_accepted():
    with ChatServer([content('{"tool": "search", "query": "apply_discount"}')]) as srv:
        assert chooser(srv).choose(make_view()) == {"tool": "search", "query": "apply_discount"}


def test_malformed_arguments_keep_raw_reply():
    bad = '{"path": "shop/pricing.py", '
    with ChatServer([tool_call("read_file", bad)]) as srv:
        with pytest.raises(MalformedReply) as err:
            chooser(srv).choose(make_view())
    assert err.value.raw["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == bad
    assert err.value.usage["total_tokens"] == 150


def test_non_object_arguments_are_malformed():
    with ChatServer([tool_call("search", '["apply_discount"]')]) as srv:
        with pytest.raises(MalformedReply, match="not a JSON object"):
            chooser(srv).choose(make_view())


def test_two_tool_calls_are_malformed():
    with ChatServer([tool_calls(("search", {"query": "a"}), ("read_file", {"path": "b"}))]) as srv:
        with pytest.raises(MalformedReply, match="2 tool calls") as err:
            chooser(srv).choose(make_view())
    assert len(err.value.raw["choices"][0]["message"]["tool_calls"]) == 2


def test_plain_prose_is_malformed():
    with ChatServer([content("I think the bug is in pricing.py, let me look.")]) as srv:
        with pytest.raises(MalformedReply, match="no tool call") as err:
            chooser(srv).choose(make_view())
    assert err.value.raw["choices"][0]["message"]["content"].startswith("I think the bug")


def test_http_500_is_unavailable_with_body():
    body = {"error": {"message": "engine overloaded", "type": "server_error"}}
    with ChatServer([http_error(500, body)]) as srv:
        mc = chooser(srv)
        with pytest.raises(ChooserUnavailable) as err:
            mc.choose(make_view())
    assert err.value.raw["status_code"] == 500
    assert "engine overloaded" in json.dumps(err.value.raw["body"])
    assert len(srv.requests) == 1  # max_retries=0: the SDK did not retry behind the controller's back
    assert mc.last_call["raw"] == err.value.raw


def test_timeout_is_unavailable():
    with ChatServer([delay(6.0, tool_call("stop", {"reason": "late"}))]) as srv:
        mc = chooser(srv, timeout_s=0.5)
        started = time.monotonic()
        with pytest.raises(ChooserUnavailable) as err:
            mc.choose(make_view())
        assert time.monotonic() - started < 4.0  # cut off long before the 6 s answer, even on a busy machine
    assert err.value.raw["type"] == "APITimeoutError" and err.value.raw["status_code"] is None


def test_connection_refused_is_unavailable():
    srv = ChatServer([]).start()
    mc = chooser(srv)
    srv.stop()
    with pytest.raises(ChooserUnavailable) as err:
        mc.choose(make_view())
    assert err.value.raw["type"] == "APIConnectionError"


def test_token_usage_accumulates_and_budget_stops():
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    with ChatServer([tool_call("search", {"query": "x"}, usage=usage)] * 2) as srv:
        mc = chooser(srv)
        mc.choose(make_view())
        mc.choose(make_view())
    assert mc.last_usage == {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    assert mc.tokens_used == 240

    with ChatServer([tool_call("search", {"query": "x"}, usage=usage)] * 2) as srv:
        mc = chooser(srv, max_tokens_budget=200)
        assert mc.choose(make_view())["tool"] == "search"  # 120 <= 200
        with pytest.raises(TokenBudgetExceeded) as err:
            mc.choose(make_view())                          # 240 > 200
    assert err.value.usage["total_tokens"] == 120
    assert err.value.raw["usage"]["total_tokens"] == 120 and mc.tokens_used == 240


def test_missing_usage_counts_zero():
    with ChatServer([tool_call("run_target_test", None, usage=None)]) as srv:
        mc = chooser(srv, max_tokens_budget=1)
        assert mc.choose(make_view()) == {"tool": "run_target_test"}
    assert mc.tokens_used == 0 and mc.last_usage == {}


def test_tool_choice_required_rejected_falls_back_to_auto():
    rejection = {"error": {"message": "tool_choice 'required' is not supported", "type": "invalid_request_error",
                           "param": "tool_choice"}}
    with ChatServer([http_error(400, rejection), tool_call("run_target_test")]) as srv:
        mc = chooser(srv)
        assert mc.choose(make_view()) == {"tool": "run_target_test"}
    assert [r["tool_choice"] for r in srv.requests] == ["required", "auto"]
    assert mc.last_call["tool_choice"] == "auto" and mc.last_call["tool_choice_fallback"] is True


def test_other_400_is_not_retried():
    with ChatServer([http_error(400, {"error": {"message": "context length exceeded"}})]) as srv:
        with pytest.raises(ChooserUnavailable) as err:
            chooser(srv).choose(make_view())
    assert err.value.raw["status_code"] == 400 and len(srv.requests) == 1


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
        assert ModelChooser().choose(make_view(allowed=("check_diff", "stop"))) == {"tool": "check_diff"}
    assert srv.requests[0]["model"] == "env-model"
    assert srv.headers[0]["authorization"] == "Bearer not-needed"


def test_fallback_retry_shares_the_timeout():
    rejection = {"error": {"message": "unsupported tool_choice: required"}}
    with ChatServer([http_error(400, rejection), delay(2.0, tool_call("run_target_test"))]) as srv:
        started = time.monotonic()
        with pytest.raises(ChooserUnavailable) as err:
            chooser(srv, timeout_s=0.5).choose(make_view())
        assert time.monotonic() - started < 1.5
    assert err.value.raw["type"] == "APITimeoutError" and len(srv.requests) == 2
