"""Tokens, cost and latency of a run, read from its journal: one reading for run.json, the
reports and the sweep.

A step whose usage says `total_tokens: null` (a model endpoint that reports no usage) makes the
run's token counts unknown (None), never 0. A chooser that reports nothing at all (baseline,
search, plug-ins) used no tokens: 0."""
from __future__ import annotations

import statistics
from typing import Any, Iterable

from pydantic import BaseModel, Field

from ..choosers.base import ChooserDescription
from ..choosers.model.records import ModelCall
from .journal import JournalRecord, SetupRecord, StepRecord


class UsageSummary(BaseModel):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    total_tokens: int | None = 0
    unknown_steps: int = 0                      # steps whose endpoint reported no usage
    requests: int = 0                           # HTTP requests to the model, retries and re-asks included
    median_step_latency_s: float | None = None  # of the chooser's steps (model choosers only)
    cost: float | None = None                   # in the models file's price unit, when priced and known


class CostLimit(BaseModel):
    """--max-cost: what a run may spend, in the unit of its model's prices (the models file's
    price_per_mtok_in/out, as its cost is reckoned), and what it has spent (a resume: so far)."""

    max_cost: float = Field(gt=0)
    model: dict[str, Any] | None = None   # the run's model description; None: a chooser that spends nothing
    spent: float = 0.0

    def add(self, usage: dict[str, Any]) -> bool:
        """Count one step; False when its cost cannot be known (no usage reported)."""
        cost = step_cost(usage, self.model)
        if cost is None:
            return False
        self.spent = round(self.spent + cost, 6)
        return True

    def exhausted(self) -> str | None:
        """Why no further step may start, or None."""
        if self.spent < self.max_cost:
            return None
        return f"cost budget spent: {self.spent:.6g} of {self.max_cost:g} (the models file's prices)"


def model_record(description: ChooserDescription) -> dict[str, Any] | None:
    """The chooser's model as the journal, run.json and the cost reckoning keep it (None: no model)."""
    return description.model.model_dump(mode="json") if description.model is not None else None


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
        call = ModelCall.from_journal(r.chooser_call)
        if call is not None:
            requests += len(call.requests)
            if call.latency_s is not None:
                latencies.append(call.latency_s)
    known = unknown == 0
    summary = UsageSummary(prompt_tokens=prompt if known else None, completion_tokens=completion if known else None,
                           total_tokens=total if known else None, unknown_steps=unknown, requests=requests,
                           median_step_latency_s=round(statistics.median(latencies), 3) if latencies else None)
    summary.cost = cost_of(summary, model)
    return summary


def priced(model: dict[str, Any] | None) -> bool:
    """Whether a model description carries a price (the models file's price_per_mtok_in/out)."""
    return model is not None and (model.get("price_per_mtok_in") is not None
                                  or model.get("price_per_mtok_out") is not None)


def step_cost(usage: dict[str, Any], model: dict[str, Any] | None) -> float | None:
    """One step's cost from its usage, priced as the run's cost is (None: its tokens are unknown)."""
    if "total_tokens" in usage and usage["total_tokens"] is None:
        return None
    return cost_of(UsageSummary(prompt_tokens=_int(usage.get("prompt_tokens")),
                                completion_tokens=_int(usage.get("completion_tokens"))), model) or 0.0


def cost_of(summary: UsageSummary, model: dict[str, Any] | None) -> float | None:
    if not model:
        return None
    price_in, price_out = model.get("price_per_mtok_in"), model.get("price_per_mtok_out")
    if price_in is None and price_out is None or summary.prompt_tokens is None or summary.completion_tokens is None:
        return None
    return round((summary.prompt_tokens * (price_in or 0) + summary.completion_tokens * (price_out or 0)) / 1e6, 6)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
