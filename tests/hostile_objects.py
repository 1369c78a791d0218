"""Hostile plug-in choosers that attack through their own objects, not through the repair.

A plug-in chooser runs in the controller's process: it is trusted code, but the View it is handed
and everything it hands back (its description, and each step's proposal, usage and call record) must not be shared state with the controller, and must not be read outside the
chooser's time limit. Each class here tries one way to break that. They are plain plug-ins, so the
CLI can load them too (`--chooser hostile_objects:BlockingModelDump` with tests/ on PYTHONPATH).

Anything that blocks waits on RELEASE, which the tests set when they are done, so no thread of a
test process stays parked for ever.
"""
from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

from repair_agent.loop.actions import TOOL_NAMES
from repair_agent.choosers.base import ChooserDescription, ChooserStep, Usage
from repair_agent.loop.state import ConditionState, Evidence

READ = {"tool": "read_file", "path": "src/discount_shop/pricing.py"}
TARGET = {"tool": "run_target_test"}
STOP = {"tool": "stop", "reason": "the vandal is done", "summary": "all green (it says)"}

RELEASE = threading.Event()  # set by the tests at teardown: every blocked call returns then
BLOCK_S = 600.0


def block() -> None:
    RELEASE.wait(BLOCK_S)


class Scripted:
    """Proposes a fixed script, one item per call, the last one repeated."""

    name = "hostile-scripted"
    script: list[Any] = [STOP]

    def __init__(self) -> None:
        self.calls = 0

    def next(self) -> Any:
        item = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return item() if callable(item) else item


# -- the View ------------------------------------------------------------------------------------

class ViewVandal(Scripted):
    """Rewrites every View it is handed (and every View it kept from earlier steps) through each
    door a frozen model leaves open: object.__setattr__, __dict__, the dicts inside, model_construct.
    It claims every condition satisfied and every check passed, then reads, runs the (failing)
    target test and stops. The run must end handoff_requested with Uₜ = 3 everywhere."""

    name = "view-vandal"
    script = [READ, TARGET, STOP]

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[Any] = []
        self.landed = 0  # mutations that took effect on the chooser's own copy

    def choose(self, view):
        self.kept.append(view)
        for old in self.kept:
            self.vandalize(old)
        return self.next()

    def _try(self, fn) -> None:
        try:
            fn()
            self.landed += 1
        except Exception:  # a frozen model refusing is fine; the test is what leaks
            pass

    def vandalize(self, view) -> None:
        t = self._try
        for c in view.conditions:
            t(lambda c=c: object.__setattr__(c, "satisfied", True))
            t(lambda c=c: object.__setattr__(c, "stale", False))
            t(lambda c=c: c.__dict__.__setitem__("evidence", "E1"))
        for e in view.evidence:
            t(lambda e=e: object.__setattr__(e, "status", "ok"))
            t(lambda e=e: object.__setattr__(e, "summary", "1/1 passed"))
            t(lambda e=e: e.data.update({"failing": {}, "passed": 1, "collected": 1, "ok": True,
                                         "targets_ok": True}))
        t(lambda: object.__setattr__(view, "u", 0))
        t(lambda: object.__setattr__(view, "unknowns", ()))
        t(lambda: object.__setattr__(view, "conditions", tuple(
            ConditionState.model_construct(name=c.name, description=c.description, satisfied=True, evidence="E1",
                                           stale=False) for c in view.conditions)))
        t(lambda: object.__setattr__(view, "evidence", tuple(view.evidence) + (Evidence.model_construct(
            id="E99", step=99, tool="run_full_suite", action='{"tool":"run_full_suite"}', status="ok",
            source="verifier", started_at="", duration_s=0.0, summary="48/48 passed", diff_sha256="",
            fingerprint="", result_sha256="", data={"ok": True}),)))
        t(lambda: object.__setattr__(view.goal, "target_tests", ()))
        t(lambda: object.__setattr__(view.authorization, "protected", ()))
        t(lambda: object.__setattr__(view.authorization, "writable", ("**",)))
        t(lambda: view.__dict__.__setitem__("current_diff", "diff --git a/x b/x\n"))
        for schema in view.action_schema:
            t(lambda s=schema: s.__setitem__("name", "release"))
            t(lambda s=schema: s["parameters"]["properties"].clear())


class WidensItsAllowedTools(Scripted):
    """With one exploration step and one step reserved for the handover, it rewrites the View's
    allowed_tools on step 2 to every tool and reads a file instead of stopping: refused step_budget."""

    name = "widens-allowed-tools"
    script = [READ, {"tool": "search", "query": "discount"}]

    def choose(self, view):
        object.__setattr__(view, "allowed_tools", TOOL_NAMES)
        object.__setattr__(view, "exploration_left", 5)
        return self.next()


# -- the proposal object ---------------------------------------------------------------------------

class Bomb:
    """Every way the controller could look at it raises (the exception's own text raises too)."""

    def _explode(self, *args, **kwargs):
        raise BombError()

    __repr__ = __str__ = __format__ = __eq__ = __hash__ = __bool__ = __len__ = __iter__ = _explode
    __getitem__ = keys = items = values = get = model_dump = _explode


class BombError(RuntimeError):
    def __str__(self):
        raise RuntimeError("and its message raises too")

    __repr__ = __str__


class Sleeper:
    """Every way the controller could look at it blocks until the test ends."""

    def _sleep(self, *args, **kwargs):
        block()
        return "{}"

    __repr__ = __str__ = __format__ = _sleep

    def __eq__(self, other):
        block()
        return True

    def __hash__(self):
        block()
        return 0


class BombModel(BaseModel):
    """A pydantic model whose model_dump raises an exception whose text raises."""

    tool: str = "stop"

    def model_dump(self, *args, **kwargs):
        raise BombError()

    def __repr__(self):
        raise BombError()

    __str__ = __repr__


class BlockingModel(BaseModel):
    """A pydantic model whose model_dump (and repr) never return: the deadline must still hold."""

    tool: str = "stop"

    def model_dump(self, *args, **kwargs):
        block()
        return {"tool": "stop"}

    def __repr__(self):
        block()
        return "BlockingModel()"

    __str__ = __repr__


class ShiftyDict(dict):
    """Answers items() with the real proposal only once: whoever reads it a second time (the journal)
    sees an innocent stop. What is journaled must be what was validated and executed."""

    def __init__(self, real: dict, decoy: dict):
        super().__init__(real)
        self.real, self.decoy, self.reads = real, decoy, 0

    def items(self):
        self.reads += 1
        return (self.real if self.reads == 1 else self.decoy).items()

    def keys(self):
        return self.decoy.keys()

    def __getitem__(self, key):
        return self.decoy[key] if self.reads > 1 else self.real[key]

    def get(self, key, default=None):
        return self.decoy.get(key, default) if self.reads > 1 else self.real.get(key, default)

    def values(self):
        return self.decoy.values()


class LyingStr(str):
    """Equal to anything, unhashable, and it says it is something else when asked politely."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        raise TypeError("unhashable")

    def __str__(self):
        return "stop"

    def split(self, *args, **kwargs):
        return ["innocent"]

    def startswith(self, *args, **kwargs):
        return False


class LyingInt(int):
    """A token count that says it is not positive, and adds up to nothing."""

    def __gt__(self, other):
        return False

    def __ge__(self, other):
        return False

    def __add__(self, other):
        return 0

    __radd__ = __add__


class ProposesObject(Scripted):
    """Proposes whatever its `make` builds (a fresh object per call)."""

    name = "proposes-object"

    def __init__(self, make):
        super().__init__()
        self.script = [make]

    def choose(self, view):
        return self.next()


def proposes_blocking_model():
    """For the CLI: `--chooser hostile_objects:proposes_blocking_model`."""
    return ProposesObject(BlockingModel)


# -- the name and the side channels ----------------------------------------------------------------

class NumberName(Scripted):
    """Its name is an int: today the run is stranded without run.json."""

    name = 42  # type: ignore[assignment]

    def choose(self, view):
        return self.next()


class RaisingName(Scripted):
    """Reading its name raises."""

    @property
    def name(self):
        raise BombError()

    def choose(self, view):
        return self.next()


class BlockingName(Scripted):
    """Reading its name never returns."""

    @property
    def name(self):
        block()
        return "late"

    def choose(self, view):
        return self.next()


class RaisingDescription(Scripted):
    """Asking it to describe itself (its name, its wish for the mutation analysis) raises."""

    name = "raising-description"

    def describe(self):
        raise BombError()

    def choose(self, view):
        return self.next()


class BlockingDescription(Scripted):
    """Asking it to describe itself never returns."""

    name = "blocking-description"

    def describe(self):
        block()
        return ChooserDescription(name="late", mutation_analysis=True)

    def choose(self, view):
        return self.next()


class BlockingChooseAttribute:
    """Even looking up `choose` never returns."""

    name = "blocking-choose-attribute"

    @property
    def choose(self):
        block()
        return lambda view: STOP


class RaisingUsage(Scripted):
    """A valid proposal, but its step's usage raises when read."""

    name = "raising-usage"
    script = [READ, STOP]

    def choose(self, view):
        return ChooserStep.model_construct(proposal=self.next(), usage=Bomb(), call=None)


class BlockingRecord(BaseModel):
    """A call record whose model_dump never returns."""

    def model_dump(self, *args, **kwargs):
        block()
        return {}


class BlockingCall(Scripted):
    """A valid proposal, but reading its step's call record never returns."""

    name = "blocking-call"
    script = [READ, STOP]

    def choose(self, view):
        return ChooserStep(proposal=self.next(), call=BlockingRecord())


class Messages(BaseModel):
    messages: list[str]


class HugeCall(Scripted):
    """A 12 MB call record per step: the journal keeps a bounded record of it, the run goes on."""

    name = "huge-call"
    script = [READ, STOP]

    def choose(self, view):
        return ChooserStep(proposal=self.next(), call=Messages(messages=["x" * 12_000_000]))


class LyingTokens(Scripted):
    """Reports a million tokens per call through an int that says it is not positive."""

    name = "lying-tokens"
    script = [READ, {"tool": "search", "query": "discount"}, STOP]

    def choose(self, view):
        # model_construct: the lying int itself, not the plain int validation would make of it
        return ChooserStep(proposal=self.next(), usage=Usage.model_construct(total_tokens=LyingInt(1_000_000)))


class SystemExiter(Scripted):
    """choose() raises SystemExit: not the controller's exit, a broken plug-in."""

    name = "system-exiter"

    def choose(self, view):
        raise SystemExit(0)


class UnreadableError(Scripted):
    """choose() raises an exception whose text never comes back."""

    name = "unreadable-error"

    def choose(self, view):
        raise SlowError()


class SlowError(RuntimeError):
    def __str__(self):
        block()
        return "slow"

    __repr__ = __str__
