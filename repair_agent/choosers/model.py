"""ModelChooser: one step = one choose() against any OpenAI-compatible Chat Completions endpoint.

Kept in one module: the prompt, the retry and re-ask rules and the usage accounting of one step
share the step's state and time limit; the models file and the concurrency slots live apart.

The prompt is rendered from the View (plus, at most, a note about the previous reply), so every
step can be replayed from the journal: the files read, the model's own notes and the warnings
about run-ending actions are all derived from the View's evidence. Inside one step the chooser talks to the server the way a
careful harness does, and records every request in `last_call` (journaled by the controller):

- transient errors (408/409/429/5xx, connection reset, read timeout) are retried with bounded
  exponential backoff, honouring Retry-After / retry-after-ms, within the step's time;
- a 400 that rejects exactly `temperature`, the output limit, `parallel_tool_calls` or
  `tool_choice: "required"` is retried once with that parameter adjusted (remembered afterwards);
- quota, authentication and other 4xx errors end the step at once (ChooserUnavailable);
- a reply whose call cannot be used (cut off, not JSON, no call, schema-invalid arguments) is
  re-asked at most `max_reasks` times with the exact error; what still fails goes to the
  controller, whose validation is unchanged (invalid_action);
- arguments as a JSON object, calls written in the text (after a <think> block: ```json or
  ```python fences, <tool_call> tags, Qwen3-coder <function=…> XML, JSON after prose,
  {"name", "arguments"|"parameters"}), several calls in one reply (the first acts, the rest are
  journaled as not executed and the next prompt says so) and refusals (a `stop`) are accepted.

The reply is returned as a plain dict; the controller validates it like any proposal.
"""
from __future__ import annotations

import email.utils
import json
import math
import os
import random
import re
import time
from typing import Any, Literal

import openai
from pydantic import BaseModel

from .. import redaction
from ..actions import (CHECK_TOOLS, REREAD_WINDOW, REREADABLE_TOOLS, InvalidAction, ReadFile, parse_action,
                       tool_schemas)
from ..state import STALE_SUFFIX, Evidence, View
from .base import ChooserUnavailable, MalformedReply
from .models_file import ModelSettings, api_key_from_env
from .slots import EndpointSlots, SlotTimeout

# Caps on every part of the prompt (characters). The goal and constraints are never dropped,
# only cut at a length no real manifest reaches.
GOAL_CAP = 4000
SIGNATURE_CAP = 1000
ITEM_CAP = 240          # one target test, acceptance line, constraint, glob, unknown
CONDITION_CAP = 400     # one condition's description: the one place an acceptance condition is stated
LIST_MAX = 12           # items per list
GRANTS_MAX = 5
SECTION_CAP = 3000      # target tests + acceptance + constraints; authorization with its grants
SMALL_SECTION_CAP = 1500  # conditions; unknowns
DIFF_CAP = 8000         # the current diff
LOCALIZATION_CAP = 1200  # the spectrum's most suspicious lines
ACTION_CAP = 400        # an evidence item's action (a patch is in the current diff anyway)
SUMMARY_CAP = 300
RECENT_OUTPUT_CAPS = (3500, 1200, 1000, 800, 800)  # newest first: the newest evidence most fully
ERROR_CAPS = (1500, 500, 500, 300, 300)
RECENT_FULL = len(RECENT_OUTPUT_CAPS)
OLDER_MAX = 40          # older items as one line each; beyond that only a count
OLDER_CAP = 5000
FILE_CAP = 12_000       # one file's latest read, in "Files you have read"
FILES_CAP = 24_000      # all of them; the newest reads first
NOTE_CAP = 1500         # what the prompt says about the previous reply
YOUR_NOTES_MAX = 12     # the model's own notes, newest last
YOUR_NOTES_CAP = 2000
USER_PROMPT_CAP = 48_000  # the whole user message, whatever the parts add up to
REASK_ECHO_CAP = 2000   # the unusable reply, shown back to the model when re-asking

SYSTEM_PROMPT = """\
You are the chooser of a code-repair loop. Each turn you propose exactly ONE tool call; \
the controller validates and executes it and shows you the result next turn.
- There is no shell: use only the tools offered, one call per reply.
- Tests are run by a protected verifier (run_target_test, run_full_suite, check_diff); \
you never see or touch its configuration.
- To edit, prefer replace_in_file {path, old, new}: `old` is exact text of the file (copy it \
from "Files you have read", without the line numbers) that occurs exactly once. apply_patch \
takes a unified diff (paths a/... and b/..., with context lines). Both apply ON TOP OF the \
current diff shown to you: the working tree already contains it. To undo a change, edit it back.
- read_file shows a whole file or, with start_line/end_line, a part of it; line_numbers=true \
prefixes each line with its number. "Files you have read" keeps the latest read of each file \
until the diff changes.
- Every call may carry a short `note` to yourself; your notes are shown back to you.
- These end the run at once (a warning in the prompt names them when they apply):
  * the same action twice in a row (repeated_action);
  * the same check on an unchanged diff: a test run repeated without a new patch in between, or \
a search or read repeated while its result is still among the last five, gives no new evidence \
(no_new_evidence);
  * a patch touching tests, test configuration, conftest.py or anything outside the writable \
globs (authorization_required);
  * a call that does not match the tool's schema (invalid_action).
- The loop stops by itself when all conditions are satisfied; you do not declare success.
- When you are stuck or lack authorization, call `stop` with a summary of what you found \
and what a person should do next."""

CHECK_CALL = {"tool": "search", "query": "models-check"}
CHECK_PROMPT = ("This is a check of the connection, not a repair. Call the `search` tool with the query "
                "\"models-check\" and nothing else.")


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


RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
ADJUSTABLE = ("temperature", "max_tokens", "max_completion_tokens", "parallel_tool_calls")
NOT_INFRASTRUCTURE = ("context_length_exceeded",)  # the model's own limit: another attempt fails alike


def _cap(text: str, limit: int) -> str:
    """Keep head and tail: test output usually matters at both ends."""
    text = str(text)
    if len(text) <= limit:
        return text
    half = max(1, (limit - 40) // 2)
    return f"{text[:half]}\n... [{len(text) - 2 * half} chars omitted] ...\n{text[-half:]}"


def _bullets(items: Any, limit: int = LIST_MAX) -> str:
    items = list(items)
    lines = [f"- {_cap(i, ITEM_CAP)}" for i in items[:limit]]
    if len(items) > limit:
        lines.append(f"- ... and {len(items) - limit} more")
    return "\n".join(lines) or "- (none)"


def _globs(items: Any) -> str:
    items = list(items)
    shown = ", ".join(_cap(i, ITEM_CAP) for i in items[:LIST_MAX])
    return (shown + (f", ... and {len(items) - LIST_MAX} more" if len(items) > LIST_MAX else "")) or "(nothing)"


def _render_evidence(ev: Evidence, age: int, in_files: frozenset[str] = frozenset()) -> str:
    parts = [f"### {ev.id} (step {ev.step}) {ev.tool} [{ev.status}]", f"action: {_cap(ev.action.canonical(), ACTION_CAP)}",
             f"summary: {_cap(ev.summary, SUMMARY_CAP)}"]
    if ev.id in in_files:
        parts.append("output: (under \"Files you have read\")")
    elif ev.output:
        parts.append("output:\n" + _cap(ev.output, RECENT_OUTPUT_CAPS[age]))
    if ev.localization is not None:
        parts.append(_cap(ev.localization.render(), LOCALIZATION_CAP))
    if ev.raw_error:
        parts.append("error:\n" + _cap(ev.raw_error, ERROR_CAPS[age]))
    return "\n".join(parts)


_CAPPED_TAIL = re.compile(r"\n\[(?:output|observation) capped[^\n]*\]\s*$")


def _read_lines(ev: Evidence, read: ReadFile) -> tuple[str, int, int]:
    """A read's output as numbered lines, its first and last line number."""
    output = _CAPPED_TAIL.sub("", ev.output) if ev.capped else ev.output
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = read.start_line or 1
    if not read.line_numbers:
        lines = [f"{n:6d}\t{line}" for n, line in enumerate(lines, first)]
    return "\n".join(lines), first, first + len(lines) - 1


def files_read(view: View, budget: int = FILES_CAP) -> tuple[str, frozenset[str]]:
    """"Files you have read": the latest read of each file (each line range) on the current diff,
    with line numbers, newest first, capped per file and in all; and the evidence ids it shows."""
    latest: dict[tuple, tuple[Evidence, ReadFile]] = {}
    for ev in view.evidence:
        read = ev.action
        if not isinstance(read, ReadFile) or ev.status != "ok" or ev.diff_sha256 != view.current_diff_sha256:
            continue
        key = (read.path, read.start_line, read.end_line)
        latest.pop(key, None)  # re-inserted: the newest read of a range comes last
        latest[key] = (ev, read)
    parts, shown, left = [], set(), min(budget, FILES_CAP)
    for ev, read in reversed(latest.values()):
        text, first, last = _read_lines(ev, read)
        head = f"## {read.path} (lines {first}-{last}; {ev.id}, step {ev.step})"
        if left < 200:
            parts.append(f"{head}: no longer shown here; read it again if you need it")
            continue
        cap = min(FILE_CAP, left)
        if len(text) > cap:
            cut = text.rfind("\n", 0, cap)
            kept = text[:cut if cut > 0 else cap]
            text = kept + (f"\n[... lines {first + kept.count(chr(10)) + 1}-{last} not shown: "
                           "read_file with start_line/end_line shows them]")
        parts.append(f"{head}\n{text}")
        shown.add(ev.id)
        left -= len(text)
    if not parts:
        return "", frozenset()
    return ("# Files you have read (current content on the current diff, newest first)\n"
            + "\n\n".join(parts)), frozenset(shown)


def render_view(view: View, notes: list[str] | tuple[str, ...] = ()) -> str:
    """The user message. Goal, constraints and authorization come first; every part is capped."""
    g, a = view.goal, view.authorization
    conds = "\n".join(f"- [{'satisfied' if c.satisfied else 'unsatisfied'}] {c.name}: {_cap(c.description, CONDITION_CAP)}"
                      + (f" (evidence {c.evidence})" if c.evidence else "") + (" (stale)" if c.stale else "")
                      for c in view.conditions[:LIST_MAX])
    # Each acceptance condition is stated once, under Conditions with its status: the goal's list
    # and the unknowns repeat only what is not a condition.
    described = {c.description for c in view.conditions}
    rest = [x for x in g.acceptance if x not in described]
    acceptance = ("the conditions below" + (" and:\n" + _bullets(rest) if rest else "")) if g.acceptance \
        else "\n" + _bullets(())
    unknowns = [u for u in view.unknowns if u.removesuffix(STALE_SUFFIX) not in described]
    grants = "".join(f"Granted by a person ({_cap(x.who, 60)}): {_globs(x.allow)} — {_cap(x.reason, ITEM_CAP)}\n"
                     for x in a.grants[-GRANTS_MAX:])
    out = [
        f"# Goal ({_cap(g.scenario, 100)})\n{_cap(g.text, GOAL_CAP)}\n\nFailure signature: "
        f"{_cap(g.failure_signature, SIGNATURE_CAP)}",
        _cap(f"Target tests:\n{_bullets(g.target_tests)}\nAcceptance: {acceptance}\n"
             f"Constraints:\n{_bullets(g.constraints)}", SECTION_CAP),
        _cap(f"# Authorization\nWritable: {_globs(a.writable)}\nProtected (never edit): {_globs(a.protected)}\n"
             + grants + f"Network: {'yes' if a.network else 'no'}. Release always needs a person.", SECTION_CAP),
        _cap(f"# Conditions: U = {view.u} unsatisfied\n{conds or '- (none)'}", SMALL_SECTION_CAP),
        _cap(f"# Unknowns\n{_bullets(unknowns)}", SMALL_SECTION_CAP),
        f"# Budget\nStep {view.step}; steps left: {view.steps_left} "
        f"(exploration left: {view.exploration_left})\nAllowed tools: {', '.join(view.allowed_tools[:LIST_MAX])}",
        "# Current diff (already applied to the working tree)\n"
        + (f"```diff\n{_cap(view.current_diff, DIFF_CAP)}\n```" if view.current_diff else "(no changes yet)"),
    ]
    tail = []
    if your_notes := notes_section(view):
        tail.append(your_notes)
    if notes:
        tail.append("# About your previous reply\n" + _cap("\n".join(notes), NOTE_CAP))
    if warnings := run_ending_warnings(view):
        tail.append(warnings)
    tail.append("Propose exactly one tool call now.")
    # The files take what the other parts leave of the whole message (at most FILES_CAP).
    budget = FILES_CAP
    for _ in range(2):
        files, in_files = files_read(view, budget)
        text = "\n\n".join([*out, *([files] if files else []), _render_evidence_section(view, in_files), *tail])
        if len(text) <= USER_PROMPT_CAP:
            return text
        budget = max(0, budget - (len(text) - USER_PROMPT_CAP) - 100)
    return _cap(text, USER_PROMPT_CAP)


def _render_evidence_section(view: View, in_files: frozenset[str]) -> str:
    older, recent = view.evidence[:-RECENT_FULL], view.evidence[-RECENT_FULL:]
    ev_lines = [f"# Evidence ({len(view.evidence)} items, oldest first)"]
    if len(older) > OLDER_MAX:
        ev_lines.append(f"({len(older) - OLDER_MAX} earlier items omitted)")
    if older:
        ev_lines.append(_cap("\n".join(f"- {e.id} (step {e.step}) {e.tool} [{e.status}]: {_cap(e.summary, SUMMARY_CAP)}"
                                       for e in older[-OLDER_MAX:]), OLDER_CAP))
    ev_lines += [_render_evidence(e, len(recent) - 1 - i, in_files) for i, e in enumerate(recent)] or ["(none yet)"]
    return "\n\n".join(ev_lines)


def notes_section(view: View) -> str:
    """"Your notes": the `note` of each earlier call, newest last (the controller keeps it with the
    observation, so it is in the View)."""
    notes = [f"- step {e.step} ({e.tool}): {_cap(e.note, 300)}" for e in view.evidence if e.note is not None]
    if not notes:
        return ""
    return _cap("# Your notes (from your earlier calls)\n" + "\n".join(notes[-YOUR_NOTES_MAX:]), YOUR_NOTES_CAP)


def run_ending_warnings(view: View) -> str:
    """What the next action must not be: the controller's repeat and progress rules, applied to
    what this View shows, so the model is told before it ends the run, not after."""
    lines = []
    if view.evidence:
        last = view.evidence[-1]
        lines.append(f"- the same action as your last one ({_cap(last.action.canonical(), 200)}): repeated_action")
    ran = dict.fromkeys(e.tool for e in view.evidence
                        if e.tool in CHECK_TOOLS and e.diff_sha256 == view.current_diff_sha256)
    if ran:
        lines.append(f"- {', '.join(ran)} again before the diff changes: no_new_evidence (it already ran on this "
                     "diff; its result is above)")
    recent_reads = dict.fromkeys(e.action.canonical() for e in view.evidence[-REREAD_WINDOW:]
                                 if e.tool in REREADABLE_TOOLS and e.diff_sha256 == view.current_diff_sha256)
    if recent_reads:
        lines.append(f"- the same read or search as one of the last {REREAD_WINDOW}, unchanged diff: no_new_evidence ("
                     + _cap("; ".join(recent_reads), 600) + ")")
    return ("# Warning: these next actions would END the run\n" + "\n".join(lines)) if lines else ""


# --------------------------------------------------------------------------- reading replies
class _Unusable(Exception):
    """A reply the model could fix if told why (re-asked), or, out of re-asks, a MalformedReply."""

    def __init__(self, message: str, reaskable: bool = True):
        super().__init__(message)
        self.reaskable = reaskable


_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCE = re.compile(r"```[ \t]*[\w-]*[ \t]*\n(.*?)```", re.S)  # ```json, ```python, ```tool_call, bare
_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S)
# Qwen3-coder's call format, when no tool parser reads it: <function=NAME><parameter=KEY>VALUE</parameter>…
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|$)", re.S)
_PARAMETER_TAG = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>", re.S)


def _text_of(content: Any) -> str:
    """`content` as text: a string, or a list of parts (some servers) whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _loads_args(args: Any, cut_off: bool) -> dict:
    if isinstance(args, dict):  # llama.cpp builds, Ollama and some vLLM parsers send an object
        return args
    if args is None or isinstance(args, str) and not args.strip():
        return {}
    if not isinstance(args, str):
        raise _Unusable(f"tool call arguments are a JSON {type(args).__name__}, not an object")
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError as exc:
        hint = " (the reply was cut off at the output limit: finish_reason=length)" if cut_off else ""
        raise _Unusable(f"tool call arguments are not JSON: {exc}{hint}") from None
    if not isinstance(parsed, dict):
        raise _Unusable("tool call arguments are not a JSON object")
    return parsed


def _from_shape(obj: Any, cut_off: bool = False) -> dict | None:
    """One call in any of the shapes servers and templates use, as {"tool": name, **arguments}."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if isinstance(name, str) and name:
        args = obj.get("arguments", obj.get("parameters"))
        return {"tool": name, **{k: v for k, v in _loads_args(args, cut_off).items() if k != "tool"}}
    if isinstance(obj.get("tool"), str):  # the flat shape {"tool": ..., field: ...}
        return dict(obj)
    return None


def _without_thinking(text: str) -> str:
    """The reply after the model's reasoning: <think>…</think> blocks removed, and everything up to
    a lone </think> (servers that strip the opening tag)."""
    text = _THINKING.sub("", text)
    return text.rsplit("</think>", 1)[-1] if "</think>" in text else text


def _typed(tool: str, key: str, value: str) -> Any:
    """An XML parameter's text as the tool's schema types it: integers and booleans decoded, text
    (a diff, a query) kept exactly as written."""
    schema = next((t["parameters"]["properties"].get(key) for t in tool_schemas() if t["name"] == tool), None) or {}
    types = {schema.get("type")} | {alt.get("type") for alt in schema.get("anyOf", [])}
    if "string" in types or not types & {"integer", "boolean", "number"}:
        return value
    try:
        return json.loads(value.strip())
    except json.JSONDecodeError:
        return value  # the schema check says what is wrong with it


def _function_tags(text: str) -> list[dict]:
    return [{"tool": name, **{k: _typed(name, k, v) for k, v in _PARAMETER_TAG.findall(body)}}
            for name, body in _FUNCTION_TAG.findall(text)]


def _python_call(text: str) -> dict | None:
    """`search(query="x")` in a ```python block: a call of a tool's name with literal keywords."""
    import ast

    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
        return None
    try:
        args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    return {"tool": node.func.id, **args}


def _json_after_prose(text: str) -> list[Any]:
    """The first JSON object that starts a line after some prose ("I'll search first.\n{…}")."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^[ \t]*([{\[])", text, re.M):
        try:
            return [decoder.raw_decode(text, match.start(1))[0]]
        except json.JSONDecodeError:
            continue
    return []


def _with_final_newline(proposal: dict) -> dict:
    """A diff whose last line lost its newline (templates and XML parameters strip it) is corrupt
    to git; the newline is the one thing the model cannot have meant otherwise."""
    diff = proposal.get("diff")
    if proposal.get("tool") == "apply_patch" and isinstance(diff, str) and diff and not diff.endswith("\n"):
        return {**proposal, "diff": diff + "\n"}
    return proposal


def _calls_in_text(text: str) -> list[dict]:
    """Calls written in the content, after any <think> block: Qwen3-coder's <function=…> tags,
    JSON inside <tool_call> tags or a fence (```json, ```python…), the whole text (one object, or a
    list as Mistral's [TOOL_CALLS] emits), JSON after a line of prose, or a Python-style call."""
    text = _without_thinking(text).strip()
    if found := _function_tags(text):
        return found
    chunks = _TOOL_CALL_TAG.findall(text) or _FENCE.findall(text) or [text.removeprefix("[TOOL_CALLS]").strip()]
    calls, problems = [], []
    parsed_chunks = []
    for chunk in chunks:
        try:
            parsed_chunks.append(json.loads(chunk))
        except json.JSONDecodeError:
            if (call := _python_call(chunk)) is not None:
                calls.append(call)
            else:
                parsed_chunks += _json_after_prose(chunk)
    for parsed in parsed_chunks:
        for item in parsed if isinstance(parsed, list) else [parsed]:
            try:
                found_call = _from_shape(item)
            except _Unusable as exc:  # the right shape with unusable arguments: say why
                problems.append(exc)
                continue
            if found_call is not None:
                calls.append(found_call)
    if not calls and problems:
        raise problems[0]
    return calls


def _error_info(exc: BaseException) -> dict[str, Any]:
    """A journal-friendly description of a failed request, the server's body verbatim."""
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        try:
            text = exc.response.text
        except Exception:  # a body that could not be read: the SDK's own reading of it stays
            text = None
        return {"type": type(exc).__name__, "status_code": exc.status_code, "body": exc.body,
                "response_text": _cap(text, 20_000) if text is not None else None,
                "headers": {k: headers[k] for k in ("retry-after", "retry-after-ms", "x-request-id") if k in headers}}
    return {"type": type(exc).__name__, "status_code": None, "message": str(exc)}


def _error_field(body: Any, field: str) -> str | None:
    err = body.get("error", body) if isinstance(body, dict) else None
    value = err.get(field) if isinstance(err, dict) else None
    return value if isinstance(value, str) else None


def _describe(exc: openai.APIError, code: str | None) -> str:
    """`HTTP 429 insufficient_quota: You exceeded …`: the status and the server's code up front."""
    if isinstance(exc, openai.APIStatusError):
        message = _error_field(exc.body, "message") or (exc.body if isinstance(exc.body, str) else exc.message)
        return f"HTTP {exc.status_code}{f' {code}' if code else ''}: {_cap(str(message), 500)}"
    return f"{type(exc).__name__}: {exc}"


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms (OpenAI, Azure) or Retry-After
    (seconds or an HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


# ------------------------------------------------------------------------------ the chooser
class ModelChooser:
    name = "model"

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None, *,
                 name: str | None = None, lock_dir: os.PathLike | None = None,
                 settings: ModelSettings | None = None, **options: Any):
        """Ad hoc (`model`, `base_url` and any ModelSettings field as a keyword), or from a models
        file's entry (`settings`, `name`). Missing model and base URL come from the environment."""
        env = os.environ.get
        fields = settings.model_dump() if settings is not None else {}
        fields.update({k: v for k, v in {"model": model, "base_url": base_url, **options}.items() if v is not None})
        fields.setdefault("model", env("REPAIR_AGENT_MODEL") or env("OPENAI_MODEL"))
        if not fields["model"]:
            raise ValueError("no model name: pass --model or set REPAIR_AGENT_MODEL (or OPENAI_MODEL)")
        fields["base_url"] = fields.get("base_url") or env("REPAIR_AGENT_MODEL_BASE_URL") or env("OPENAI_BASE_URL")
        self.settings = s = ModelSettings(**fields)
        self.model_name = name
        if name:
            self.name = f"model:{name}"
        self.model, self.base_url = s.model, s.base_url
        self.mutation_analysis = s.mutation_analysis
        # Local servers ignore the key, but the SDK refuses to start without one.
        real_key = api_key or api_key_from_env(s, name) or env("REPAIR_AGENT_MODEL_API_KEY") or env("OPENAI_API_KEY")
        key = real_key or "not-needed"
        # From here on no record and no printed line carries the key or the URL's credentials.
        redaction.register(real_key)
        redaction.register_variable(s.api_key_env)
        redaction.register_url(s.base_url)
        self.timeout_s = s.timeout_s
        # max_retries=0: the retries are ours, so that every attempt is journaled.
        self.client = openai.OpenAI(base_url=s.base_url, api_key=key, timeout=s.timeout_s, max_retries=0)
        self.slots = (EndpointSlots(name or f"{s.model}@{s.base_url}", s.max_concurrency, lock_dir)
                      if s.max_concurrency else None)
        # What the server taught us in earlier steps: parameters it rejects.
        self.tool_choice = "required"
        self.dropped: set[str] = set() if s.parallel_tool_calls is not None else {"parallel_tool_calls"}
        self.output_param = s.output_tokens_param
        self.tokens_used = 0
        self.last_usage: dict[str, Any] = {}
        self.last_call: dict[str, Any] = {}
        self._notes: list[str] = []
        self._deadline: float | None = None

    @property
    def temperature(self) -> float | None:
        return self.settings.temperature

    def describe_model(self) -> dict[str, Any]:
        """For run.json, the reports and the sweep: the model, its endpoint and its parameters
        (the API key's variable name, never the key)."""
        s = self.settings
        return {"name": self.model_name, "model": s.model, "endpoint": s.base_url or str(self.client.base_url),
                "api_key_env": s.api_key_env,
                "parameters": s.model_dump(mode="json", exclude={"model", "base_url", "api_key_env",
                                                                 "price_per_mtok_in", "price_per_mtok_out"}),
                "price_per_mtok_in": s.price_per_mtok_in, "price_per_mtok_out": s.price_per_mtok_out}

    def set_deadline(self, deadline: float) -> None:
        """The controller's bound for the coming choose() (time.monotonic()): retries stay inside it."""
        self._deadline = deadline

    # -- `repair-agent models check` --------------------------------------------------------------
    def check(self, timeout_s: float = 120.0) -> "ModelCheck":
        """One request as a step makes it (the system prompt, every tool, the same retries, parameter
        adjustments and reply reading) asking for a known call: whether this model, on this server,
        can drive a run, and how (native tool calls or a call written as text; usage reported)."""
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": CHECK_PROMPT}]
        tools = [{"type": "function", "function": t} for t in tool_schemas()]
        started = time.monotonic()
        call = self.last_call = {"model": self.model, "name": self.model_name, "messages": messages,
                                 "tools": [t["function"]["name"] for t in tools], "requests": [], "reasks": [],
                                 "raw": None, "usage": {}}
        self.last_usage = {}
        problem, proposal = None, None
        try:
            proposal = self._step(messages, tools, started + timeout_s, call)
        except (ChooserUnavailable, MalformedReply) as exc:
            problem = str(exc)
        choices = call["raw"].get("choices") if isinstance(call.get("raw"), dict) else None
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = first.get("message") if isinstance(first.get("message"), dict) else {}
        if problem is None and proposal != CHECK_CALL:
            problem = f"the model answered {json.dumps(proposal)[:300]} instead of {json.dumps(CHECK_CALL)}"
        return ModelCheck(
            name=self.model_name or self.model, model=self.model, endpoint=self.describe_model()["endpoint"],
            ok=problem is None, problem=problem,
            call_format=None if proposal is None else ("tool_calls" if message.get("tool_calls") else "text"),
            usage_reported=bool(self.last_usage) and self.last_usage.get("total_tokens") is not None,
            requests=len(call["requests"]), reasks=len(call["reasks"]),
            adjusted=[r["adjusted"] for r in call["requests"] if r.get("adjusted")],
            latency_s=round(time.monotonic() - started, 3))

    # -- one step ----------------------------------------------------------------------------
    def choose(self, view: View) -> dict[str, Any]:
        started = time.monotonic()
        deadline = self._deadline if self._deadline is not None else math.inf
        if self.settings.step_timeout_s is not None:
            deadline = min(deadline, started + self.settings.step_timeout_s)
        self._deadline = None
        notes, self._notes = self._notes, []
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": render_view(view, notes)}]
        allowed = set(view.allowed_tools)
        tools = [{"type": "function", "function": s} for s in tool_schemas() if s["name"] in allowed]
        self.last_usage = {}
        call = self.last_call = {
            "model": self.model, "name": self.model_name, "endpoint": self.describe_model()["endpoint"],
            "messages": messages, "prompt_chars": sum(len(m["content"]) for m in messages),
            "tools": [t["function"]["name"] for t in tools], "tool_choice": self.tool_choice,
            "tool_choice_fallback": False, "requests": [], "reasks": [], "raw": None, "usage": {}}
        try:
            return self._step(messages, tools, deadline, call)
        finally:
            call["usage"] = self.last_usage
            call["latency_s"] = round(time.monotonic() - started, 3)

    def _step(self, messages: list[dict], tools: list[dict], deadline: float, call: dict) -> dict[str, Any]:
        conversation = list(messages)
        for asked in range(self.settings.max_reasks + 1):
            body = self._request(conversation, tools, deadline, call, reask=asked > 0)
            call["raw"] = body
            problem: str | None = None
            try:
                proposal, extra = self._proposal(body)
            except _Unusable as exc:
                if not exc.reaskable:
                    raise MalformedReply(str(exc), raw=body, usage=self.last_usage) from None
                problem, proposal, extra = str(exc), None, []
            if proposal is not None:
                proposal = _with_final_newline(proposal)
                try:
                    parse_action(proposal)  # the controller's own schema; it validates again
                except InvalidAction as exc:
                    problem = f"the call does not match the tool's schema: {exc}"
            if problem is None:
                if extra:
                    self._not_executed(call, proposal, extra)
                return proposal
            if asked == self.settings.max_reasks or time.monotonic() >= deadline:
                if proposal is not None:
                    return proposal  # schema-invalid: the controller decides (invalid_action), as always
                raise MalformedReply(problem, raw=body, usage=self.last_usage)
            echo, ask = self._reask_messages(body, problem)
            call["reasks"].append({"after_request": len(call["requests"]), "error": problem, "raw": body,
                                   "messages": [echo, ask]})
            conversation += [echo, ask]
        raise AssertionError("unreachable")

    def _proposal(self, body: Any) -> tuple[dict | None, list]:
        """The first call of the reply (or a stop for a refusal), and any further calls."""
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise _Unusable("reply has no choices", reaskable=False)
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        cut_off = choice.get("finish_reason") == "length"
        calls = message.get("tool_calls") or ([message["function_call"]] if message.get("function_call") else [])
        if isinstance(calls, list) and calls:
            first = _from_shape(calls[0], cut_off)
            if first is None:
                raise _Unusable("the tool call has no function name")
            return first, calls[1:]
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            # The model declines: its decision to hand over, with its words kept.
            return {"tool": "stop", "reason": _cap(f"the model refused: {refusal.strip()}", 1900),
                    "summary": _cap(refusal.strip(), 7900)}, []
        text = _text_of(message.get("content"))
        found = _calls_in_text(text)
        if not found:
            hint = " (the reply was cut off at the output limit: finish_reason=length)" if cut_off else ""
            raise _Unusable(f"reply has no tool call{hint}")
        return found[0], found[1:]

    def _not_executed(self, call: dict, proposal: dict, extra: list) -> None:
        call["not_executed"] = extra
        shown = json.dumps(extra, ensure_ascii=False)
        self._notes.append(f"Your previous reply contained {1 + len(extra)} tool calls. Only the first "
                           f"({proposal.get('tool')}) was executed; these were NOT executed: {_cap(shown, 800)}. "
                           "Send exactly one tool call per reply.")

    def _reask_messages(self, body: dict, problem: str) -> tuple[dict, dict]:
        """The unusable reply as plain text (portable across servers' templates) and the error."""
        try:
            message = body["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            message = {}
        shown = {k: message.get(k) for k in ("content", "tool_calls") if message.get(k)}
        echo = {"role": "assistant", "content": _cap(json.dumps(shown, ensure_ascii=False), REASK_ECHO_CAP)}
        ask = {"role": "user", "content": f"That reply could not be used and nothing was executed: {_cap(problem, 1500)}\n"
                                          "Reply with exactly one corrected tool call (keep it short enough to "
                                          "fit: a smaller patch if it was cut off)."}
        return echo, ask

    # -- one request, with its retries ---------------------------------------------------------
    def _params(self) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = json.loads(json.dumps(s.extra_body))  # a copy: the settings stay frozen
        if s.temperature is not None and "temperature" not in self.dropped:
            params["temperature"] = s.temperature
        if s.max_output_tokens is not None and self.output_param not in self.dropped:
            params[self.output_param] = s.max_output_tokens
        if "parallel_tool_calls" not in self.dropped:
            params["parallel_tool_calls"] = s.parallel_tool_calls
        return params

    def _request(self, conversation: list[dict], tools: list[dict], deadline: float, call: dict,
                 reask: bool) -> dict:
        s = self.settings
        retries = 0
        errors: list[dict] = []
        while True:
            params, entry = self._params(), {"n": len(call["requests"]) + 1, "reask": reask}
            entry.update(tool_choice=self.tool_choice, params=params)
            call["requests"].append(entry)
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._unavailable("the step's time ran out before the model answered", errors, call)
            sent = time.monotonic()
            try:
                body = self._send(conversation, tools, params, min(s.timeout_s, left), deadline, entry)
            except SlotTimeout as exc:
                entry["error"] = {"type": "SlotTimeout", "message": str(exc)}
                raise self._unavailable(f"no request slot for this model within the step's time: {exc}",
                                        errors + [entry["error"]], call) from None
            except openai.APIError as exc:
                info = entry["error"] = _error_info(exc)
                entry["latency_s"] = round(time.monotonic() - sent, 3)
                errors.append(info)
                if self._adjust(exc, entry):
                    continue
                code = _error_field(getattr(exc, "body", None), "code") or _error_field(getattr(exc, "body", None), "type")
                transient = (isinstance(exc, openai.APIConnectionError)   # reset, refused, read timeout
                             or isinstance(exc, openai.APIStatusError) and exc.status_code in RETRY_STATUS
                             and code != "insufficient_quota")
                if not transient or retries >= s.max_retries:
                    why = "after %d retries" % retries if transient else "not retried"
                    raise self._unavailable(f"model endpoint failed ({why}): {_describe(exc, code)}", errors, call,
                                            infrastructure=code not in NOT_INFRASTRUCTURE) from None
                asked_wait = _retry_after(exc)
                wait = asked_wait if asked_wait is not None else \
                    min(s.retry_max_s, s.retry_base_s * 2 ** retries) * random.uniform(0.5, 1.0)
                if asked_wait is not None and asked_wait > s.retry_max_s or time.monotonic() + wait >= deadline:
                    raise self._unavailable(f"model endpoint failed: {exc}; the retry it needs (in {wait:.1f}s) "
                                            "does not fit in the step's time", errors, call) from None
                entry["retry_in_s"] = round(wait, 3)
                retries += 1
                time.sleep(wait)  # backoff before the retry; bounded by the deadline above
                continue
            entry["latency_s"] = round(time.monotonic() - sent, 3)
            self._count(body, entry)
            return body

    def _send(self, conversation: list[dict], tools: list[dict], params: dict, timeout: float, deadline: float,
              entry: dict) -> dict:
        def post() -> dict:
            response = self.client.chat.completions.with_raw_response.create(
                model=self.model, messages=conversation, tools=tools, tool_choice=self.tool_choice,
                extra_body=params, timeout=timeout)
            try:
                return json.loads(response.http_response.text)
            except json.JSONDecodeError:
                raise openai.APIResponseValidationError(response=response.http_response, body=response.http_response.text,
                                                        message="the endpoint answered 200 with a body that is not JSON") from None

        if self.slots is None:
            return post()
        with self.slots.hold(deadline) as waited:
            entry["slot_wait_s"] = round(waited, 3)
            return post()

    def _adjust(self, exc: openai.APIError, entry: dict) -> bool:
        """A 400 that rejects one optional parameter: drop (or rename) it, once, and remember."""
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
            return False
        body = exc.body
        text = f"{exc.message} {json.dumps(body) if not isinstance(body, str) else body}"
        if self.tool_choice == "required" and "tool_choice" in text:
            # Older vLLM / llama.cpp builds reject "required"; "auto" is the portable fallback.
            self.tool_choice = "auto"
            self.last_call.update(tool_choice="auto", tool_choice_fallback=True, rejected=_error_info(exc))
            entry["adjusted"] = "tool_choice: required -> auto"
            return True
        code = _error_field(body, "code") or ""
        param = _error_field(body, "param")
        if code not in ("unsupported_value", "unsupported_parameter") and "unsupported" not in text.lower():
            return False
        sent = entry.get("params", {})
        named = param if param in sent else next((p for p in ADJUSTABLE if p in sent and f"'{p}'" in text), None)
        if named is None or named in self.dropped:
            return False
        if named == "max_tokens" and "max_completion_tokens" not in self.dropped:
            # OpenAI's reasoning models: the same limit under the name they take.
            self.output_param = "max_completion_tokens"
            entry["adjusted"] = "max_tokens -> max_completion_tokens"
        else:
            entry["adjusted"] = f"{named} omitted"
        self.dropped.add(named)
        return True

    def _count(self, body: dict, entry: dict) -> None:
        """Sum this step's usage over every reply; one reply without usage makes the step's
        tokens unknown (None), never 0."""
        step = self.last_usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0}
        step["requests"] += 1
        usage = body.get("usage") if isinstance(body, dict) else None
        entry["usage"] = usage if isinstance(usage, dict) else None
        if not isinstance(usage, dict) or usage.get("prompt_tokens") is None and usage.get("total_tokens") is None:
            step.update(prompt_tokens=None, completion_tokens=None, total_tokens=None)
        elif step["total_tokens"] is not None:
            prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            total = int(usage.get("total_tokens") or prompt + completion)
            step.update(prompt_tokens=step["prompt_tokens"] + prompt,
                        completion_tokens=step["completion_tokens"] + completion,
                        total_tokens=step["total_tokens"] + total)
            self.tokens_used += total
        self.last_usage = step  # the controller counts it against the run's token budget (--max-tokens)

    def _unavailable(self, message: str, errors: list[dict], call: dict,
                     infrastructure: bool = True) -> ChooserUnavailable:
        raw = {**(errors[-1] if errors else {}), "errors": errors, "requests": len(call["requests"])}
        call["raw"] = raw
        return ChooserUnavailable(message, raw=raw, usage=self.last_usage, infrastructure=infrastructure)
