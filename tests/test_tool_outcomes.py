"""What the executor hands the controller, typed per tool, on a real local sandbox: a search's hits as
records, and an explicit `capped` when the sandbox kept only the head of a command's output."""
from __future__ import annotations

from helpers import calc_sandbox

from repair_agent.loop.actions import ReadFile, Search
from repair_agent.loop.tools import Executor

# Longer than what one command returns inline (64 KiB): every line matches a search for "value_".
BIG = "".join(f"value_{n} = {n}  # a line of padding to make the module long\n" for n in range(3000))


def _executor(tmp_path) -> Executor:
    # Reads and searches run in the sandbox alone: the verifier serves only the check tools.
    return Executor(calc_sandbox(tmp_path, source=BIG), verifier=None, localize=False)  # type: ignore[arg-type]


def test_a_capped_read_says_so_and_a_whole_one_does_not(tmp_path):
    executor = _executor(tmp_path)
    whole = executor.dispatch(ReadFile(path="src/calc.py", start_line=1, end_line=5), "")
    assert whole.status == "ok" and not whole.capped and whole.output == "".join(BIG.splitlines(True)[:5])
    capped = executor.dispatch(ReadFile(path="src/calc.py"), "")
    assert capped.status == "ok" and capped.capped and "[output capped" in capped.output
    assert capped.journal_data()["stdout_truncated"] is True and capped.journal_data()["stdout_bytes"] == len(BIG)


def test_search_hits_are_records_and_a_capped_search_leaves_out_its_cut_last_line(tmp_path):
    executor = _executor(tmp_path)
    lines = BIG.splitlines()
    few = executor.dispatch(Search(query="value_12 ="), "")
    assert [(h.path, h.line, h.text) for h in few.hits] == [("src/calc.py", 13, lines[12])] and not few.capped
    many = executor.dispatch(Search(query="value_"), "")
    assert many.capped and 0 < len(many.hits) < len(lines)
    # Every hit is a whole line of the file at the line it names: the cut line is not one of them.
    assert all(h.path == "src/calc.py" and h.text == lines[h.line - 1] for h in many.hits)
    assert [h.line for h in many.hits] == list(range(1, len(many.hits) + 1))
