"""The pending-release report as Markdown (`report.md`); html_report.py renders the same Report as HTML."""
from __future__ import annotations

import json

from .records import Report
from ..untrusted.visible import md_code as c
from ..untrusted.visible import md_fence
from ..untrusted.visible import md_lines
from ..untrusted.visible import md_text as t


def _correctness_text(value: str | None) -> str:
    return {"correct": "correct — the visible tests pass and the behaviour checks agree (held-out cases, and generated "
                       "inputs against the reference fix where there is one)",
            "plausible": "plausible only — the visible tests pass, the behaviour checks do not agree (see below)",
            "unchecked": "unchecked — this scenario has no held-out checks (none written, none derived at import), so nothing to judge the behaviour by"}.get(
        value or "", "not judged — no green test run on the final diff")


def describe_model(model: dict | None) -> str | None:
    """One line: which model, where, with what (the reports and the sweep show the same)."""
    if not model:
        return None
    params = model.get("parameters") or {}
    shown = ", ".join(f"{k} {params[k]}" for k in ("temperature", "max_output_tokens", "max_concurrency")
                      if params.get(k) is not None)
    name = f"{model['name']}: " if model.get("name") else ""
    return f"{name}{model.get('model')} at {model.get('endpoint')}" + (f" ({shown})" if shown else "")


def describe_tokens(r: dict) -> str:
    usage = r.get("usage") or {}
    if r.get("tokens_used") is None:
        text = (f"unknown (the model endpoint reported no usage in {usage.get('unknown_steps', '?')} step(s))")
    else:
        text = str(r["tokens_used"]) + (f" of {r['max_tokens']}" if r.get("max_tokens") else "")
        if usage.get("prompt_tokens") or usage.get("completion_tokens"):
            text += f" ({usage.get('prompt_tokens')} prompt, {usage.get('completion_tokens')} completion)"
    if usage.get("cost") is not None:
        text += f"; cost {usage['cost']:.4f}"
    return text


def render_markdown(report: Report) -> str:
    r = report.model_dump(mode="json")
    # Every value from the run goes through t() (prose) or c() (a code span): what a chooser, a
    # candidate or a server wrote shows as text, never as markup, HTML or a hidden character.
    lines = [f"# Repair run {t(r['run_id'])}", "",
             f"**Status:** `{r['status']}` (exit code {r['exit_code']})  ", f"**Why:** {t(r['why'])}  ",
             f"**Next attempt would need:** {t(r['next_attempt'])}  ",
             f"**Correctness:** {_correctness_text(r.get('correctness'))}", "",
             "## Goal and constraints", "", *md_lines(r["goal"]["text"]), "",
             f"- failure signature: {c(r['goal']['failure_signature'])}",
             f"- target tests: {', '.join(c(x) for x in r['goal']['target_tests'])}"]
    lines += [f"- {t(x)}" for x in r["goal"]["constraints"]]
    sandbox = r["sandbox"]
    lines += ["", f"Sandbox: {t(sandbox['kind'])}" + ("" if sandbox.get("isolated") else
                                                      f" — **{t(sandbox.get('warning'))}**"),
              f"Chooser: {t(r['chooser'])}"]
    if r.get("model"):
        lines += [f"Model: {t(describe_model(r['model']))}"]
        requests = (r.get("usage") or {}).get("requests")
        if requests:
            lines += [f"Model requests: {requests} (retries and re-asks included); median step latency "
                      f"{(r.get('usage') or {}).get('median_step_latency_s')}s"]
    lines += ["", "## Progress", "", f"Steps used: {r['steps_used']} of {r['max_steps']}  ",
              f"Tokens used: {describe_tokens(r)}" + f"  \nWall time: {r['wall_s']:.1f}s  ",
              f"Uₜ trajectory: {' → '.join(map(str, r['u_trajectory']))}", "",
              "| condition | satisfied | decided by |", "|---|---|---|"]
    lines += [f"| {t(x['description'])} | {'yes' if x['satisfied'] else 'NO'} | {t(x['evidence'] or '—')} |"
              for x in r["conditions"]]
    if r.get("code_findings"):
        lines += ["", "## What the diff adds that needed a person's grant", ""]
        lines += [f"- {'granted' if f['granted'] else '**not granted**'}: {c(f['rule'])} at "
                  f"{c(str(f['path']) + ':' + str(f['line']))} — {c(f['construct'])} ({c(f.get('snippet', ''))}; "
                  f"key {c(f.get('key', ''))})" for f in r["code_findings"]]
    if r.get("behaviour"):
        lines += ["", "## Behaviour checks (never shown to the chooser)", ""] + [f"- {t(b)}" for b in r["behaviour"]]
    if r.get("heldout_cases"):
        lines += ["", "### Held-out cases", "",
                  "| case | ok | got | expected |", "|---|---|---|---|"]
        lines += [f"| {t(x['name'])} | {'yes' if x['ok'] else 'NO'} | {c(json.dumps(x.get('got'))[:80], cell=True)} | "
                  f"{c(json.dumps(x.get('expected'))[:80], cell=True)} |" for x in r["heldout_cases"]]
    lines += ["", "## Evidence", "", "| id | step | tool | status | source | seconds | summary |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {t(e['id'])} | {e['step']} | {t(e['tool'])} | {t(e['status'])} | {t(e['source'])} | "
              f"{e['duration_s']} | {t(e['summary'])} |" for e in r["evidence"]]
    if r["verdicts"]:
        lines += ["", "## Verdicts and what they were made on", "",
                  "| evidence | check | status | diff sha256 | protected files sha256 | current |", "|---|---|---|---|---|---|"]
        lines += [f"| {t(v['evidence'])} | {t(v['check'])} | {t(v['status'])} | `{v['diff_sha256'][:16]}` | "
                  f"`{(v['protected_manifest_sha256'] or '')[:16]}` | {'yes' if v['current'] else 'stale'} |"
                  for v in r["verdicts"]]
    if r["protected_files_sha256"]:
        lines += ["", "Protected files the verdicts were made with (restored from the verifier's own copy):", ""]
        lines += [f"- {c(path)} `{digest[:16]}`" for path, digest in sorted(r["protected_files_sha256"].items())]
    if r["faults"]:
        lines += ["", "## Faults the journal shows (heuristics: where to look)", ""]
        lines += [f"- step {f['step']}: **{t(f['kind'])}** — {t(f['detail'])}" for f in r["faults"]]
    if r["grants"]:
        lines += ["", "## Grants (a person widened the authorization)", ""]
        lines += [f"- {t(g['who'])} at {t(g['when'])} allowed {', '.join(c(a) for a in g['allow'])} after step "
                  f"{g['after_step']}: {t(g['reason'])}" for g in r["grants"]]
        lines += ["", "A grant widens what a patch may edit, never the protected suite: "
                  + (f"the verifier tested {', '.join(c(p) for p in r['restored_by_verifier'])} as its own "
                     "pristine copy, not as edited." if r["restored_by_verifier"] else
                     "every protected file is restored from the verifier's own copy before it tests.")]
    if len(r["sessions"]) > 1 or any(s["torn_tail"] for s in r["sessions"]):
        lines += ["", "## Sessions (the run was resumed from its journal)", ""]
        for n, s in enumerate(r["sessions"], 1):
            if not s["resumed_from"]:
                lines.append(f"- {n}. started {s['started_at']} (pid {s['pid']}, chooser {t(s['chooser'])})")
                continue
            again = t(", ".join(f"{x['evidence']} {x['tool']} {x['status']}" for x in s["reverified"]) or "none")
            lines.append(f"- {n}. resumed {s['started_at']} from {c(s['resumed_from'])} (pid {s['pid']}, chooser "
                         f"{t(s['chooser'])}): granted {s['extra_steps']} more step(s) and {s['deadline_s']}s; "
                         f"verdicts re-earned: {again}")
            if s["torn_tail"]:
                torn = s["torn_tail"]
                lines.append(f"  - a torn journal line ({torn['bytes']} bytes after line {torn['after_line']}) was "
                             f"set aside in {c(torn['kept_at'])}")
    lines += ["", "## Unknowns", ""] + ([f"- {t(u)}" for u in r["unknowns"]] or ["- none of the technical conditions"])
    lines += ["", f"## Diff (sha256 `{r['diff_sha256']}`)", ""]
    lines += [f"- {t(f['kind'])} {c(f['path'])} (+{f['added']} −{f['removed']})"
              for f in r["diff_files"]] or ["- no changes"]
    if r["diff"]:
        lines += ["", *md_fence(r["diff"], "diff")]
    lines += ["", "## Release", ""]
    if r["release"]:
        lines += [t(r["release"]["state"]), "", *md_fence(f"{r['release']['confirm']}\n{r['release']['reject']}")]
    else:
        lines += ["Not releasable: the run did not reach `awaiting_release_confirmation`."]
    return "\n".join(lines) + "\n"
