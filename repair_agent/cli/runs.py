"""Commands that read a run back: runs, replay, show, release."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from ..untrusted.visible import terminal, terminal_json
from .common import USAGE_ERROR, err, say


def cmd_runs(args) -> int:
    from ..reports.records import load_record

    rows, unreadable = [], 0
    for run_json in sorted(Path(args.runs_dir).glob("*/run.json")):  # refused manifests have no run.json
        try:
            record = load_record(run_json.parent)
            decision = run_json.parent / "release.json"
            released = json.loads(decision.read_text())["decision"] if decision.exists() else "-"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # One damaged record hides no other run: it is named, the rest are listed.
            err(f"{run_json}: not a readable run record ({type(exc).__name__}: {str(exc)[:300]})")
            unreadable += 1
            continue
        rows.append({"run_id": record.run_id, "scenario": record.scenario, "status": record.status.value,
                     "steps": f"{record.steps_used}/{record.max_steps}", "u": record.u_trajectory[-1],
                     "chooser": record.chooser, "release": released, "run_dir": record.run_dir})
    rows += _killed_runs(Path(args.runs_dir))
    if args.json:
        print(terminal_json(rows))
    else:
        say(f"{'run id':<40} {'status':<31} {'steps':>5} {'U':>2}  {'release':<9} chooser")
        for r in rows:
            say(f"{r['run_id']:<40} {r['status']:<31} {r['steps']:>5} {r['u']:>2}  {r['release']:<9} "
                f"{r['chooser']}")
    return 1 if unreadable else 0


def _killed_runs(runs_dir: Path) -> list[dict]:
    """Runs without run.json: still running (a process that wrote their journal is alive, as resume
    checks it), or killed before they could write it (`repair-agent resume` continues those)."""
    import os

    from ..lifecycle.resume import KILLED, ResumeRefused, load_checkpoint
    from ..sandbox.leftovers import pid_alive

    rows = []
    for journal in sorted(runs_dir.glob("*/journal.jsonl")):
        if (journal.parent / "run.json").exists():
            continue
        try:
            cp = load_checkpoint(journal.parent, set_aside_torn=False)
        except (ResumeRefused, ValueError):
            continue  # a refused manifest's record, or a torn tail: resume sets it aside and says so
        b = cp.state.budget
        live = cp.status == KILLED and any(pid != os.getpid() and pid_alive(pid) for pid in cp.owner_pids)
        rows.append({"run_id": journal.parent.name, "scenario": cp.state.goal.scenario,
                     "status": "running" if live else cp.status,
                     "steps": f"{b.steps_used}/{b.max_steps}", "u": cp.state.u,
                     "chooser": cp.setup.chooser_spec or cp.setup.chooser, "release": "-",
                     "run_dir": str(journal.parent.resolve())})
    return rows


def cmd_replay(args) -> int:
    from ..loop.journal import (GrantRecord, ResumeRecord, StepRecord, evidence_by_id, last_stop, parse_record,
                          read_journal, verify_chain)
    from ..reports.records import find_run

    # A run killed before it could write run.json still has its journal: that is what to check.
    run_dir = find_run(args.run, Path(args.runs_dir), finished=False)
    lines = list(read_journal(run_dir / "journal.jsonl"))
    problems = verify_chain(lines)
    records = [parse_record(line) for line in lines]
    steps = [r for r in records if isinstance(r, StepRecord)]
    if args.faults:
        from ..reports.faults import attribute

        faults = attribute(records)
        if args.json:
            print(terminal_json([f.model_dump() for f in faults]))
        else:
            for f in faults:
                say(f"step {f.step:>3}  {f.kind:<22} {f.detail}")
            say(f"{len(faults)} finding(s); heuristics that say where to look, not verdicts")
        return 0 if not problems else 1
    if args.step is not None:
        match = [r for r in steps if r.step == args.step]
        if not match:
            err(f"no step {args.step} in {run_dir} (steps 1..{len(steps)})")
            return USAGE_ERROR
        # The View exactly as the chooser got it: its evidence rebuilt from the steps that produced it.
        view = match[0].view.view(evidence_by_id(records))
        print(terminal_json({"view": view.model_dump(mode="json"), "proposal": match[0].proposal,
                             "decision": match[0].decision.model_dump(mode="json", exclude_none=True)}))
        return 0 if not problems else 1
    say(f"{'step':>4}  {'state':>9}  {'tool':<16} {'decision':<9} {'evidence':<8} {'status':<8} U")
    for r in records:
        if isinstance(r, (GrantRecord, ResumeRecord)):
            _print_session_event(r)
        if not isinstance(r, StepRecord):
            continue
        result = r.result
        say(f"{r.step:>4}  v{r.view.state_version:>3}->{r.state_after.version:<3} {r.tool:<16} "
            f"{'accepted' if r.decision.accepted else 'rejected':<9} "
            f"{result.id if result else '-':<8} {result.status if result else '-':<8} {r.u}")
    stop = last_stop(records)
    if stop:
        say(f"stop: {stop.status.value} — {stop.detail}")
    say("hash chain: OK" if not problems else "hash chain: BROKEN\n  " + "\n  ".join(problems))
    return 0 if not problems else 1


def _print_session_event(r) -> None:
    from ..loop.journal import GrantRecord

    version = f"v{r.state_after.version - 1:>3}->{r.state_after.version:<3}"
    if isinstance(r, GrantRecord):
        g = r.grant
        say(f"{'':>4}  {version} grant by {g.who} at {g.when}: {', '.join(g.allow)} — {g.reason}")
    else:
        b = r.state_after.budget
        again = ", ".join(f"{x.evidence} {x.status}" for x in r.reverified) or "none"
        say(f"{'':>4}  {version} resume from {r.checkpoint_status}: +{r.extra_steps} step(s) "
            f"(max {b.max_steps}), {b.deadline_s:g}s; verdicts re-earned: {again}")


def cmd_show(args) -> int:
    from ..reports.records import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
    if args.diff:
        # The diff's bytes as a person must read them: an escape sequence or a carriage return that
        # would hide a line is shown by name (visible.py); decoded leniently, as the prompt shows it.
        sys.stdout.write(terminal((run_dir / "candidate.diff").read_bytes().decode("utf-8", errors="replace")))
        return 0
    if args.html or args.open:
        return _show_html(run_dir, args.open)
    if args.json:
        print(terminal_json(json.loads((run_dir / "report.json").read_text())))
    else:
        say((run_dir / "report.md").read_text())
        _warn_unsealed(run_dir)
        decision = run_dir / "release.json"
        if decision.exists():
            d = json.loads(decision.read_text())
            say(f"## Decision\n\n{d['decision']} by {d['who']} at {d['when']}"
                + (f": {d.get('reason')}" if d.get("reason") else f" — branch {d.get('branch')} commit {d.get('commit')}"))
    return 0


def _warn_unsealed(run_dir: Path) -> None:
    """A run waiting for a person whose seal does not hold: said before anyone reviews it."""
    from ..lifecycle.seal import seal_warning

    try:
        waiting = json.loads((run_dir / "run.json").read_text()).get("status") == "awaiting_release_confirmation"
    except (OSError, ValueError):
        return
    warning = seal_warning(run_dir) if waiting else None
    if warning:
        err(f"WARNING: {warning}")


def _show_html(run_dir: Path, open_it: bool) -> int:
    from ..reports.html_report import write_run_html

    # Rendered again from report.json: brings in a release decision taken since the run ended,
    # and gives runs from before report.html existed one.
    path = write_run_html(run_dir)
    print(path)
    if open_it:
        import webbrowser

        try:
            opened = webbrowser.get().open(path.as_uri())
        except webbrowser.Error:
            opened = False
        if not opened:
            err(f"no system browser found to open it; open {path.as_uri()} in a browser")
            return 1
    return 0


def cmd_release(args) -> int:
    from ..lifecycle import release
    from ..reports.records import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
    try:
        if args.reject:
            d = release.reject(run_dir, args.reason or "")
            say(f"rejected run {d['run_id']} by {d['who']}: {d['reason']}")
            return 0
        shown = None
        if not args.yes:
            if not sys.stdin.isatty():
                err("refusing to release without confirmation: pass --yes, or run in a terminal")
                return USAGE_ERROR
            data = (run_dir / "candidate.diff").read_bytes()
            # Shown by name, never sent: an escape sequence must not erase the line it hides.
            say(data.decode("utf-8", errors="replace"))
            if input("Release this diff? Type 'yes' to confirm: ").strip() != "yes":
                print("not released")
                return 1
            shown = hashlib.sha256(data).hexdigest()  # what the person saw is what is released, or nothing
        d = release.confirm(run_dir, output_dir=Path(args.output_dir) if args.output_dir else None,
                            shown_sha256=shown, branch=args.branch,
                            patch_file=Path(args.patch_file) if args.patch_file else None,
                            accept_plausible=args.accept_plausible)
        say(f"released run {d['run_id']}: " + (d.get("summary") or
                                                f"branch {d['branch']} commit {d['commit'][:12]} in {d['clone']}"))
        return 0
    except release.ReleaseRefused as exc:
        err(f"release refused: {exc}")
        return 1
