"""The search chooser's weights as data: every number the ranking adds to a candidate's score is a
weight of a named feature in weights.json, next to this module, fitted by bench/fit_search.py.

A candidate's score is its generator's base score (a guard's rank among guards, an insertion's
form) plus the dot product of its feature vector (`Candidate.features`, computed once when it is
scored) with this table: `prior:<family>` (every family has one), `hint:<hint>:<family>` (the
failure's hints, by family; absent pairs weigh 0) and one weight per `Rule` (every rule has one).
"""
from __future__ import annotations

from functools import lru_cache

import json
from enum import Enum
from importlib import resources

from pydantic import BaseModel, ConfigDict, model_validator


class _Named(str, Enum):
    """An enum whose members read as their names' text (`f"{Family.BOUNDARY}"` is `boundary`)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Family(_Named):
    """What kind of edit a candidate is: the operator families of in_sandbox/operators.py and the
    edits the chooser builds from the code around a line and from the failure."""
    # operator families (in_sandbox/operators.py, in_sandbox/statement_edits.py)
    COMPARISON = "comparison"
    BOUNDARY = "boundary"
    ARITHMETIC = "arithmetic"
    TERM = "term"                  # a term of a sum or difference dropped
    CLONE = "clone"                # a line as its clones elsewhere in the file have it (the analysis alone)
    CONSTANT = "constant"
    GOAL_CONSTANT = "goal-constant"
    SLICE = "slice"
    BOOLEAN = "boolean"
    EXTREME = "extreme"
    NAME = "name"
    DEFAULT = "default"
    VARIABLE = "variable"
    FIELD = "field"
    OFFSET = "offset"
    ARGUMENT = "argument"
    PERCENT = "percent"
    SWAP = "swap"
    CALL_NAME = "call-name"
    CASE_CALL = "case-call"
    RETURN_VALUE = "return-value"
    ARGUMENTS = "arguments"
    NUMERAL = "numeral"
    SCALE = "scale"
    NORMALIZE = "normalize"
    BRANCHES = "branches"
    REGEX = "regex"
    CONDITION = "condition"
    DELETE = "delete"
    SIGN = "sign"
    NEGATE = "negate"
    STATEMENT_REMOVED = "statement-removed"
    # edits that name something from the code around the line (in_sandbox/scope_edits.py)
    MORE_ARGUMENTS = "more-arguments"
    MISSING_CALL = "missing-call"
    RETURN_VARIABLE = "return-variable"
    OPPOSITE = "opposite"
    TYPE_OF = "type-of"            # a built-in type passed to a call -> the type of a variable
    # conditions, handlers and loops (in_sandbox/condition_edits.py)
    CONDITION_GUARD = "condition-guard"
    EXCEPTION_TYPE = "exception-type"
    ITERABLE_CALL = "iterable-call"
    # guards (guards.py), edits from the code around a line (context_edits.py), statements the
    # failure says are missing (missing.py), separators (values.py)
    NONE_GUARD = "none-guard"
    EMPTY_GUARD = "empty-guard"
    WRAP = "wrap"
    COUNTER = "counter"
    RAISE_GUARD = "raise-guard"
    SIBLING_COPY = "sibling-copy"
    RETURN = "return"
    ATTRIBUTE = "attribute"
    DEFINITION = "definition"
    SEPARATOR = "separator"
    # a mutant of the mutation analysis no catalogue edit makes
    MUTANT = "mutant"


class Hint(_Named):
    """What the failure says about the kind of bug (failure.py's `_hints`)."""
    PERCENT = "percent"
    CENTS = "cents"
    DIV100 = "div100"
    MUL100 = "mul100"
    NONE = "none"
    EMPTY = "empty"
    TYPE = "type"
    RECURSION = "recursion"
    BOUNDARY = "boundary"
    EXTREME = "extreme"
    CASE = "case"
    RANGE = "range"
    DEFAULT = "default"
    SWAP = "swap"
    SIGN = "sign"
    SEPARATORS = "separators"
    NUMBER = "number"
    STRIP = "strip"
    BOOLEAN = "boolean"


class Rule(_Named):
    """One rule of the ranking: a feature whose weight is in the table (each names a bug pattern)."""
    # the spectrum (spectrum.py)
    SPECTRUM_RAN = "spectrum_ran"                    # the failing tests ran the line
    SPECTRUM_SHARPNESS = "spectrum_sharpness"        # value: the line's relative suspicion
    SPECTRUM_NEVER_RAN = "spectrum_never_ran"        # a complete list lacks it
    # the mutation analysis (mutants.py)
    MUTANT_CLEAN_FIX = "mutant_clean_fix"            # the edit of a clean mutant
    MUTANT_CROWDED_FIX = "mutant_crowded_fix"        # ... when too many were clean to tell them apart
    MUTANT_GUESSED_FIX = "mutant_guessed_fix"        # a clean guard whose condition or body the analysis guessed
    MUTANT_FIX_LINE = "mutant_fix_line"              # any edit of a line with a clean mutant
    MUTANT_PARTIAL_FIX = "mutant_partial_fix"        # value: the share of failing targets it turned green
    MUTANT_INERT_LINE = "mutant_inert_line"          # several mutants changed nothing there
    MUTANT_REFUTED = "mutant_refuted"                # the analysis ran this very edit: a failing target still failed
    MUTANT_PREFERRED_INSERT = "mutant_preferred_insert"  # the clean inserted statement to try first (see mutants.py)
    # the values and the failure (ranking.score)
    DIVISION_BY_VALUE_TYPES = "division_by_value_types"
    NUMBER_EDIT_NON_NUMBERS = "number_edit_non_numbers"
    ORDER_TO_INEQUALITY = "order_to_inequality"
    REGEX_WIDENS_QUOTED_RANGE = "regex_widens_quoted_range"
    REGEX_RANGE_UNPOINTED = "regex_range_unpointed"
    REGEX_ESCAPE_NAMED = "regex_escape_named"
    MOVES_TOWARD_EXPECTED = "moves_toward_expected"
    ON_FRAME_LINE = "on_frame_line"
    ABOVE_FRAME_LINE = "above_frame_line"
    SCALES_AS_EXPECTED = "scales_as_expected"        # value: magnitude_fix
    PERCENT_NAMED = "percent_named"
    PERCENT_PARAMETER = "percent_parameter"
    PERCENT_DIRECTION_BY_VALUES = "percent_direction_by_values"
    PERCENT_DIRECTION_BY_CENTS = "percent_direction_by_cents"
    GOAL_WORDS_ON_LINE = "goal_words_on_line"        # value: how many (at most 2)
    UNJUSTIFIED_GUARD = "unjustified_guard"
    UNJUSTIFIED_KIND = "unjustified_kind"
    CONDITION_LET_WRONG_TYPE_IN = "condition_let_wrong_type_in"
    NEGATE_CONDITION = "negate_condition"
    POWER_OF_TEN_OFF_BY_ONE = "power_of_ten_off_by_one"
    TABLE_MEMBER_OFF_BY_ONE = "table_member_off_by_one"
    BASE_NAMED = "base_named"
    BASE_NOT_NAMED = "base_not_named"
    GOAL_NUMBER_DEFAULT = "goal_number_default"
    # smells (smells.py)
    LINE_COMPUTES_NOTHING = "line_computes_nothing"
    PAIRS_TARGETS = "pairs_targets"
    RETURNS_WHAT_TEST_GOT = "returns_what_test_got"
    RETURNS_OTHER = "returns_other"
    # the code around the line (context_rules.py)
    EXPECTED_RAISE_CONDITION = "expected_raise_condition"
    GUARD_BESIDE_EXPECTED_RAISE = "guard_beside_expected_raise"   # a new raise before an `if` that raises it already
    EXPECTED_RAISE_MESSAGE = "expected_raise_message"
    RAISE_AT_FRAME = "raise_at_frame"
    USES_UNUSED_PARAMETER = "uses_unused_parameter"
    WALK_RESTARTS = "walk_restarts"
    PARAMETER_ORDER = "parameter_order"
    CASE_AGREES = "case_agrees"
    CASE_DISAGREES = "case_disagrees"
    # the order of tries (ranking.order)
    SAME_LINE_PENALTY = "same_line_penalty"


@lru_cache(maxsize=None)
def parsed_name(name: str) -> Family | tuple[Hint, Family] | Rule:
    """What a feature's name points at in the table, read once per name (`dot` runs for every
    candidate of every ranking); an unknown name is refused (ValueError)."""
    kind, _, rest = name.partition(":")
    if kind == "prior":
        return Family(rest)
    if kind == "hint":
        hint, _, family = rest.partition(":")
        return Hint(hint), Family(family)
    return Rule(name)


class Weights(BaseModel):
    """The table: priors by family, bonuses by hint and family, one weight per rule, and the
    thresholds of the mutation analysis's policy."""
    model_config = ConfigDict(frozen=True, extra="forbid")

    prior: dict[Family, float]
    hint: dict[Hint, dict[Family, float]]
    rule: dict[Rule, float]
    max_clean: int          # more clean mutants than this: only their lines stand out
    min_inert_tries: int    # mutants of a line that changed nothing before it counts as inert

    @model_validator(mode="after")
    def _complete(self) -> Weights:
        missing = [f.value for f in Family if f not in self.prior] + [r.value for r in Rule if r not in self.rule]
        if missing:
            raise ValueError(f"weights without a value: {', '.join(missing)}")
        return self

    @property
    def flat(self) -> dict[str, float]:
        """The table as named parameters (`prior:<family>`, `hint:<hint>:<family>`, `<rule>`)."""
        out = {f"prior:{f.value}": v for f, v in self.prior.items()}
        out |= {f"hint:{h.value}:{f.value}": v for h, row in self.hint.items() for f, v in row.items()}
        return out | {r.value: v for r, v in self.rule.items()}

    def dot(self, features: dict[str, float]) -> float:
        """The score points of a feature vector (`prior:<family>`, `hint:<hint>:<family>`, `<rule>`)."""
        return sum(value * self.weight(name) for name, value in features.items())

    def weight(self, name: str) -> float:
        where = parsed_name(name)
        if isinstance(where, Family):
            return self.prior[where]
        if isinstance(where, tuple):
            return self.hint.get(where[0], {}).get(where[1], 0.0)
        return self.rule[where]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"


def load_weights(text: str | None = None) -> Weights:
    """The table in weights.json (or in `text`)."""
    if text is None:
        text = resources.files(__package__).joinpath("weights.json").read_text(encoding="utf-8")
    return Weights.model_validate(json.loads(text))


WEIGHTS = load_weights()   # the committed table
_active = [WEIGHTS]


def active() -> Weights:
    """The table the ranking reads: the committed one, unless a fitting harness activated another."""
    return _active[0]


def activate(weights: Weights | None) -> None:
    """Rank with `weights` from now on (None: the committed table again). For bench/fit_search.py."""
    _active[0] = weights or WEIGHTS
