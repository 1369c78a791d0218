"""Mutation analysis for the target-test observation (agent side only), as in Metallaxis-FL.

The spectrum ranks lines by which tests run them; lines that always run together (one function's
body) tie. To tell them apart, the traced run goes on, in the same sandbox process and on the same
copy of the tree, to change the most suspicious lines one token at a time (a comparison or an
arithmetic operator, a boolean operator, a number by one, a variable by another of its function, an
index by one, a simple statement removed) and to run only the failing target tests on each mutant.
A line where a mutant changes what the failing tests show is on the failure's path; a mutant that
makes them pass is a lead worth trying first, and it is checked against the passing tests the
spectrum ran. When no mutant of those lines is such a fix and time is left, the next lines of the
ranking get the same edits, a round at a time (WIDER_ROUNDS). The program is in_sandbox/mutants.py
(shipped with in_sandbox/spectrum.py, whose Ochiai ranking chooses the lines); this module holds its
settings and its result models.

Like the spectrum it is a hint, in the agent's sandbox; the verifier never sees it. The mutants run
in a fixed order up to MAX_MUTANTS, so the result repeats unless the time limit cuts it first (on a
large project under load it does, and `cut` says how many were not run). It costs time, not steps,
so only a chooser that asks for it gets it (`mutation_analysis`).
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .goal_examples import GoalExample

MAX_LINES = 40        # the most suspicious lines (at least LINE_SHARE of the best score) that are mutated
LINE_SHARE = 0.1
MAX_MUTANTS = 2000      # every edit of the operator table; the time limit cuts first on a large project
MAX_PER_LINE = 120
BUDGET_S = 30.0       # for all mutants; a cut is counted in the result (past ~60 s in all, Docker
                      # sweeps lost the sandbox process and with it the whole analysis)
PER_MUTANT_S = 2.0    # a mutant that loops is stopped and counted as changing the failure
MAX_CHECKED = 60      # fixing mutants checked against the passing tests
SNAPSHOT_S = 5.0      # the result so far is printed this often, so a process stopped early leaves it
WORKERS = 2           # processes the mutants are shared among, when the sandbox has the CPUs for them
WIDER_ROUNDS = 3      # when no mutant of the chosen lines is a clean fix: rounds of the next MAX_LINES lines
WIDER_S = 8.0         # ... each started only while this much of BUDGET_S is left
MAX_PAIRS = 12        # two partial fixes of one file tried together, at most
PAIRS_S = 3.0         # the time the pairs may take past BUDGET_S
IMPORT_S = 6.0        # when nothing else is a clean fix: the time the lines that ran only at import may take past it
MEMORY_MB = 384       # what the mutants may allocate beyond the process's size: more fails as MemoryError
MARKER = "@@ra-mutants@@"   # in_sandbox/mutants.py prints its result after it (its own MARKER, tested equal)


class MutantFix(BaseModel):
    """A one-token mutant that made failing target tests pass."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    text: str                 # the mutated line
    what: str                 # e.g. "< -> <="
    family: str = ""          # its operator family in in_sandbox/operators.py (e.g. "boundary")
    fixed: int                # failing target tests it made pass
    of: int                   # failing target tests
    broken: int | None = None   # passing tests it broke, when checked (only mutants that fix every target)
    checked: int = 0          # passing tests it was checked against
    reached: int | None = None   # a guard or a transform: when the failing targets first ran its line (0: first)
    # what it did on the tests it was checked against, as a digest (in_sandbox/behaviour.py): two clean
    # fixes with the same one cannot be told apart by them
    behaviour: str | None = None
    tokens_added: int = 0     # tokens the edit adds to its line (negative: it removes some)
    span: int = 1             # lines it replaces from `line` on: a pair's block runs to its second edit
    fixed_targets: tuple[int, ...] = ()   # a partial fix: which failing targets (their order) it turned green
    examples: int | None = None   # a fix of every target: how many of the goal's examples hold on it (goal_examples.py),
    deviation: int | None = None  # ... and on how many inputs near theirs it does otherwise than the code as given

    @property
    def clean(self) -> bool:
        """Every failing target passes and no checked passing test broke."""
        return self.fixed == self.of and self.broken == 0


class MutatedLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    tried: int       # mutants run
    changed: int     # mutants that changed what a failing target test showed (its message, or a pass)
    fixing: int      # mutants that made every failing target pass
    refuted: tuple[str, ...] = ()   # in_sandbox.mutants.edit_key of each mutant a failing target still failed on


class MutationAnalysis(BaseModel):
    model_config = ConfigDict(frozen=True)

    lines: tuple[MutatedLine, ...] = ()
    fixes: tuple[MutantFix, ...] = ()
    tried: int = 0
    cut: int = 0              # mutants not run: the limit on count or time was reached
    duration_s: float = 0.0
    collect_s: float = 0.0    # of which: the pytest session's start and collection,
    baseline_s: float = 0.0   # and the failing targets' first run (the time each mutant may take follows from it)
    compile_s: float = 0.0    # compiling the mutated modules
    targets_s: float = 0.0    # running the failing targets on the mutants,
    timed_out: int = 0        # of which this many mutants ran into their time limit (a loop)
    stopped_early: int = 0    # ... and this many stopped at a target that failed as before: short of
    #                           time, the targets after it were not run (a fix of only those goes unseen)
    check_s: float = 0.0      # running the passing tests (and the goal's examples) on the mutants that fixed every target
    conditions_s: float = 0.0   # the traced run that evaluates the guards' conditions at their lines
    guards_first: int = 0     # guards whose condition held in every failing target and no passing test: run first
    guards_dropped: int = 0   # guards whose condition never held where the failing targets ran their line: not run
    transforms_dropped: int = 0   # transforms of a variable that held no text where the failing targets ran the line
    queued: int = 0           # mutants the analysis had for its lines, before the limits
    not_compiling: int = 0    # of which: the edited module did not compile (a garbled edit), not run
    deferred: int = 0         # ... no live function held the line: run after the others, each in a fresh session
    lines_unread: int = 0     # chosen lines whose file could not be read
    lines_without_edits: int = 0   # chosen lines no operator had an edit for
    errors: int = 0           # exceptions of the analysis's own code (each ended one mutant, or the loop)
    error: str = ""           # the first: its type and where in the analysis's program
    session_exit: int = 0     # the mutants' pytest session's exit code: 2 or more, it ended early
    workers: int = 1          # processes that shared the mutants (in_sandbox/workers.py); the times above add theirs up
    workers_lost: int = 0     # of which this many sent nothing by the deadline (their mutants' results are lost)
    pairs: int = 0            # two partial fixes of one file that together turned every target green, run together
    wider: int = 0            # rounds of lower-ranked lines run after the chosen ones gave no clean fix
    at_import: int = 0        # then lines that ran only while the modules were imported, each mutant built by running its module again
    examples: int = 0         # the goal's examples that resolved in the tests' names (goal_examples.py),
    examples_held: int = 0    # ... of which this many held on the code as given
    near_inputs: int = 0      # inputs near the examples' (one literal changed a little) each fix is compared on
    finished: bool = True     # False: a snapshot printed while it ran (its process stopped before the end)

    def render(self, limit: int = 5) -> str:
        ranked = sorted(self.fixes, key=lambda f: (not f.clean, -f.fixed, -(f.examples or 0), f.broken or 0))
        head = (f"mutation analysis: {self.tried} one-token mutant(s) of {len(self.lines)} suspicious line(s) run "
                f"against the failing target tests; {sum(f.fixed == f.of for f in self.fixes)} made them all pass"
                + (f"; {self.cut} not run (limit reached)" if self.cut else ""))
        body = [f"  {f.path}:{f.line}  {f.what}  -> {f.text.strip()}  ({f.fixed}/{f.of} failing pass"
                + (f", {f.broken}/{f.checked} passing broke" if f.broken is not None else "")
                + (f", {f.examples}/{self.examples} of the goal's examples hold)" if f.examples is not None else ")")
                for f in ranked[:limit]]
        return "\n".join([head, *body])


def mutation_args(writable_regexes: list[str], until_s: float, examples: tuple[GoalExample, ...] = ()) -> dict:
    """The script's settings: the writable scope as regular expressions, the time after the traced
    run's start by which the mutants must stop (the sandbox's clock is its own), and the goal's examples."""
    return {"examples": [e.model_dump() for e in examples], "writable": writable_regexes, "share": LINE_SHARE, "max_lines": MAX_LINES, "max_mutants": MAX_MUTANTS,
            "max_per_line": MAX_PER_LINE, "budget_s": BUDGET_S, "per_mutant_s": PER_MUTANT_S,
            "max_checked": MAX_CHECKED, "workers": WORKERS, "until_s": until_s,
            "rounds": WIDER_ROUNDS, "wider_s": WIDER_S, "max_pairs": MAX_PAIRS, "pairs_s": PAIRS_S, "import_s": IMPORT_S, "snapshot_s": SNAPSHOT_S, "memory_mb": MEMORY_MB}
