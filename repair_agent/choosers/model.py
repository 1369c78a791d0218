"""ModelChooser: one Chat Completions call per step against any OpenAI-compatible endpoint.

Stateless per step: the prompt is rendered from the View alone, so every step can be
replayed from the journal. The reply is returned as a plain dict; the controller validates it.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

import openai

from ..actions import tool_schemas
from ..state import Evidence, View
from .base import ChooserUnavailable, MalformedReply, TokenBudgetExceeded

OUTPUT_CAP = 4000   # chars of tool output per evidence item
DIFF_CAP = 8000     # chars of the current diff
RECENT_FULL = 5     # most recent evidence items shown in full; older ones as one line each
OLDER_MAX = 40      # older one-liners kept; beyond that only a count (keeps the prompt bounded)

SYSTEM_PROMPT = """\
You are the chooser of a code-repair loop. Each turn you propose exactly ONE tool call; \
the controller validates and executes it and shows you the result next turn.
- You cannot run shell commands. Use only the tools offered.
- Tests are run by a protected verifier (run_target_test, run_full_suite, check_diff); \
you never see or touch its configuration.
- Never edit tests or test configuration, and never write outside the writable globs.
- The loop stops by itself when all conditions are satisfied; you do not declare success.
- When you are stuck or lack authorization, call `stop` with a summary of what you found \
and what a person should do next."""


def _cap(text: str, limit: int) -> str:
    """Keep head and tail: test output usually matters at both ends."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} chars omitted] ...\n{text[-half:]}"


def _bullets(items: Any) -> str:
    return "\n".join(f"- {i}" for i in items) or "- (none)"


def _render_evidence(ev: Evidence) -> str:
    parts = [f"### {ev.id} (step {ev.step}) {ev.tool} [{ev.status}]", f"action: {ev.action}",
             f"summary: {ev.summary}"]
    if ev.output:
        parts.append("output:\n" + _cap(ev.output, OUTPUT_CAP))
    if ev.raw_error:
        parts.append("error:\n" + _cap(ev.raw_error, OUTPUT_CAP // 2))
    return "\n".join(parts)


def render_view(view: View) -> str:
    """The user message. Goal, constraints and authorization always come first and are never cut."""
    g, a = view.goal, view.authorization
    conds = "\n".join(f"- [{'satisfied' if c.satisfied else 'unsatisfied'}] {c.name}: {c.description}"
                      + (f" (evidence {c.evidence})" if c.evidence else "") + (" (stale)" if c.stale else "")
                      for c in view.conditions)
    out = [
        f"# Goal ({g.scenario})\n{g.text}\n\nFailure signature: {g.failure_signature}",
        f"Target tests:\n{_bullets(g.target_tests)}\nAcceptance:\n{_bullets(g.acceptance)}",
        f"Constraints:\n{_bullets(g.constraints)}",
        f"# Authorization\nWritable: {', '.join(a.writable) or '(nothing)'}\n"
        f"Protected (never edit): {', '.join(a.protected) or '(none)'}\n"
        + "".join(f"Granted by a person ({g.who}): {', '.join(g.allow)} — {g.reason}\n" for g in a.grants) +
        f"Network: {'yes' if a.network else 'no'}. Release always needs a person.",
        f"# Conditions: U = {view.u} unsatisfied\n{conds or '- (none)'}",
        f"# Unknowns\n{_bullets(view.unknowns)}",
        f"# Budget\nStep {view.step}; steps left: {view.steps_left} "
        f"(exploration left: {view.exploration_left})\nAllowed tools: {', '.join(view.allowed_tools)}",
        "# Current diff\n" + (f"```diff\n{_cap(view.current_diff, DIFF_CAP)}\n```" if view.current_diff
                              else "(no changes yet)"),
    ]
    older, recent = view.evidence[:-RECENT_FULL], view.evidence[-RECENT_FULL:]
    ev_lines = [f"# Evidence ({len(view.evidence)} items, oldest first)"]
    if len(older) > OLDER_MAX:
        ev_lines.append(f"({len(older) - OLDER_MAX} earlier items omitted)")
    ev_lines += [f"- {e.id} (step {e.step}) {e.tool} [{e.status}]: {_cap(e.summary, 300)}"
                 for e in older[-OLDER_MAX:]]
    ev_lines += [_render_evidence(e) for e in recent] or ["(none yet)"]
    out.append("\n\n".join(ev_lines))
    out.append("Propose exactly one tool call now.")
    return "\n\n".join(out)


def _usage(response: Any) -> dict[str, int]:
    u = getattr(response, "usage", None)
    if u is None:
        return {}
    return {k: int(getattr(u, k, 0) or 0) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def _unwrap_json(text: str) -> Any:
    """Some local servers put the call in the content, sometimes inside a code fence."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


class ModelChooser:
    name = "model"

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, max_tokens_budget: int | None = None, temperature: float = 0.0):
        env = os.environ.get
        self.model = model or env("REPAIR_AGENT_MODEL") or env("OPENAI_MODEL")
        if not self.model:
            raise ValueError("no model name: pass --model or set REPAIR_AGENT_MODEL (or OPENAI_MODEL)")
        self.base_url = base_url or env("REPAIR_AGENT_MODEL_BASE_URL") or env("OPENAI_BASE_URL")
        # Local servers ignore the key, but the SDK refuses to start without one.
        key = api_key or env("REPAIR_AGENT_MODEL_API_KEY") or env("OPENAI_API_KEY") or "not-needed"
        self.timeout_s, self.max_tokens_budget, self.temperature = timeout_s, max_tokens_budget, temperature
        # max_retries=0: retrying is the controller's decision, and every attempt must be journaled.
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout_s, max_retries=0)
        self.tokens_used = 0
        self.last_usage: dict[str, int] = {}
        self.last_call: dict[str, Any] = {}

    def choose(self, view: View) -> dict[str, Any]:
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": render_view(view)}]
        allowed = set(view.allowed_tools)
        tools = [{"type": "function", "function": s} for s in tool_schemas() if s["name"] in allowed]
        self.last_usage = {}
        self.last_call = {"model": self.model, "messages": messages, "tools": [t["function"]["name"] for t in tools],
                          "tool_choice": "required", "tool_choice_fallback": False, "raw": None, "usage": {}}
        started = time.monotonic()
        try:
            try:
                response = self._create(messages, tools, "required")
            except openai.BadRequestError as exc:
                # Older vLLM / llama.cpp builds reject "required"; "auto" is the portable fallback.
                if "tool_choice" not in f"{exc.message} {exc.body}":
                    raise
                self.last_call.update(tool_choice="auto", tool_choice_fallback=True,
                                      rejected=self._error_raw(exc))
                # The retry shares the one timeout: a step never waits longer than timeout_s.
                left = max(0.1, self.timeout_s - (time.monotonic() - started))
                response = self._create(messages, tools, "auto", timeout=left)
        except openai.APIError as exc:
            self.last_call.update(raw=self._error_raw(exc), latency_s=round(time.monotonic() - started, 3))
            raise ChooserUnavailable(f"model endpoint failed: {exc}", raw=self.last_call["raw"]) from None
        raw = response.model_dump(mode="json")
        self.last_usage = usage = _usage(response)
        self.tokens_used += usage.get("total_tokens", 0)
        self.last_call.update(raw=raw, usage=usage, latency_s=round(time.monotonic() - started, 3))
        if self.max_tokens_budget is not None and self.tokens_used > self.max_tokens_budget:
            raise TokenBudgetExceeded(f"token budget spent: {self.tokens_used} > {self.max_tokens_budget}",
                                      raw=raw, usage=usage)
        return self._proposal(response, raw, usage)

    def _create(self, messages: list[dict], tools: list[dict], tool_choice: str, timeout: float | None = None) -> Any:
        return self.client.chat.completions.create(model=self.model, messages=messages, tools=tools,
                                                   tool_choice=tool_choice, temperature=self.temperature,
                                                   timeout=timeout or self.timeout_s)

    @staticmethod
    def _error_raw(exc: openai.APIError) -> dict[str, Any]:
        if isinstance(exc, openai.APIStatusError):
            return {"type": type(exc).__name__, "status_code": exc.status_code, "body": exc.body}
        return {"type": type(exc).__name__, "status_code": None, "message": str(exc)}

    @staticmethod
    def _proposal(response: Any, raw: dict, usage: dict) -> dict[str, Any]:
        if not response.choices:
            raise MalformedReply("reply has no choices", raw=raw, usage=usage)
        message = response.choices[0].message
        calls = message.tool_calls or []
        if len(calls) > 1:
            raise MalformedReply(f"{len(calls)} tool calls in one reply; exactly one action per step",
                                 raw=raw, usage=usage)
        if not calls:
            parsed = _unwrap_json(message.content or "")
            if isinstance(parsed, dict) and isinstance(parsed.get("tool"), str):
                return parsed
            raise MalformedReply("reply has no tool call", raw=raw, usage=usage)
        fn = calls[0].function
        try:
            args = json.loads(fn.arguments) if (fn.arguments or "").strip() else {}
        except json.JSONDecodeError as exc:
            raise MalformedReply(f"tool call arguments are not JSON: {exc}", raw=raw, usage=usage) from None
        if not isinstance(args, dict):
            raise MalformedReply("tool call arguments are not a JSON object", raw=raw, usage=usage)
        # The function name decides the tool; a stray "tool" argument cannot override it.
        return {"tool": fn.name, **{k: v for k, v in args.items() if k != "tool"}}
