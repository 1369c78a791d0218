"""A deterministic *imperfect model* on the loopback Chat Completions server (tests/chat_server.py),
for measuring how a model chooser copes with the mistakes real models make.

    python bench/imperfect_model.py        # prints its base URL (http://127.0.0.1:PORT/v1), serves until killed

It reads each request's prompt and decides from its text alone, as a model would:

- the scenario is the one named in "# Goal (NAME)"; what to change is that scenario's reference fix
  (sandbox_repos/bugs/*.fix.diff). It is an oracle for *what* the fix is: what is measured is how
  the chooser carries a model's imperfect way of *writing* it, not a model's reasoning;
- it works like a cautious model: the target test, a read of the file to fix, four steps of
  exploration (the test file, two searches, the full suite), then the edit. So the file it read is
  six observations old when it edits: a chooser that no longer shows it makes the model forget it;
- it copies an edit's lines exactly only when they are in the prompt it is sent; otherwise it writes
  them from memory with the whitespace wrong (each indented line one space too deep, and in a
  diff, context lines without their leading space), hunk headers a few lines off. After a failed
  edit, if the lines are still not in the prompt, it reads the file again;
- it uses replace_in_file when the request offers it (one hunk at a time), else apply_patch;
- its replies rotate between a native tool call, a <think> block with prose and a ```json fence,
  and a <think> block with prose and the bare JSON after it; asked again after an unusable reply,
  it answers with a native tool call;
- a fix outside the prompt's writable globs, or a failed target test after the edit: it stops.

The same program serves any chooser version: it reads only the prompt text and the offered tools.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import time
from pathlib import Path

from unidiff import PatchSet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from chat_server import ChatServer, content, tool_call  # noqa: E402

SCENARIOS = ROOT / "sandbox_repos"
EVIDENCE = re.compile(r"^### (E\d+) \(step (\d+)\) (\w+) \[(\w+)\]\naction: (.*)$", re.M)
OLDER = re.compile(r"^- (E\d+) \(step (\d+)\) (\w+) \[(\w+)\]: (.*)$", re.M)


def reference_fix(scenario: str) -> str | None:
    for manifest in SCENARIOS.rglob(f"{scenario}.scenario.toml"):
        found = re.search(r'^reference_fix\s*=\s*"([^"]+)"', manifest.read_text(), re.M)
        if found and (manifest.parent / found[1]).is_file():
            return (manifest.parent / found[1]).read_text()
    return None


def hunks(diff: str) -> list[dict]:
    """[{path, start, old: [lines], new: [lines]}] of a unified diff (context kept in both)."""
    out = []
    for patched in PatchSet(diff):
        for hunk in patched:
            old = [row.value.removesuffix("\n") for row in hunk.source_lines()]
            new = [row.value.removesuffix("\n") for row in hunk.target_lines()]
            out.append({"path": patched.path, "start": hunk.source_start, "old": old, "new": new})
    return out


def evidence(prompt: str) -> list[dict]:
    items = [{"step": int(m[2]), "tool": m[3], "status": m[4], "text": m[5]} for m in OLDER.finditer(prompt)]
    items += [{"step": int(m[2]), "tool": m[3], "status": m[4], "text": m[5]} for m in EVIDENCE.finditer(prompt)]
    return sorted(items, key=lambda e: e["step"])


def visible(prompt: str, lines: list[str]) -> bool:
    """The lines, exactly, in the prompt: in a file read (numbered or not) or in an output."""
    body = [line for line in lines if line.strip()]
    if not body:
        return True
    plain = re.sub(r"^ *\d+\t", "", prompt, flags=re.M)  # read_file's numbering, as a model strips it
    return "\n".join(lines).strip("\n") in plain


def sloppy(lines: list[str]) -> list[str]:
    """From memory: every indented line one space too deep."""
    return [" " + line if line.startswith(" ") else line for line in lines]


def patch_of(hs: list[dict], exact: bool) -> str:
    out, path = [], None
    for h in hs:
        if h["path"] != path:
            path = h["path"]
            out += [f"--- a/{path}", f"+++ b/{path}"]
        old_n, new_n = len(h["old"]), len(h["new"])
        out.append(f"@@ -{h['start'] + 3},{old_n} +{h['start'] + 3},{new_n} @@")  # a few lines off
        # Rebuild the hunk body: context, removals, additions, in the diff's own order.
        body = _hunk_body(h)
        for kind, line in body:
            if kind == " ":
                out.append((" " + line) if exact else (line[1:] if line.startswith(" ") else line))
            else:
                out.append(kind + (line if exact else sloppy([line])[0]))
    return "\n".join(out) + "\n"


def _hunk_body(h: dict) -> list[tuple[str, str]]:
    """Context / removed / added lines of a hunk from its old and new sides (common prefix and suffix
    are context)."""
    old, new = h["old"], h["new"]
    p = 0
    while p < min(len(old), len(new)) and old[p] == new[p]:
        p += 1
    s = 0
    while s < min(len(old), len(new)) - p and old[-1 - s] == new[-1 - s]:
        s += 1
    body = [(" ", x) for x in old[:p]] + [("-", x) for x in old[p:len(old) - s]]
    body += [("+", x) for x in new[p:len(new) - s]] + [(" ", x) for x in old[len(old) - s:]]
    return body


def changed_lines(h: dict) -> tuple[list[str], list[str]]:
    """The smallest old/new pair that makes the hunk's change, for replace_in_file."""
    body = _hunk_body(h)
    old = [x for k, x in body if k == "-"]
    new = [x for k, x in body if k == "+"]
    if not old:  # a pure addition: anchor on the context line before it
        before = [x for k, x in body if k == " "][:1]
        return before, before + new
    return old, new


class ImperfectModel:
    def __call__(self, body: dict) -> dict:
        messages = body["messages"]
        prompt = messages[1]["content"] if len(messages) > 1 else ""
        tools = {t["function"]["name"] for t in body.get("tools", [])}
        call = self.decide(prompt, tools)
        reasked = any("could not be used" in (m.get("content") or "") for m in messages[2:] if m["role"] == "user")
        step = int(m[1]) if (m := re.search(r"^Step (\d+);", prompt, re.M)) else 1
        return self.written(call, step, reasked)

    @staticmethod
    def written(call: tuple[str, dict], step: int, reasked: bool) -> dict:
        name, args = call
        if reasked or step % 3 == 1:
            return tool_call(name, args)
        text = json.dumps({"name": name, "arguments": args})
        think = f"<think>\nThe evidence so far points at the next step: {name}.\n</think>\n"
        if step % 3 == 2:
            return content(f"{think}I will call {name} now.\n```json\n{text}\n```\n")
        return content(f"{think}Next I will call {name}.\n{text}")

    def decide(self, prompt: str, tools: set[str]) -> tuple[str, dict]:
        goal = re.search(r"^# Goal \(([^)]+)\)", prompt, re.M)
        fix = reference_fix(goal[1]) if goal else None
        seen = evidence(prompt)
        done = lambda tool, needle="": [e for e in seen if e["tool"] == tool and needle in e["text"]]  # noqa: E731
        if not done("run_target_test"):
            return "run_target_test", {}
        if fix is None:
            return "stop", {"reason": "no idea what to change", "summary": "the target test fails; I found no fix"}
        hs = hunks(fix)
        writable = re.search(r"^Writable: (.*)$", prompt, re.M)
        globs = [g.strip() for g in writable[1].split(",")] if writable else []
        paths = list(dict.fromkeys(h["path"] for h in hs))
        if not all(any(fnmatch.fnmatch(p, g) for g in globs) for p in paths):
            return "stop", {"reason": "the fix is outside the writable files",
                            "summary": f"the change belongs in {', '.join(paths)}, which I may not edit"}
        main = paths[0]
        if not done("read_file", main):
            return "read_file", {"path": main}
        target = re.search(r"^Target tests:\n- ([^:\n]+)::(\w+)", prompt, re.M)
        exploration = []
        if target:
            exploration += [("read_file", {"path": target[1]}), ("search", {"query": target[2]})]
        token = re.search(r"[A-Za-z_]{4,}", " ".join(changed_lines(hs[0])[0]) or "def")
        exploration += [("search", {"query": token[0] if token else "def"}), ("run_full_suite", {})]
        edits = [e for e in seen if e["tool"] in ("apply_patch", "replace_in_file")]
        if not edits:
            for name, args in exploration:
                needle = json.dumps(args.get("path") or args.get("query") or "")[1:-1]
                if not done(name, needle):
                    return name, args
        current = re.search(r"```diff\n(.*?)\n```", prompt, re.S)
        diff = current[1] if current else ""
        left = [h for h in hs if not all(line in diff for line in changed_lines(h)[1] if line.strip())]
        if left:
            last = edits[-1] if edits else None
            if last and last["status"] != "ok" and not all(visible(prompt, h["old"]) for h in left) \
                    and not (seen[-1]["tool"] == "read_file"):
                return "read_file", {"path": left[0]["path"]}  # it forgot: look again
            exact = bool(edits) and all(visible(prompt, changed_lines(h)[0]) for h in left[:1])
            if "replace_in_file" in tools:
                old, new = changed_lines(left[0])
                if not exact:
                    old = sloppy(old)
                return "replace_in_file", {"path": left[0]["path"], "old": "\n".join(old) + "\n",
                                           "new": "\n".join(new) + "\n"}
            exact = bool(edits) and all(visible(prompt, h["old"]) for h in left)
            return "apply_patch", {"diff": patch_of(left, exact)}
        last_edit = max(e["step"] for e in edits if e["status"] == "ok")
        after = [e for e in seen if e["step"] > last_edit]
        checks = {e["tool"]: e for e in after}
        if "run_target_test" not in checks:
            return "run_target_test", {}
        if checks["run_target_test"]["status"] != "ok":
            return "stop", {"reason": "my fix did not make the target pass", "summary": "the target still fails"}
        if "run_full_suite" not in checks:
            return "run_full_suite", {}
        if "check_diff" not in checks:
            return "check_diff", {}
        return "stop", {"reason": "done", "summary": "the fix is in and checked"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    server = ChatServer([], responder=ImperfectModel())
    server.start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
