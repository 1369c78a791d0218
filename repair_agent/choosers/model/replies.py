"""Reading a model's reply: the one tool call it proposes, in whichever shape its server sends it.

Accepted: arguments as a JSON object or as JSON text; calls written in the text (after a <think>
block: ```json or ```python fences, <tool_call> tags, Qwen3-coder <function=…> XML, JSON after
prose, {"name", "arguments"|"parameters"}); several calls in one reply (the first acts, the rest
are reported as not executed); a refusal (read as a `stop` with the model's words). A reply that
cannot be used raises Unusable with the exact error, which the chooser shows the model when it
asks again."""
from __future__ import annotations

import ast
import json
import re
from typing import Any, Literal

from pydantic import BaseModel

from ...loop.actions import tool_schemas
from .prompt import cap

REASK_ECHO_CAP = 2000   # the unusable reply, shown back to the model when re-asking


class Unusable(Exception):
    """A reply the model could fix if told why (re-asked), or, out of re-asks, a malformed reply."""

    def __init__(self, message: str, reaskable: bool = True):
        super().__init__(message)
        self.reaskable = reaskable


class ReplyReading(BaseModel):
    """The call a reply proposes, as {"tool": name, **arguments}, and any further calls it made."""

    proposal: dict[str, Any]
    not_executed: list[Any] = []   # the further calls, as the server sent them: only the first acts


def read_reply(body: Any) -> ReplyReading:
    """The first call of the reply (or a stop for a refusal), and any further calls."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise Unusable("reply has no choices", reaskable=False)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    cut_off = choice.get("finish_reason") == "length"
    calls = message.get("tool_calls") or ([message["function_call"]] if message.get("function_call") else [])
    if isinstance(calls, list) and calls:
        first = _from_shape(calls[0], cut_off)
        if first is None:
            raise Unusable("the tool call has no function name")
        return ReplyReading(proposal=with_final_newline(first), not_executed=calls[1:])
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        # The model declines: its decision to hand over, with its words kept.
        return ReplyReading(proposal={"tool": "stop", "reason": cap(f"the model refused: {refusal.strip()}", 1900),
                                      "summary": cap(refusal.strip(), 7900)})
    found = _calls_in_text(_text_of(message.get("content")))
    if not found:
        hint = " (the reply was cut off at the output limit: finish_reason=length)" if cut_off else ""
        raise Unusable(f"reply has no tool call{hint}")
    return ReplyReading(proposal=with_final_newline(found[0]), not_executed=found[1:])


def call_format(body: Any) -> Literal["tool_calls", "text"] | None:
    """How the reply's call came: as the server's native tool call, or written in the text."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message") if isinstance(first.get("message"), dict) else {}
    return "tool_calls" if message.get("tool_calls") else "text"


def not_executed_note(proposal: dict[str, Any], not_executed: list[Any]) -> str:
    """What the next prompt says about a reply with several calls."""
    shown = json.dumps(not_executed, ensure_ascii=False)
    return (f"Your previous reply contained {1 + len(not_executed)} tool calls. Only the first "
            f"({proposal.get('tool')}) was executed; these were NOT executed: {cap(shown, 800)}. "
            "Send exactly one tool call per reply.")


def reask_messages(body: Any, problem: str) -> list[dict[str, Any]]:
    """The unusable reply as plain text (portable across servers' templates) and the error."""
    try:
        message = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        message = {}
    shown = {k: message.get(k) for k in ("content", "tool_calls") if isinstance(message, dict) and message.get(k)}
    echo = {"role": "assistant", "content": cap(json.dumps(shown, ensure_ascii=False), REASK_ECHO_CAP)}
    ask = {"role": "user", "content": f"That reply could not be used and nothing was executed: {cap(problem, 1500)}\n"
                                      "Reply with exactly one corrected tool call (keep it short enough to "
                                      "fit: a smaller patch if it was cut off)."}
    return [echo, ask]


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
        raise Unusable(f"tool call arguments are a JSON {type(args).__name__}, not an object")
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError as exc:
        hint = " (the reply was cut off at the output limit: finish_reason=length)" if cut_off else ""
        raise Unusable(f"tool call arguments are not JSON: {exc}{hint}") from None
    if not isinstance(parsed, dict):
        raise Unusable("tool call arguments are not a JSON object")
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


def with_final_newline(proposal: dict) -> dict:
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
            except Unusable as exc:  # the right shape with unusable arguments: say why
                problems.append(exc)
                continue
            if found_call is not None:
                calls.append(found_call)
    if not calls and problems:
        raise problems[0]
    return calls
