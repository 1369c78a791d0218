"""One request to an OpenAI-compatible Chat Completions endpoint, with the retries a careful harness makes:

- transient errors (408/409/429/5xx, connection reset, read timeout) are retried with bounded
  exponential backoff, honouring Retry-After / retry-after-ms, within the step's time;
- a 400 that rejects exactly `temperature`, the output limit, `parallel_tool_calls` or
  `tool_choice: "required"` is retried once with that parameter adjusted (remembered afterwards);
- quota, authentication and other 4xx errors fail at once.

Every attempt is a RequestRecord; a request that fails for good raises EndpointFailed with them."""
from __future__ import annotations

import email.utils
import json
import os
import random
import time
from typing import Any

import openai

from ..models_file import ModelSettings
from ..slots import EndpointSlots, SlotTimeout
from .prompt import cap
from .records import RequestError, RequestRecord

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
ADJUSTABLE = ("temperature", "max_tokens", "max_completion_tokens", "parallel_tool_calls")
NOT_INFRASTRUCTURE = ("context_length_exceeded",)  # the model's own limit: another attempt fails alike


class EndpointFailed(Exception):
    """The endpoint gave no usable answer within the step. `infrastructure`: the endpoint failed, not
    the model (False when another attempt would fail alike: its context is too small)."""

    def __init__(self, message: str, requests: list[RequestRecord], infrastructure: bool = True):
        super().__init__(message)
        self.requests, self.infrastructure = requests, infrastructure
        errors = [r.error.model_dump(mode="json") for r in requests if r.error is not None]
        self.raw: dict[str, Any] = {**(errors[-1] if errors else {}), "errors": errors}


class Exchange:
    """A successful request: the reply's body and every attempt it took."""

    def __init__(self, body: dict, requests: list[RequestRecord]):
        self.body, self.requests = body, requests


class Transport:
    """The client of one model's endpoint, and what the server taught it in earlier steps: the
    parameters it rejects, and whether it takes tool_choice "required"."""

    def __init__(self, settings: ModelSettings, api_key: str, slots_key: str, lock_dir: os.PathLike | None = None):
        self.settings = s = settings
        # max_retries=0: the retries are ours, so that every attempt is journaled.
        self.client = openai.OpenAI(base_url=s.base_url, api_key=api_key, timeout=s.timeout_s, max_retries=0)
        self.slots = EndpointSlots(slots_key, s.max_concurrency, lock_dir) if s.max_concurrency else None
        self.tool_choice = "required"
        self.rejected: RequestError | None = None   # why "required" was given up, in the step it was
        self.dropped: set[str] = set() if s.parallel_tool_calls is not None else {"parallel_tool_calls"}
        self.output_param = s.output_tokens_param

    def fallback_taken(self) -> RequestError | None:
        """The rejection of tool_choice "required", once: for the record of the step it happened in."""
        rejected, self.rejected = self.rejected, None
        return rejected

    @property
    def endpoint(self) -> str:
        return self.settings.base_url or str(self.client.base_url)

    def params(self) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = json.loads(json.dumps(s.extra_body))  # a copy: the settings stay frozen
        if s.temperature is not None and "temperature" not in self.dropped:
            params["temperature"] = s.temperature
        if s.max_output_tokens is not None and self.output_param not in self.dropped:
            params[self.output_param] = s.max_output_tokens
        if "parallel_tool_calls" not in self.dropped:
            params["parallel_tool_calls"] = s.parallel_tool_calls
        return params

    def request(self, conversation: list[dict], tools: list[dict], deadline: float, *, first: int,
                reask: bool) -> Exchange:
        """One answer, retried as the module says; `first` numbers the attempts within the step."""
        s = self.settings
        retries = 0
        records: list[RequestRecord] = []
        while True:
            record = RequestRecord(n=first + len(records), reask=reask, tool_choice=self.tool_choice,
                                   params=self.params())
            records.append(record)
            left = deadline - time.monotonic()
            if left <= 0:
                raise EndpointFailed("the step's time ran out before the model answered", records)
            sent = time.monotonic()
            try:
                body = self._send(conversation, tools, record, min(s.timeout_s, left), deadline)
            except SlotTimeout as exc:
                record.error = RequestError(type="SlotTimeout", message=str(exc))
                raise EndpointFailed(f"no request slot for this model within the step's time: {exc}", records) from None
            except openai.APIError as exc:
                record.error = error_info(exc)
                record.latency_s = round(time.monotonic() - sent, 3)
                if self._adjust(exc, record):
                    continue
                body_of = getattr(exc, "body", None)
                code = error_field(body_of, "code") or error_field(body_of, "type")
                transient = (isinstance(exc, openai.APIConnectionError)   # reset, refused, read timeout
                             or isinstance(exc, openai.APIStatusError) and exc.status_code in RETRY_STATUS
                             and code != "insufficient_quota")
                if not transient or retries >= s.max_retries:
                    why = "after %d retries" % retries if transient else "not retried"
                    raise EndpointFailed(f"model endpoint failed ({why}): {describe_error(exc, code)}", records,
                                         infrastructure=code not in NOT_INFRASTRUCTURE) from None
                asked_wait = retry_after(exc)
                wait = asked_wait if asked_wait is not None else \
                    min(s.retry_max_s, s.retry_base_s * 2 ** retries) * random.uniform(0.5, 1.0)
                if asked_wait is not None and asked_wait > s.retry_max_s or time.monotonic() + wait >= deadline:
                    raise EndpointFailed(f"model endpoint failed: {exc}; the retry it needs (in {wait:.1f}s) "
                                         "does not fit in the step's time", records) from None
                record.retry_in_s = round(wait, 3)
                retries += 1
                time.sleep(wait)  # backoff before the retry; bounded by the deadline above
                continue
            record.latency_s = round(time.monotonic() - sent, 3)
            usage = body.get("usage") if isinstance(body, dict) else None
            record.usage = usage if isinstance(usage, dict) else None
            return Exchange(body, records)

    def _send(self, conversation: list[dict], tools: list[dict], record: RequestRecord, timeout: float,
              deadline: float) -> dict:
        def post() -> dict:
            response = self.client.chat.completions.with_raw_response.create(
                model=self.settings.model, messages=conversation,  # type: ignore[arg-type]
                tools=tools, tool_choice=record.tool_choice,  # type: ignore[arg-type]
                extra_body=record.params, timeout=timeout)
            try:
                return json.loads(response.http_response.text)
            except json.JSONDecodeError:
                raise openai.APIResponseValidationError(response=response.http_response, body=response.http_response.text,
                                                        message="the endpoint answered 200 with a body that is not JSON") from None

        if self.slots is None:
            return post()
        with self.slots.hold(deadline) as waited:
            record.slot_wait_s = round(waited, 3)
            return post()

    def _adjust(self, exc: openai.APIError, record: RequestRecord) -> bool:
        """A 400 that rejects one optional parameter: drop (or rename) it, once, and remember."""
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
            return False
        body = exc.body
        text = f"{exc.message} {json.dumps(body) if not isinstance(body, str) else body}"
        if self.tool_choice == "required" and "tool_choice" in text:
            # Older vLLM / llama.cpp builds reject "required"; "auto" is the portable fallback.
            self.tool_choice, self.rejected = "auto", error_info(exc)
            record.adjusted = "tool_choice: required -> auto"
            return True
        code = error_field(body, "code") or ""
        param = error_field(body, "param")
        if code not in ("unsupported_value", "unsupported_parameter") and "unsupported" not in text.lower():
            return False
        sent = record.params
        named = param if param in sent else next((p for p in ADJUSTABLE if p in sent and f"'{p}'" in text), None)
        if named is None or named in self.dropped:
            return False
        if named == "max_tokens" and "max_completion_tokens" not in self.dropped:
            # OpenAI's reasoning models: the same limit under the name they take.
            self.output_param = "max_completion_tokens"
            record.adjusted = "max_tokens -> max_completion_tokens"
        else:
            record.adjusted = f"{named} omitted"
        self.dropped.add(named)
        return True


def error_info(exc: BaseException) -> RequestError:
    """A journal-friendly description of a failed request, the server's body verbatim."""
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        try:
            text = exc.response.text
        except Exception:  # a body that could not be read: the SDK's own reading of it stays
            text = None
        return RequestError(type=type(exc).__name__, status_code=exc.status_code, body=exc.body,
                            response_text=cap(text, 20_000) if text is not None else None,
                            headers={k: headers[k] for k in ("retry-after", "retry-after-ms", "x-request-id")
                                     if k in headers})
    return RequestError(type=type(exc).__name__, message=str(exc))


def error_field(body: Any, field: str) -> str | None:
    err = body.get("error", body) if isinstance(body, dict) else None
    value = err.get(field) if isinstance(err, dict) else None
    return value if isinstance(value, str) else None


def describe_error(exc: openai.APIError, code: str | None) -> str:
    """`HTTP 429 insufficient_quota: You exceeded …`: the status and the server's code up front."""
    if isinstance(exc, openai.APIStatusError):
        message = error_field(exc.body, "message") or (exc.body if isinstance(exc.body, str) else exc.message)
        return f"HTTP {exc.status_code}{f' {code}' if code else ''}: {cap(str(message), 500)}"
    return f"{type(exc).__name__}: {exc}"


def retry_after(exc: BaseException) -> float | None:
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
