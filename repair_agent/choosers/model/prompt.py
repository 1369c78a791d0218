"""The model chooser's prompt: a View rendered as one user message, under a system prompt.

Rendered from the View alone (plus, at most, a note about the previous reply), so every step can be
replayed from the journal: the files read, the model's own notes and the warnings about run-ending
actions are all derived from the View's evidence. Every part is capped; the goal and the
constraints are never dropped, only cut at a length no real manifest reaches."""
from __future__ import annotations

import re
from typing import Any

from ...loop.actions import CHECK_TOOLS, REREAD_WINDOW, REREADABLE_TOOLS, ReadFile
from ...loop.state import STALE_SUFFIX, Evidence, View

# Caps on every part of the prompt (characters).
GOAL_CAP = 4000
SIGNATURE_CAP = 1000
ITEM_CAP = 240          # one target test, acceptance line, constraint, glob, unknown
CONDITION_CAP = 400     # one condition's description: the one place an acceptance condition is stated
LIST_MAX = 12           # items per list
GRANTS_MAX = 5
SECTION_CAP = 3000      # target tests + acceptance + constraints; authorization with its grants
SMALL_SECTION_CAP = 1500  # conditions; unknowns
DIFF_CAP = 8000         # the current diff
LOCALIZATION_CAP = 1200  # the spectrum's most suspicious lines
ACTION_CAP = 400        # an evidence item's action (a patch is in the current diff anyway)
SUMMARY_CAP = 300
RECENT_OUTPUT_CAPS = (3500, 1200, 1000, 800, 800)  # newest first: the newest evidence most fully
ERROR_CAPS = (1500, 500, 500, 300, 300)
RECENT_FULL = len(RECENT_OUTPUT_CAPS)
OLDER_MAX = 40          # older items as one line each; beyond that only a count
OLDER_CAP = 5000
FILE_CAP = 12_000       # one file's latest read, in "Files you have read"
FILES_CAP = 24_000      # all of them; the newest reads first
NOTE_CAP = 1500         # what the prompt says about the previous reply
YOUR_NOTES_MAX = 12     # the model's own notes, newest last
YOUR_NOTES_CAP = 2000
USER_PROMPT_CAP = 48_000  # the whole user message, whatever the parts add up to

SYSTEM_PROMPT = """\
You are the chooser of a code-repair loop. Each turn you propose exactly ONE tool call; \
the controller validates and executes it and shows you the result next turn.
- There is no shell: use only the tools offered, one call per reply.
- Tests are run by a protected verifier (run_target_test, run_full_suite, try_patches, check_diff); \
you never see or touch its configuration. try_patches runs the target tests (then, if they pass, the whole suite) on up to eight candidate \
diffs in one step, each whole against the repository as given, without applying any.
- To edit, prefer replace_in_file {path, old, new}: `old` is exact text of the file (copy it \
from "Files you have read", without the line numbers) that occurs exactly once. apply_patch \
takes a unified diff (paths a/... and b/..., with context lines). Both apply ON TOP OF the \
current diff shown to you: the working tree already contains it. To undo a change, edit it back.
- read_file shows a whole file or, with start_line/end_line, a part of it; line_numbers=true \
prefixes each line with its number. "Files you have read" keeps the latest read of each file \
until the diff changes.
- Every call may carry a short `note` to yourself; your notes are shown back to you.
- These end the run at once (a warning in the prompt names them when they apply):
  * the same action twice in a row (repeated_action);
  * the same check on an unchanged diff: a test run repeated without a new patch in between, or \
a search or read repeated while its result is still among the last five, gives no new evidence \
(no_new_evidence);
  * a patch touching tests, test configuration, conftest.py or anything outside the writable \
globs (authorization_required);
  * a call that does not match the tool's schema (invalid_action).
- The loop stops by itself when all conditions are satisfied; you do not declare success.
- When you are stuck or lack authorization, call `stop` with a summary of what you found \
and what a person should do next."""

CHECK_PROMPT = ("This is a check of the connection, not a repair. Call the `search` tool with the query "
                "\"models-check\" and nothing else.")


def cap(text: str, limit: int) -> str:
    """Keep head and tail: test output usually matters at both ends."""
    text = str(text)
    if len(text) <= limit:
        return text
    half = max(1, (limit - 40) // 2)
    return f"{text[:half]}\n... [{len(text) - 2 * half} chars omitted] ...\n{text[-half:]}"


def _bullets(items: Any, limit: int = LIST_MAX) -> str:
    items = list(items)
    lines = [f"- {cap(i, ITEM_CAP)}" for i in items[:limit]]
    if len(items) > limit:
        lines.append(f"- ... and {len(items) - limit} more")
    return "\n".join(lines) or "- (none)"


def _globs(items: Any) -> str:
    items = list(items)
    shown = ", ".join(cap(i, ITEM_CAP) for i in items[:LIST_MAX])
    return (shown + (f", ... and {len(items) - LIST_MAX} more" if len(items) > LIST_MAX else "")) or "(nothing)"


def render_evidence(ev: Evidence, age: int, in_files: frozenset[str] = frozenset()) -> str:
    parts = [f"### {ev.id} (step {ev.step}) {ev.tool} [{ev.status}]", f"action: {cap(ev.action.canonical(), ACTION_CAP)}",
             f"summary: {cap(ev.summary, SUMMARY_CAP)}"]
    if ev.id in in_files:
        parts.append("output: (under \"Files you have read\")")
    elif ev.output:
        parts.append("output:\n" + cap(ev.output, RECENT_OUTPUT_CAPS[age]))
    if ev.localization is not None:
        parts.append(cap(ev.localization.render(), LOCALIZATION_CAP))
    if ev.raw_error:
        parts.append("error:\n" + cap(ev.raw_error, ERROR_CAPS[age]))
    return "\n".join(parts)


_CAPPED_TAIL = re.compile(r"\n\[(?:output|observation) capped[^\n]*\]\s*$")


def _read_lines(ev: Evidence, read: ReadFile) -> tuple[str, int, int]:
    """A read's output as numbered lines, its first and last line number."""
    output = _CAPPED_TAIL.sub("", ev.output) if ev.capped else ev.output
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = read.start_line or 1
    if not read.line_numbers:
        lines = [f"{n:6d}\t{line}" for n, line in enumerate(lines, first)]
    return "\n".join(lines), first, first + len(lines) - 1


def files_read(view: View, budget: int = FILES_CAP) -> tuple[str, frozenset[str]]:
    """"Files you have read": the latest read of each file (each line range) on the current diff,
    with line numbers, newest first, capped per file and in all; and the evidence ids it shows."""
    latest: dict[tuple, tuple[Evidence, ReadFile]] = {}
    for ev in view.evidence:
        read = ev.action
        if not isinstance(read, ReadFile) or ev.status != "ok" or ev.diff_sha256 != view.current_diff_sha256:
            continue
        key = (read.path, read.start_line, read.end_line)
        latest.pop(key, None)  # re-inserted: the newest read of a range comes last
        latest[key] = (ev, read)
    parts, shown, left = [], set(), min(budget, FILES_CAP)
    for ev, read in reversed(latest.values()):
        text, first, last = _read_lines(ev, read)
        head = f"## {read.path} (lines {first}-{last}; {ev.id}, step {ev.step})"
        if left < 200:
            parts.append(f"{head}: no longer shown here; read it again if you need it")
            continue
        cap = min(FILE_CAP, left)
        if len(text) > cap:
            cut = text.rfind("\n", 0, cap)
            kept = text[:cut if cut > 0 else cap]
            text = kept + (f"\n[... lines {first + kept.count(chr(10)) + 1}-{last} not shown: "
                           "read_file with start_line/end_line shows them]")
        parts.append(f"{head}\n{text}")
        shown.add(ev.id)
        left -= len(text)
    if not parts:
        return "", frozenset()
    return ("# Files you have read (current content on the current diff, newest first)\n"
            + "\n\n".join(parts)), frozenset(shown)


def render_view(view: View, notes: list[str] | tuple[str, ...] = ()) -> str:
    """The user message. Goal, constraints and authorization come first; every part is capped."""
    g, a = view.goal, view.authorization
    conds = "\n".join(f"- [{'satisfied' if c.satisfied else 'unsatisfied'}] {c.name}: {cap(c.description, CONDITION_CAP)}"
                      + (f" (evidence {c.evidence})" if c.evidence else "") + (" (stale)" if c.stale else "")
                      for c in view.conditions[:LIST_MAX])
    # Each acceptance condition is stated once, under Conditions with its status: the goal's list
    # and the unknowns repeat only what is not a condition.
    described = {c.description for c in view.conditions}
    rest = [x for x in g.acceptance if x not in described]
    acceptance = ("the conditions below" + (" and:\n" + _bullets(rest) if rest else "")) if g.acceptance \
        else "\n" + _bullets(())
    unknowns = [u for u in view.unknowns if u.removesuffix(STALE_SUFFIX) not in described]
    grants = "".join(f"Granted by a person ({cap(x.who, 60)}): {_globs(x.allow)} — {cap(x.reason, ITEM_CAP)}\n"
                     for x in a.grants[-GRANTS_MAX:])
    out = [
        f"# Goal ({cap(g.scenario, 100)})\n{cap(g.text, GOAL_CAP)}\n\nFailure signature: "
        f"{cap(g.failure_signature, SIGNATURE_CAP)}",
        cap(f"Target tests:\n{_bullets(g.target_tests)}\nAcceptance: {acceptance}\n"
             f"Constraints:\n{_bullets(g.constraints)}", SECTION_CAP),
        cap(f"# Authorization\nWritable: {_globs(a.writable)}\nProtected (never edit): {_globs(a.protected)}\n"
             + grants + f"Network: {'yes' if a.network else 'no'}. Release always needs a person.", SECTION_CAP),
        cap(f"# Conditions: U = {view.u} unsatisfied\n{conds or '- (none)'}", SMALL_SECTION_CAP),
        cap(f"# Unknowns\n{_bullets(unknowns)}", SMALL_SECTION_CAP),
        f"# Budget\nStep {view.step}; steps left: {view.steps_left} "
        f"(exploration left: {view.exploration_left})\nAllowed tools: {', '.join(view.allowed_tools[:LIST_MAX])}",
        "# Current diff (already applied to the working tree)\n"
        + (f"```diff\n{cap(view.current_diff, DIFF_CAP)}\n```" if view.current_diff else "(no changes yet)"),
    ]
    tail = []
    if your_notes := notes_section(view):
        tail.append(your_notes)
    if notes:
        tail.append("# About your previous reply\n" + cap("\n".join(notes), NOTE_CAP))
    if warnings := run_ending_warnings(view):
        tail.append(warnings)
    tail.append("Propose exactly one tool call now.")
    # The files take what the other parts leave of the whole message (at most FILES_CAP).
    budget = FILES_CAP
    for _ in range(2):
        files, in_files = files_read(view, budget)
        text = "\n\n".join([*out, *([files] if files else []), _evidence_section(view, in_files), *tail])
        if len(text) <= USER_PROMPT_CAP:
            return text
        budget = max(0, budget - (len(text) - USER_PROMPT_CAP) - 100)
    return cap(text, USER_PROMPT_CAP)


def _evidence_section(view: View, in_files: frozenset[str]) -> str:
    older, recent = view.evidence[:-RECENT_FULL], view.evidence[-RECENT_FULL:]
    ev_lines = [f"# Evidence ({len(view.evidence)} items, oldest first)"]
    if len(older) > OLDER_MAX:
        ev_lines.append(f"({len(older) - OLDER_MAX} earlier items omitted)")
    if older:
        ev_lines.append(cap("\n".join(f"- {e.id} (step {e.step}) {e.tool} [{e.status}]: {cap(e.summary, SUMMARY_CAP)}"
                                       for e in older[-OLDER_MAX:]), OLDER_CAP))
    ev_lines += [render_evidence(e, len(recent) - 1 - i, in_files) for i, e in enumerate(recent)] or ["(none yet)"]
    return "\n\n".join(ev_lines)


def notes_section(view: View) -> str:
    """"Your notes": the `note` of each earlier call, newest last (the controller keeps it with the
    observation, so it is in the View)."""
    notes = [f"- step {e.step} ({e.tool}): {cap(e.note, 300)}" for e in view.evidence if e.note is not None]
    if not notes:
        return ""
    return cap("# Your notes (from your earlier calls)\n" + "\n".join(notes[-YOUR_NOTES_MAX:]), YOUR_NOTES_CAP)


def run_ending_warnings(view: View) -> str:
    """What the next action must not be: the controller's repeat and progress rules, applied to
    what this View shows, so the model is told before it ends the run, not after."""
    lines = []
    if view.evidence:
        last = view.evidence[-1]
        lines.append(f"- the same action as your last one ({cap(last.action.canonical(), 200)}): repeated_action")
    ran = dict.fromkeys(e.tool for e in view.evidence
                        if e.tool in CHECK_TOOLS and e.diff_sha256 == view.current_diff_sha256)
    if ran:
        lines.append(f"- {', '.join(ran)} again before the diff changes: no_new_evidence (it already ran on this "
                     "diff; its result is above)")
    recent_reads = dict.fromkeys(e.action.canonical() for e in view.evidence[-REREAD_WINDOW:]
                                 if e.tool in REREADABLE_TOOLS and e.diff_sha256 == view.current_diff_sha256)
    if recent_reads:
        lines.append(f"- the same read or search as one of the last {REREAD_WINDOW}, unchanged diff: no_new_evidence ("
                     + cap("; ".join(recent_reads), 600) + ")")
    return ("# Warning: these next actions would END the run\n" + "\n".join(lines)) if lines else ""

