"""The model chooser's prompt size per step of a discount-bug run, on a scripted loopback model.

    .venv/bin/python bench/prompt_size.py [--sandbox local|docker]

The script is a plausible repair with one slip: the target test, a search, a read with line
numbers, a 150 kB patch that does not apply (its text must not come back whole), the fix, the
target test, the full suite and the scope check. Prints characters of the system and user
messages per step and a rough token count (characters / 4; the loopback server does not tokenize).
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from chat_server import ChatServer, tool_call  # noqa: E402
from repair_agent.choosers.model import ModelChooser  # noqa: E402
from repair_agent.loop.journal import read_journal  # noqa: E402
from repair_agent.lifecycle.run import execute_run  # noqa: E402
from repair_agent.scenarios.scenario import resolve  # noqa: E402

PRICING = "src/discount_shop/pricing.py"


def script() -> list[dict]:
    old = (ROOT / "sandbox_repos/discount_shop" / PRICING).read_text().splitlines(keepends=True)
    fix = "".join(difflib.unified_diff(old, [l.replace("price * (1 - discount)", "price * (1 - discount / 100)")
                                             for l in old], f"a/{PRICING}", f"b/{PRICING}"))
    junk = "".join(f"+x{i} = '{'a' * 70}'\n" for i in range(1900))
    huge = f"--- a/{PRICING}\n+++ b/{PRICING}\n@@ -1,1 +1,1900 @@\n-no such line\n" + junk
    return [tool_call("run_target_test"), tool_call("search", {"query": "price * (1 - discount)"}),
            tool_call("read_file", {"path": PRICING, "line_numbers": True}), tool_call("apply_patch", {"diff": huge}),
            tool_call("apply_patch", {"diff": fix}), tool_call("run_target_test"), tool_call("run_full_suite"),
            tool_call("check_diff")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sandbox", choices=["local", "docker"], default="local")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ChatServer(script()) as srv:
        chooser = ModelChooser(base_url=srv.base_url, model="scripted")
        record = execute_run(resolve("discount-bug"), chooser, backend=args.sandbox, runs_dir=Path(tmp))
        steps = [r for r in read_journal(Path(record.run_dir) / "journal.jsonl") if r["event"] == "step"]
        print(f"{record.status.value} in {record.steps_used} steps\n")
        print("| step | tool | system chars | user chars | total chars | ~tokens |")
        print("|---:|---|---:|---:|---:|---:|")
        for s in steps:
            system, user = (len(m["content"]) for m in s["chooser_call"]["messages"])
            tool = s["proposal"].get("tool") if isinstance(s["proposal"], dict) else "?"
            print(f"| {s['step']} | {tool} | {system} | {user} | {system + user} | {(system + user) // 4} |")
        print(f"\nlargest proposal (the failed patch): {max(len(json.dumps(s['proposal'])) for s in steps)} chars")


if __name__ == "__main__":
    main()
