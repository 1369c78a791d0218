"""What one model step sent and received, as typed records: journaled with the step (the controller
keeps them as the chooser dumps them) and read back by the run's usage accounting."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ..base import Usage


class RequestError(BaseModel):
    """A failed request, journal-friendly: the server's body verbatim, the headers that matter."""

    type: str
    status_code: int | None = None
    body: Any = None
    response_text: str | None = None
    headers: dict[str, str] = {}
    message: str | None = None       # for a failure without an HTTP status (reset, timeout)


class RequestRecord(BaseModel):
    """One HTTP request of a step, retries and re-asks included."""

    n: int                                  # its number within the step, from 1
    reask: bool                             # sent after an unusable reply
    tool_choice: str
    params: dict[str, Any]                  # what was sent besides the messages and tools
    latency_s: float | None = None
    slot_wait_s: float | None = None        # waiting for a free request slot (max_concurrency)
    error: RequestError | None = None
    adjusted: str | None = None             # a parameter the server rejected, dropped or renamed for the retry
    retry_in_s: float | None = None         # the backoff before the next attempt
    usage: dict[str, Any] | None = None     # the reply's usage, as the server reported it


class Reask(BaseModel):
    """An unusable reply and what the model was told before it was asked again."""

    after_request: int
    error: str
    raw: Any
    messages: list[dict[str, Any]]


class ModelCall(BaseModel):
    """One choose() of a model chooser: the prompt, every request, every re-ask, the last reply."""

    model: str
    name: str | None = None                 # the models file's entry
    endpoint: str | None = None
    messages: list[dict[str, Any]]
    prompt_chars: int = 0
    tools: list[str] = []
    tool_choice: str = "required"
    tool_choice_fallback: bool = False      # the server rejected "required": "auto" from now on
    rejected: RequestError | None = None    # the rejection that caused the fallback
    requests: list[RequestRecord] = []
    reasks: list[Reask] = []
    not_executed: list[Any] | None = None   # further calls in the reply: only the first acted
    raw: Any = None                         # the last reply's body, or the last error
    usage: Usage = Usage()
    latency_s: float | None = None

    @classmethod
    def from_journal(cls, record: Any) -> ModelCall | None:
        """A step's journaled call record, when it is a model's (other choosers keep other records)."""
        if not isinstance(record, dict) or "messages" not in record:
            return None
        try:
            return cls.model_validate(record)
        except ValidationError:
            return None


def counted(usage: Usage, body: Any) -> Usage:
    """The step's usage with one more reply: one reply without usage makes the step's tokens unknown
    (None), never 0."""
    reported = body.get("usage") if isinstance(body, dict) else None
    requests = usage.requests + 1
    if not isinstance(reported, dict) or reported.get("prompt_tokens") is None and reported.get("total_tokens") is None:
        return Usage(prompt_tokens=None, completion_tokens=None, total_tokens=None, requests=requests)
    if usage.total_tokens is None:
        return usage.model_copy(update={"requests": requests})
    prompt, completion = _count(reported.get("prompt_tokens")), _count(reported.get("completion_tokens"))
    total = _count(reported.get("total_tokens")) or prompt + completion
    return Usage(prompt_tokens=(usage.prompt_tokens or 0) + prompt,
                 completion_tokens=(usage.completion_tokens or 0) + completion,
                 total_tokens=usage.total_tokens + total, requests=requests)


def _count(value: Any) -> int:
    """A reported token count as a count: what is not a non-negative number counts as 0."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
