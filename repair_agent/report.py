"""The pending-release report as Markdown (`report.md`); html_report.py renders the same Report as HTML."""
from __future__ import annotations

import json

from .records import Report


def _correctness_text(value: str | None) -> str:
    return {"correct": "correct — the visible tests pass and the behaviour checks agree (held-out cases, and generated "
                       "inputs against the reference fix where there is one)",
            "plausible": "plausible only — the visible tests pass, the behaviour checks do not agree (see below)",
            "unchecked": "unchecked — this scenario has no held-out checks and no reference fix"}.get(
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
    lines = [f"# Repair run {r['run_id']}", "",
             f"**Status:** `{r['status']}` (exit code {r['exit_code']})  ", f"**Why:** {r['why']}  ",
             f"**Next attempt would need:** {r['next_attempt']}  ",
             f"**Correctness:** {_correctness_text(r.get('correctness'))}", "",
             "## Goal and constraints", "", r["goal"]["text"], "",
             f"- failure signature: `{r['goal']['failure_signature']}`",
             f"- target tests: {', '.join(f'`{t}`' for t in r['goal']['target_tests'])}"]
    lines += [f"- {c}" for c in r["goal"]["constraints"]]
    sandbox = r["sandbox"]
    lines += ["", f"Sandbox: {sandbox['kind']}" + ("" if sandbox.get("isolated") else f" — **{sandbox.get('warning')}**"),
              f"Chooser: {r['chooser']}"]
    if r.get("model"):
        lines += [f"Model: {describe_model(r['model'])}"]
        requests = (r.get("usage") or {}).get("requests")
        if requests:
            lines += [f"Model requests: {requests} (retries and re-asks included); median step latency "
                      f"{(r.get('usage') or {}).get('median_step_latency_s')}s"]
    lines += ["", "## Progress", "", f"Steps used: {r['steps_used']} of {r['max_steps']}  ",
              f"Tokens used: {describe_tokens(r)}" + f"  \nWall time: {r['wall_s']:.1f}s  ",
              f"Uₜ trajectory: {' → '.join(map(str, r['u_trajectory']))}", "",
              "| condition | satisfied | decided by |", "|---|---|---|"]
    lines += [f"| {c['description']} | {'yes' if c['satisfied'] else 'NO'} | {c['evidence'] or '—'} |"
              for c in r["conditions"]]
    if r.get("code_findings"):
        lines += ["", "## What the diff adds that needed a person's grant", ""]
        lines += [f"- {'granted' if f['granted'] else '**not granted**'}: `{f['rule']}` at `{f['path']}:{f['line']}` — "
                  f"`{f['construct']}` (`{f.get('snippet', '')}`; key `{f.get('key', '')}`)" for f in r["code_findings"]]
    if r.get("behaviour"):
        lines += ["", "## Behaviour checks (never shown to the chooser)", ""] + [f"- {b}" for b in r["behaviour"]]
    if r.get("heldout_cases"):
        lines += ["", "### Held-out cases", "",
                  "| case | ok | got | expected |", "|---|---|---|---|"]
        lines += [f"| {c['name']} | {'yes' if c['ok'] else 'NO'} | `{json.dumps(c.get('got'))[:80]}` | "
                  f"`{json.dumps(c.get('expected'))[:80]}` |" for c in r["heldout_cases"]]
    lines += ["", "## Evidence", "", "| id | step | tool | status | source | seconds | summary |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {e['id']} | {e['step']} | {e['tool']} | {e['status']} | {e['source']} | {e['duration_s']} | "
              f"{e['summary'].replace('|', '/')} |" for e in r["evidence"]]
    if r["verdicts"]:
        lines += ["", "## Verdicts and what they were made on", "",
                  "| evidence | check | status | diff sha256 | protected files sha256 | current |", "|---|---|---|---|---|---|"]
        lines += [f"| {v['evidence']} | {v['check']} | {v['status']} | `{v['diff_sha256'][:16]}` | "
                  f"`{(v['protected_manifest_sha256'] or '')[:16]}` | {'yes' if v['current'] else 'stale'} |"
                  for v in r["verdicts"]]
    if r["protected_files_sha256"]:
        lines += ["", "Protected files the verdicts were made with (restored from the verifier's own copy):", ""]
        lines += [f"- `{path}` `{digest[:16]}`" for path, digest in sorted(r["protected_files_sha256"].items())]
    if r["faults"]:
        lines += ["", "## Faults the journal shows (heuristics: where to look)", ""]
        lines += [f"- step {f['step']}: **{f['kind']}** — {f['detail']}" for f in r["faults"]]
    if r["grants"]:
        lines += ["", "## Grants (a person widened the authorization)", ""]
        lines += [f"- {g['who']} at {g['when']} allowed {', '.join(f'`{a}`' for a in g['allow'])} after step "
                  f"{g['after_step']}: {g['reason']}" for g in r["grants"]]
        lines += ["", "A grant widens what a patch may edit, never the protected suite: "
                  + (f"the verifier tested {', '.join(f'`{p}`' for p in r['restored_by_verifier'])} as its own "
                     "pristine copy, not as edited." if r["restored_by_verifier"] else
                     "every protected file is restored from the verifier's own copy before it tests.")]
    if len(r["sessions"]) > 1 or any(s["torn_tail"] for s in r["sessions"]):
        lines += ["", "## Sessions (the run was resumed from its journal)", ""]
        for n, s in enumerate(r["sessions"], 1):
            if not s["resumed_from"]:
                lines.append(f"- {n}. started {s['started_at']} (pid {s['pid']}, chooser {s['chooser']})")
                continue
            again = ", ".join(f"{x['evidence']} {x['tool']} {x['status']}" for x in s["reverified"]) or "none"
            lines.append(f"- {n}. resumed {s['started_at']} from `{s['resumed_from']}` (pid {s['pid']}, chooser "
                         f"{s['chooser']}): granted {s['extra_steps']} more step(s) and {s['deadline_s']}s; "
                         f"verdicts re-earned: {again}")
            if s["torn_tail"]:
                t = s["torn_tail"]
                lines.append(f"  - a torn journal line ({t['bytes']} bytes after line {t['after_line']}) was set "
                             f"aside in `{t['kept_at']}`")
    lines += ["", "## Unknowns", ""] + ([f"- {u}" for u in r["unknowns"]] or ["- none of the technical conditions"])
    lines += ["", f"## Diff (sha256 `{r['diff_sha256']}`)", ""]
    lines += [f"- {f['kind']} `{f['path']}` (+{f['added']} −{f['removed']})" for f in r["diff_files"]] or ["- no changes"]
    if r["diff"]:
        lines += ["", "```diff", r["diff"].rstrip("\n"), "```"]
    lines += ["", "## Release", ""]
    if r["release"]:
        lines += [r["release"]["state"], "", "```", r["release"]["confirm"], r["release"]["reject"], "```"]
    else:
        lines += ["Not releasable: the run did not reach `awaiting_release_confirmation`."]
    return "\n".join(lines) + "\n"
