"""The chooser role: read a View, propose exactly one action. It cannot write, run or grant.

The contract is two calls, both answered with typed records: `describe()` once at setup (who the
chooser is and what it wishes for), `choose(view)` once per step (the proposal, what it spent, and
the record of its call). docs/models.md ("Your own chooser") shows a plug-in written against it."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..loop.actions import Action
from ..loop.state import View


class Usage(BaseModel):
    """What one choose() spent, summed over every request it sent. A count of None is unknown (the
    endpoint did not report it), never 0: a budget that cannot be counted is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int | None = Field(default=0, ge=0)
    completion_tokens: int | None = Field(default=0, ge=0)
    total_tokens: int | None = Field(default=0, ge=0)
    requests: int = Field(default=0, ge=0, description="HTTP requests to the model, retries and re-asks included")


class ModelDescription(BaseModel):
    """A model chooser's model, endpoint and parameters, for run.json, the reports and the sweep.
    The API key's variable name, never the key."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None            # the models file's entry, when it came from one
    model: str
    endpoint: str
    api_key_env: str | None = None
    parameters: dict[str, Any] = {}    # temperature, output limit, retries... as the models file states them
    price_per_mtok_in: float | None = None
    price_per_mtok_out: float | None = None


class ChooserDescription(BaseModel):
    """Who the chooser is and what it wishes for: asked once, at setup, and journaled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="a short printable name, as reports show it")
    seed: int | None = Field(default=None, strict=True, description="what orders its choices, when it takes one")
    model: ModelDescription | None = Field(default=None, description="the model it asks, when it is a model")
    models_file: str | None = Field(default=None, description="the models file the model's settings came from")
    mutation_analysis: bool = Field(default=False, strict=True,
                                    description="the target-test observation should bring the mutation analysis "
                                                "(which one-token edits of the suspect lines make the failing "
                                                "tests pass)")


class ChooserStep(BaseModel):
    """What one choose() returns. The proposal is read as plain data and validated by the controller
    like anything else: an action from repair_agent.loop.actions, or its JSON (a dict, or text)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    # A dict or text stays exactly as the chooser wrote it (journaled so), hence tried first.
    proposal: dict[str, Any] | str | Action = Field(union_mode="left_to_right")
    usage: Usage | None = Field(default=None, description="None: it spent nothing (not a model)")
    call: BaseModel | None = Field(default=None, description="the record of its call, journaled with the step as the "
                                                     "chooser dumps it (a model's requests, replies, latency)")


@runtime_checkable
class Chooser(Protocol):
    """What the controller asks of a chooser. A plug-in is foreign code, so everything it hands back is
    read through plain.py's bounded reader (one read, under the step's time limit, into plain JSON).

    A plug-in may keep it simpler: without `describe()` it is named by its `name` attribute (or the
    --chooser spec), and `choose` may return a bare action (or its dict) instead of a ChooserStep."""

    def describe(self) -> ChooserDescription:
        """Asked once, at setup, before the first step."""
        ...

    def choose(self, view: View) -> ChooserStep:
        """One step: exactly one proposal."""
        ...


@runtime_checkable
class DeadlineAware(Protocol):
    """Optional: a chooser that retries inside its step is told before each choose() by when it must
    return, so that its own account of the attempts, not a bare timeout, ends the step."""

    def set_deadline(self, deadline: float) -> None:
        """The time.monotonic() by which choose() must have returned."""
        ...


class ChooserError(RuntimeError):
    """Base for a chooser's reported failures (any other exception is a chooser_error: a bug). `raw`
    keeps the unedited reply or error, `usage` and `call` what the failed step spent and sent."""

    def __init__(self, message: str, raw: Any = None, usage: Usage | None = None, call: BaseModel | None = None):
        super().__init__(message)
        self.raw = raw
        self.usage = usage
        self.call = call


class MalformedReply(ChooserError):
    """The chooser answered, but not with one valid tool call: the controller exits invalid_action."""


class ChooserUnavailable(ChooserError):
    """The chooser could not answer (HTTP error, timeout): the controller exits dependency_failure.

    `infrastructure`: the endpoint failed (after its retries), not the model: a sweep counts such a
    run apart from the model's repair failures and runs it again on resume. False when another
    attempt would fail the same way for the model's own reasons (its context is too small)."""

    def __init__(self, message: str, raw: Any = None, usage: Usage | None = None, call: BaseModel | None = None,
                 infrastructure: bool = True):
        super().__init__(message, raw=raw, usage=usage, call=call)
        self.infrastructure = infrastructure


class TokenBudgetExceeded(ChooserError):
    """The optional token budget is spent: the controller exits step_budget."""
