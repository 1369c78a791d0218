"""Tokens, cost and latency of a run, read from its journal: one reading for run.json, the
reports and the sweep.

A step whose usage says `total_tokens: null` (a model endpoint that reports no usage) makes the
run's token counts unknown (None), never 0. A chooser that reports nothing at all (baseline,
search, plug-ins) used no tokens: 0."""
from __future__ import annotations

import statistics
from typing import Any, Iterable

from pydantic import BaseModel

from .journal import JournalRecord, SetupRecord, StepRecord


class UsageSummary(BaseModel):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    total_tokens: int | None = 0
    unknown_steps: int = 0                      # steps whose endpoint reported no usage
    requests: int = 0                           # HTTP requests to the model, retries and re-asks included
    median_step_latency_s: float | None = None  # of the chooser's steps (model choosers only)
    cost: float | None = None                   # in the models file's price unit, when priced and known


def model_of(records: Iterable[JournalRecord]) -> dict[str, Any] | None:
    """The model the run's (latest) session used, as its setup record describes it."""
    model = None
    for r in records:
        if isinstance(r, SetupRecord) and r.model is not None:
            model = r.model
    return model


def summarize_usage(records: list[JournalRecord], model: dict[str, Any] | None = None) -> UsageSummary:
    model = model if model is not None else model_of(records)
    prompt = completion = total = requests = unknown = 0
    latencies: list[float] = []
    for r in records:
        if not isinstance(r, StepRecord):
            continue
        usage = r.usage
        if "total_tokens" in usage and usage["total_tokens"] is None:
            unknown += 1
        else:
            p, c = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
            prompt, completion = prompt + p, completion + c
            total += _int(usage.get("total_tokens")) or p + c
        call = r.chooser_call if isinstance(r.chooser_call, dict) else {}
        if isinstance(call.get("requests"), list):
            requests += len(call["requests"])
        if isinstance(call.get("latency_s"), (int, float)) and "messages" in call:
            latencies.append(float(call["latency_s"]))
    known = unknown == 0
    summary = UsageSummary(prompt_tokens=prompt if known else None, completion_tokens=completion if known else None,
                           total_tokens=total if known else None, unknown_steps=unknown, requests=requests,
                           median_step_latency_s=round(statistics.median(latencies), 3) if latencies else None)
    summary.cost = cost_of(summary, model)
    return summary


def cost_of(summary: UsageSummary, model: dict[str, Any] | None) -> float | None:
    if not model:
        return None
    price_in, price_out = model.get("price_per_mtok_in"), model.get("price_per_mtok_out")
    if price_in is None and price_out is None or summary.prompt_tokens is None or summary.completion_tokens is None:
        return None
    return round((summary.prompt_tokens * (price_in or 0) + summary.completion_tokens * (price_out or 0)) / 1e6, 6)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
