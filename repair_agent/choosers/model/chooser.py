"""ModelChooser: one step = one choose() against any OpenAI-compatible Chat Completions endpoint.

The prompt is prompt.py's, the reply is read by replies.py, each request goes through
transport.py's retries. Within one step a reply whose call cannot be used (cut off, not JSON, no
call, schema-invalid arguments) is re-asked at most `max_reasks` times with the exact error; what
still fails goes to the controller, whose validation is unchanged (invalid_action). Every request
and re-ask is in the step's ModelCall, which the controller journals."""
from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Literal

from pydantic import BaseModel

from ...untrusted import redaction
from ...loop.actions import InvalidAction, parse_action, tool_schemas
from ...loop.state import View
from ..base import ChooserDescription, ChooserStep, ChooserUnavailable, MalformedReply, ModelDescription, Usage
from ..models_file import ModelSettings, api_key_from_env
from .prompt import CHECK_PROMPT, SYSTEM_PROMPT, render_view
from .records import ModelCall, Reask, counted
from .replies import Unusable, call_format, not_executed_note, read_reply, reask_messages
from .transport import EndpointFailed, Transport

CHECK_CALL = {"tool": "search", "query": "models-check"}


class ModelCheck(BaseModel):
    """What `repair-agent models check` found for one model (printed, or --json)."""
    name: str
    model: str
    endpoint: str
    ok: bool
    problem: str | None = None
    call_format: Literal["tool_calls", "text"] | None = None  # how the call came: natively or written as text
    usage_reported: bool = False
    requests: int = 0
    reasks: int = 0
    adjusted: list[str] = []  # parameters the server rejected and the chooser adjusted
    latency_s: float = 0.0


class ModelChooser:
    name = "model"

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None, *,
                 name: str | None = None, lock_dir: os.PathLike | None = None,
                 settings: ModelSettings | None = None, models_file: str | None = None, **options: Any):
        """Ad hoc (`model`, `base_url` and any ModelSettings field as a keyword), or from a models
        file's entry (`settings`, `name`, the file it came from). Missing model and base URL come
        from the environment."""
        env = os.environ.get
        fields = settings.model_dump() if settings is not None else {}
        fields.update({k: v for k, v in {"model": model, "base_url": base_url, **options}.items() if v is not None})
        fields.setdefault("model", env("REPAIR_AGENT_MODEL") or env("OPENAI_MODEL"))
        if not fields["model"]:
            raise ValueError("no model name: pass --model or set REPAIR_AGENT_MODEL (or OPENAI_MODEL)")
        fields["base_url"] = fields.get("base_url") or env("REPAIR_AGENT_MODEL_BASE_URL") or env("OPENAI_BASE_URL")
        self.settings = s = ModelSettings(**fields)
        self.model_name, self.models_file = name, models_file
        if name:
            self.name = f"model:{name}"
        self.model = s.model
        # Local servers ignore the key, but the SDK refuses to start without one.
        real_key = api_key or api_key_from_env(s, name) or env("REPAIR_AGENT_MODEL_API_KEY") or env("OPENAI_API_KEY")
        # From here on no record and no printed line carries the key or the URL's credentials.
        redaction.register(real_key)
        redaction.register_variable(s.api_key_env)
        redaction.register_url(s.base_url)
        self.transport = Transport(s, real_key or "not-needed", name or f"{s.model}@{s.base_url}", lock_dir)
        self.tokens_used = 0
        self._notes: list[str] = []   # what the next prompt says about this step's reply
        self._deadline: float | None = None

    def describe(self) -> ChooserDescription:
        """For run.json, the reports and the sweep: the model, its endpoint and its parameters (the API
        key's variable name, never the key), and whether it wants the mutation analysis."""
        s = self.settings
        model = ModelDescription(
            name=self.model_name, model=s.model, endpoint=self.transport.endpoint, api_key_env=s.api_key_env,
            parameters=s.model_dump(mode="json", exclude={"model", "base_url", "api_key_env", "price_per_mtok_in",
                                                          "price_per_mtok_out"}),
            price_per_mtok_in=s.price_per_mtok_in, price_per_mtok_out=s.price_per_mtok_out)
        return ChooserDescription(name=self.name, model=model, models_file=self.models_file,
                                  mutation_analysis=s.mutation_analysis)

    def set_deadline(self, deadline: float) -> None:
        """The controller's bound for the coming choose() (time.monotonic()): retries stay inside it."""
        self._deadline = deadline

    # -- one step ----------------------------------------------------------------------------
    def choose(self, view: View) -> ChooserStep:
        started = time.monotonic()
        deadline = self._deadline if self._deadline is not None else math.inf
        if self.settings.step_timeout_s is not None:
            deadline = min(deadline, started + self.settings.step_timeout_s)
        self._deadline = None
        notes, self._notes = self._notes, []
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": render_view(view, notes)}]
        allowed = set(view.allowed_tools)
        tools = [{"type": "function", "function": t} for t in tool_schemas() if t["name"] in allowed]
        call = ModelCall(model=self.model, name=self.model_name, endpoint=self.transport.endpoint, messages=messages,
                         prompt_chars=sum(len(m["content"]) for m in messages),
                         tools=[t["function"]["name"] for t in tools], tool_choice=self.transport.tool_choice)
        try:
            proposal = self._exchange(messages, tools, deadline, call)
        except (ChooserUnavailable, MalformedReply) as exc:
            exc.call = call.model_copy(update={"latency_s": round(time.monotonic() - started, 3)})
            raise
        call.latency_s = round(time.monotonic() - started, 3)
        return ChooserStep(proposal=proposal, usage=call.usage, call=call)

    def _exchange(self, messages: list[dict], tools: list[dict], deadline: float, call: ModelCall) -> dict[str, Any]:
        """Ask, and re-ask while the reply cannot be used; `call` records every request and re-ask."""
        conversation = list(messages)
        for asked in range(self.settings.max_reasks + 1):
            body = self._request(conversation, tools, deadline, call, reask=asked > 0)
            problem: str | None = None
            proposal: dict[str, Any] | None = None
            try:
                reading = read_reply(body)
            except Unusable as exc:
                if not exc.reaskable:
                    raise MalformedReply(str(exc), raw=body, usage=call.usage) from None
                problem = str(exc)
            else:
                proposal = reading.proposal
                try:
                    parse_action(proposal)  # the controller's own schema; it validates again
                except InvalidAction as exc:
                    problem = f"the call does not match the tool's schema: {exc}"
            if problem is None and proposal is not None:
                if reading.not_executed:
                    call.not_executed = reading.not_executed
                    self._notes.append(not_executed_note(proposal, reading.not_executed))
                return proposal
            if asked == self.settings.max_reasks or time.monotonic() >= deadline:
                if proposal is not None:
                    return proposal  # schema-invalid: the controller decides (invalid_action), as always
                raise MalformedReply(problem or "unusable reply", raw=body, usage=call.usage)
            again = reask_messages(body, problem or "unusable reply")
            call.reasks.append(Reask(after_request=len(call.requests), error=problem or "", raw=body, messages=again))
            conversation += again
        raise AssertionError("unreachable")

    def _request(self, conversation: list[dict], tools: list[dict], deadline: float, call: ModelCall,
                 reask: bool) -> dict:
        """One answer through the transport, its attempts and usage added to the step's record."""
        try:
            exchange = self.transport.request(conversation, tools, deadline, first=len(call.requests) + 1,
                                              reask=reask)
        except EndpointFailed as exc:
            call.requests += exc.requests
            self._note_fallback(call)
            call.raw = {**exc.raw, "requests": len(call.requests)}
            raise ChooserUnavailable(str(exc), raw=call.raw, usage=call.usage,
                                     infrastructure=exc.infrastructure) from None
        call.requests += exchange.requests
        self._note_fallback(call)
        call.raw = exchange.body
        before = call.usage.total_tokens
        call.usage = counted(call.usage, exchange.body)
        if before is not None and call.usage.total_tokens is not None:
            self.tokens_used += call.usage.total_tokens - before
        return exchange.body

    def _note_fallback(self, call: ModelCall) -> None:
        if (rejected := self.transport.fallback_taken()) is not None:
            call.tool_choice, call.tool_choice_fallback, call.rejected = "auto", True, rejected

    # -- `repair-agent models check` --------------------------------------------------------------
    def check(self, timeout_s: float = 120.0) -> ModelCheck:
        """One request as a step makes it (the system prompt, every tool, the same retries, parameter
        adjustments and reply reading) asking for a known call: whether this model, on this server,
        can drive a run, and how (native tool calls or a call written as text; usage reported)."""
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": CHECK_PROMPT}]
        tools = [{"type": "function", "function": t} for t in tool_schemas()]
        started = time.monotonic()
        call = ModelCall(model=self.model, name=self.model_name, messages=messages,
                         tools=[t["function"]["name"] for t in tools], tool_choice=self.transport.tool_choice)
        problem, proposal = None, None
        try:
            proposal = self._exchange(messages, tools, started + timeout_s, call)
        except (ChooserUnavailable, MalformedReply) as exc:
            problem = str(exc)
        if problem is None and proposal != CHECK_CALL:
            problem = f"the model answered {json.dumps(proposal)[:300]} instead of {json.dumps(CHECK_CALL)}"
        usage: Usage = call.usage
        return ModelCheck(
            name=self.model_name or self.model, model=self.model, endpoint=self.transport.endpoint,
            ok=problem is None, problem=problem,
            call_format=None if proposal is None else call_format(call.raw),
            usage_reported=usage.requests > 0 and usage.total_tokens is not None,
            requests=len(call.requests), reasks=len(call.reasks),
            adjusted=[r.adjusted for r in call.requests if r.adjusted],
            latency_s=round(time.monotonic() - started, 3))
