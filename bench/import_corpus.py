"""Import a list of real fix commits both ways, and say per commit what happened and why.

    python bench/import_corpus.py LIST.toml --repos DIR --out OUT [--only PROJECT] [--no-swebench] [--resume]

LIST.toml holds `[[commit]]` tables with `project` (a clone `DIR/PROJECT`) and `sha`. For each
commit this runs, as a user would, `repair-agent import commit DIR/PROJECT SHA --environment auto`;
then, for every commit whose targets that import found, it writes a SWE-bench-style instance (base
commit = the parent, `test_patch` = the commit's test changes, `patch` = the rest, FAIL_TO_PASS = the
targets) and runs `repair-agent import swebench --environment auto` over all of them. It writes
OUT/results.json and prints one line per commit: usable or refused, and the importer's reason.

The clones are the user's (nothing here fetches or builds a project by itself); the commits used for
the measurement in docs/real-commits.md are listed there.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import git

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from repair_agent.importers.commit import split_commit  # noqa: E402

CLI = [sys.executable, "-m", "repair_agent"]


def import_commit(repo: Path, sha: str, out: Path) -> dict:
    started = time.monotonic()
    proc = subprocess.run([*CLI, "import", "commit", str(repo), sha, "--out", str(out), "--environment", "auto"],
                          capture_output=True, text=True)
    summary = json.loads((out / "import.json").read_text()) if (out / "import.json").is_file() else {"results": []}
    entry = next((r for r in summary["results"] if r["instance_id"].endswith(sha[:12])), None)
    if entry is None:
        return {"status": "crashed", "reason": (proc.stderr or proc.stdout)[-400:], "targets": [],
                "seconds": time.monotonic() - started}
    return {"status": entry["status"], "reason": entry.get("reason") or "", "targets": entry["target_tests"],
            "scenario": entry.get("scenario"), "heldout_cases": entry.get("heldout_cases", 0),
            "seconds": round(time.monotonic() - started, 1)}


def instance(repos: Path, project: str, sha: str, targets: list[str]) -> dict:
    repo = git.Repo(repos / project)
    commit = repo.commit(sha)
    parent = commit.parents[0].hexsha
    tests, fix, _ = split_commit(repo, parent, commit.hexsha)
    message = commit.message if isinstance(commit.message, str) else commit.message.decode(errors="replace")
    return {"instance_id": f"{project}-{sha[:10]}", "repo": f"corpus/{project}", "base_commit": parent,
            "patch": fix, "test_patch": tests, "FAIL_TO_PASS": targets, "PASS_TO_PASS": [],
            "problem_statement": message.strip()}


def table(results: dict, repos: Path) -> str:
    """One row per commit: what each import said, in its own words (cut to one line)."""
    def said(r: dict | None) -> str:
        if r is None:
            return "-"
        if r["status"] == "usable":
            return f"usable ({len(r['targets'])} target(s))"
        return " ".join(r["reason"].split())[:220].replace("|", "\\|")

    rows = ["| project | commit | subject | `import commit` | `import swebench` | note |", "|---|---|---|---|---|---|"]
    for v in results.values():
        subject = git.Repo(repos / v["project"]).commit(v["sha"]).summary
        # `note` / `excluded`: what a person found checking a refusal by hand (kept in results.json)
        note = (v.get("excluded") or v.get("note") or "").replace("|", "/")
        rows.append(f"| {v['project']} | `{v['sha'][:12]}` | {str(subject)[:60].replace('|', '/')} | "
                    f"{said(v['commit'])} | {said(v.get('swebench'))} | {note} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("list", type=Path)
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--no-swebench", action="store_true")
    parser.add_argument("--resume", action="store_true", help="skip commits OUT/results.json already has")
    parser.add_argument("--table", action="store_true", help="print OUT/results.json as a Markdown table and stop")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads((args.out / "results.json").read_text()), args.repos))
        return 0
    commits = tomllib.loads(args.list.read_text())["commit"]
    commits = [c for c in commits if not args.only or c["project"] in args.only]
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    for c in commits:
        key = f"{c['project']}@{c['sha'][:12]}"
        if args.resume and key in results:
            continue
        r = import_commit(args.repos / c["project"], c["sha"], args.out / "commit" / c["project"])
        results[key] = {"project": c["project"], "sha": c["sha"], "commit": r}
        print(f"{key:32} commit    {r['status']:8} {len(r['targets']):3} targets {r['seconds']:6}s  "
              f"{r['reason'][:160]}", flush=True)
        results_path.write_text(json.dumps(results, indent=1))
    if not args.no_swebench:
        todo = [(k, v) for k, v in results.items() if v["commit"]["targets"]
                and (not args.only or v["project"] in args.only)]
        # SWE-bench's naming: the clone of repo "corpus/NAME" is DIR/corpus__NAME or DIR/NAME.
        lines = [json.dumps(instance(args.repos, v["project"], v["sha"], v["commit"]["targets"])) for _, v in todo]
        jsonl = args.out / "instances.jsonl"
        jsonl.write_text("\n".join(lines) + "\n")
        out = args.out / "swebench"
        subprocess.run([*CLI, "import", "swebench", str(jsonl), "--repos", str(args.repos), "--out", str(out),
                        "--environment", "auto"], capture_output=True, text=True)
        summary = json.loads((out / "import.json").read_text()) if (out / "import.json").is_file() else {"results": []}
        by_id = {r["instance_id"]: r for r in summary["results"]}
        for key, v in todo:
            r = by_id.get(f"{v['project']}-{v['sha'][:10]}")
            v["swebench"] = ({"status": r["status"], "reason": r.get("reason") or "", "targets": r["target_tests"]}
                             if r else {"status": "missing", "reason": "not in import.json", "targets": []})
            print(f"{key:32} swebench  {v['swebench']['status']:8} {v['swebench']['reason'][:160]}", flush=True)
        results_path.write_text(json.dumps(results, indent=1))
    usable = sum(v["commit"]["status"] == "usable" for v in results.values())
    print(f"import commit: {usable}/{len(results)} usable; "
          f"import swebench: {sum(v.get('swebench', {}).get('status') == 'usable' for v in results.values())}"
          f"/{sum('swebench' in v for v in results.values())} usable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
