"""bench/imperfect_model.py, the imperfect model the model chooser is measured with (docs/models.md),
does what its docstring says on a real run through the loopback server: it writes its first edit
from memory with the whitespace wrong, copies the lines it is shown back, and mixes reply formats."""
from __future__ import annotations

import sys
from pathlib import Path

from chat_server import ChatServer
from repair_agent.choosers.model import ModelChooser
from repair_agent.loop.journal import read_journal
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from imperfect_model import ImperfectModel  # noqa: E402


def test_the_imperfect_model_fumbles_its_first_edit_and_the_current_chooser_carries_it_to_a_repair(runs_dir):
    with ChatServer([], responder=ImperfectModel()) as srv:
        chooser = ModelChooser(base_url=srv.base_url, model="imperfect-1", retry_base_s=0.001)
        rec = execute_run(resolve("discount-bug"), chooser, backend="local", runs_dir=runs_dir, max_steps=14)
    steps = [r for r in read_journal(Path(rec.run_dir) / "journal.jsonl") if r["event"] == "step"]
    tools = [s["proposal"]["tool"] for s in steps]
    assert tools == ["run_target_test", "read_file", "read_file", "search", "search", "run_full_suite",
                     "replace_in_file", "replace_in_file", "run_target_test", "run_full_suite", "check_diff"]
    assert "was not found" in steps[6]["result"]["summary"] + steps[6]["result"]["output"]  # one space too deep
    assert steps[7]["result"]["status"] == "ok"  # copied from the lines it was shown
    replies = [s["chooser_call"]["raw"]["choices"][0]["message"] for s in steps]
    assert any("<think>" in (m.get("content") or "") and "```json" in m["content"] for m in replies)
    assert any("<think>" in (m.get("content") or "") and "```" not in m["content"] for m in replies)
    assert any(m.get("tool_calls") for m in replies)
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION
