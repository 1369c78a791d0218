"""SearchChooser: repairs without being told the fix.

A deterministic, non-LLM chooser. It runs the target test, localizes from the failure (traceback
frames inside the writable scope first, then a search for the functions the failing assertion
calls), reads one window around the suspect, and tries candidate patches from a small mutation
catalogue, best-scored first: each with the target test, then the full suite. When a candidate
holds, `check_diff` closes the last condition and the controller stops at Uₜ = 0. Out of
candidates or budget, it hands off with what it learned.

It sees only the View: never the scenario, its reference fix or its `[baseline]` recipe. The seed
changes only the order in which equally scored candidates are tried.
"""
from .catalogue import Candidate, line_mutations
from .guards import frame_guards, guard_candidates
from .chooser import SearchChooser
from .plan import Plan
from .failure import Failure, parse_failure
from .patch import render_patch, unanchored_end
from .ranking import score
from .source import Function, functions_in

__all__ = ["Candidate", "Failure", "Function", "Plan", "SearchChooser", "frame_guards", "functions_in",
           "guard_candidates", "line_mutations", "parse_failure", "render_patch", "score", "unanchored_end"]
