"""`RUN/report.html`: one run's report as a self-contained page (no network: CSS inline, the Uₜ plot
inline SVG, the diff syntax-coloured). Everything that came from the run reaches the page only
through html_page.py's autoescaping environment; report.py renders the same Report as Markdown."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String
from pygments.util import ClassNotFound
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from verifier.files import atomic_write

from .html_page import template
from .records import Report

STATUS_TONE = {"awaiting_release_confirmation": "good", "handoff_requested": "warn", "step_budget": "warn",
               "deadline": "warn", "repeated_action": "warn", "no_new_evidence": "warn"}  # others: "bad"


# -- the Uₜ trajectory -----------------------------------------------------------------------------

class PlotPoint(BaseModel):
    step: int
    u: int
    x: float
    y: float
    href: str
    label: str


class Plot(BaseModel):
    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int
    start: PlotPoint
    points: list[PlotPoint]  # one per step, each linked to its row in the step table
    line: str  # the polyline through U0 and every step
    x_ticks: list[tuple[float, int]]
    y_ticks: list[tuple[float, int]]
    budget_x: float | None  # where the step budget ends, when it fits on the axis


def trajectory_plot(report: Report, width: int = 720, height: int = 240) -> Plot:
    left, right, top, bottom = 48, width - 16, 16, height - 36
    if report.steps:
        steps = [(s.step, s.u, f"step {s.step}: {s.tool} — U={s.u}") for s in report.steps]
    else:  # a report.json from before step rows were recorded: the trajectory alone
        steps = [(i, u, f"step {i}: U={u}") for i, u in enumerate(report.u_trajectory[1:], 1)]
    u0 = report.u_trajectory[0] if report.u_trajectory else 0
    x_max = max([report.max_steps, 1] + [s for s, _, _ in steps])
    y_max = max([u0, 1] + [u for _, u, _ in steps])

    def x(step: float) -> float:
        return round(left + (right - left) * step / x_max, 1)

    def y(u: float) -> float:
        return round(bottom - (bottom - top) * u / y_max, 1)

    start = PlotPoint(step=0, u=u0, x=x(0), y=y(u0), href="#goal", label=f"start: U₀={u0}")
    points = [PlotPoint(step=s, u=u, x=x(s), y=y(u), href=f"#step-{s}", label=label) for s, u, label in steps]
    every = max(1, x_max // 12)
    return Plot(width=width, height=height, left=left, top=top, right=right, bottom=bottom, start=start,
                points=points, line=" ".join(f"{p.x},{p.y}" for p in [start, *points]),
                x_ticks=[(x(i), i) for i in range(0, x_max + 1, every)],
                y_ticks=[(y(i), i) for i in range(0, y_max + 1)],
                budget_x=x(report.max_steps) if report.max_steps <= x_max else None)


# -- the diff --------------------------------------------------------------------------------------

class DiffLine(BaseModel):
    kind: str  # add | del | ctx | hunk | note
    old: int | None = None
    new: int | None = None
    text: str
    # Syntax colour: (css class, text) pieces of `text`; class "" is plain. The template prints each
    # piece autoescaped inside a span whose class comes from this fixed table, never from the run.
    tokens: list[tuple[str, str]] = []


# Token kinds that get a colour; everything else is printed plain.
_TOKEN_CLASSES = ((Comment, "c"), (String, "s"), (Number, "m"), (Keyword, "k"), (Name.Function, "nf"),
                  (Name.Class, "nf"), (Name.Builtin, "nb"), (Name.Decorator, "nb"), (Operator, "o"))


def _lexer(path: str):
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def warm() -> None:
    """Compile the run page's template and pygments' file-name table (a first lexer lookup
    compiles every lexer's patterns): a run does this while it waits on its containers."""
    template("report.html.j2")
    _lexer("warm.py")


def _tokens(lexer, text: str) -> list[tuple[str, str]]:
    """One line in coloured pieces (line by line: a diff shows fragments, not whole files)."""
    pieces: list[tuple[str, str]] = []
    for ttype, value in lexer.get_tokens(text):
        cls = next((c for t, c in _TOKEN_CLASSES if ttype in t), "")
        if pieces and pieces[-1][0] == cls:
            pieces[-1] = (cls, pieces[-1][1] + value)
        elif value:
            pieces.append((cls, value))
    return pieces if "".join(v for _, v in pieces) == text else [("", text)]


class DiffFile(BaseModel):
    path: str
    change: str  # added | removed | modified | raw
    added: int
    removed: int
    hue: int  # each file its own colour, so a reader sees where one file ends and the next starts
    lines: list[DiffLine]


def diff_view(diff: str) -> list[DiffFile]:
    if not diff.strip():
        return []
    try:
        patch = PatchSet(diff)
    except UnidiffParseError:
        patch = None
    if not patch:  # not a unified diff unidiff understands: show it verbatim, numbered
        lines = [DiffLine(kind="ctx", new=i, text=t) for i, t in enumerate(diff.splitlines(), 1)]
        return [DiffFile(path="(unparsed diff)", change="raw", added=0, removed=0, hue=0, lines=lines)]
    files = []
    for index, patched in enumerate(patch):
        lines, lexer = [], _lexer(patched.path)
        for hunk in patched:
            header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
            lines.append(DiffLine(kind="hunk", text=f"{header} {hunk.section_header}".rstrip()))
            for line in hunk:
                kind = {"+": "add", "-": "del", " ": "ctx"}.get(line.line_type, "note")
                text = line.value.rstrip("\n")
                lines.append(DiffLine(kind=kind, old=line.source_line_no, new=line.target_line_no, text=text,
                                      tokens=_tokens(lexer, text) if kind in ("add", "del", "ctx") else []))
        change = "added" if patched.is_added_file else "removed" if patched.is_removed_file else "modified"
        files.append(DiffFile(path=patched.path, change=change, added=patched.added, removed=patched.removed,
                              hue=(index * 137 + 210) % 360, lines=lines))
    return files


# -- one run ---------------------------------------------------------------------------------------

def render_run_html(report: Report, decision: dict[str, Any] | None = None) -> str:
    """The page for one run; `decision` is release.json when a person has already decided."""
    return template("report.html.j2").render(
        r=report, plot=trajectory_plot(report), diff_files=diff_view(report.diff), decision=decision,
        tone=STATUS_TONE.get(report.status, "bad"),
        verdict_steps={s.result.id: s.step for s in report.steps if s.result})


def write_run_html(run_dir: Path, report: Report | None = None) -> Path:
    """Write RUN/report.html from the report (read from report.json when not given) and any decision."""
    run_dir = Path(run_dir)
    if report is None:
        report = Report.model_validate_json((run_dir / "report.json").read_text())
    decision_file = run_dir / "release.json"
    decision = json.loads(decision_file.read_text()) if decision_file.is_file() else None
    path = run_dir / "report.html"
    atomic_write(path, render_run_html(report, decision))
    return path
