"""The operator table's edits of conditions, handlers and loops (in_sandbox/condition_edits.py), on
lines from real one-line fixes (BugsInPy and the histories of its projects: bench/fix_shapes.py)."""
from __future__ import annotations

import pytest

from repair_agent.choosers.search.weights import Family
from repair_agent.in_sandbox.condition_edits import condition_edits
from repair_agent.in_sandbox.operators import analysis_mutations, line_mutations

FAMILIES = ("condition-guard", "exception-type", "iterable-call")


def made(line: str, names: tuple[str, ...] = ()) -> dict[str, str]:
    """new line -> family, for this module's families, through the whole operator table."""
    return {new: kind for kind, _, new in line_mutations(line + "\n", (), names) if kind in FAMILIES}


@pytest.mark.parametrize("line, names, fixed", [
    # luigi: the column list may be None
    ("        if len(self.columns) > 0:", (), "        if self.columns and len(self.columns) > 0:"),
    # scrapy: the task may not exist yet
    ("        if task_no_item.running:", ("task_no_item",), "        if task_no_item and task_no_item.running:"),
    # luigi: an empty path has no directory to make
    ("    if not os.path.exists(d):", ("d",), "    if d and not os.path.exists(d):"),
    # tornado: a request without cookies
    ("        if name in self.request.cookies:", ("name",),
     "        if self.request.cookies is not None and name in self.request.cookies:"),
    # keras: the object is checked just before the operand that uses it, after the ones that do not
    ("        if model.compiled and model.optimizer.built:", ("model",),
     "        if model.compiled and model.optimizer and model.optimizer.built:"),
])
def test_a_condition_may_first_check_the_object_it_uses(line, names, fixed):
    assert made(line, names).get(fixed) == "condition-guard"


def test_an_or_keeps_its_meaning_under_the_check_and_module_objects_are_not_checked():
    out = made("    if (a or b) and c.x:", ("a", "b", "c"))
    assert "    if (a or b) and c and c.x:" in out
    assert "    return a and (a.x or b)" in made("    return a.x or b", ("a", "b"))
    # `os`, `os.path` are no variables of the scope; `d` is
    assert not any(new.lstrip().startswith(("if os ", "if os.path ")) for new in made("    if not os.path.exists(d):", ("d",)))


def test_at_most_two_objects_are_checked_each_in_two_ways():
    line = "    if a.x and b.y and c.z and d[0]:"
    assert len([e for e in condition_edits(line, ("a", "b", "c", "d")) if e[0] == "condition-guard"]) == 4
    # an object the condition already checks is not checked again
    assert not [e for e in condition_edits("    if a is not None and a.x:", ("a",)) if e[0] == "condition-guard"]
    assert not [e for e in condition_edits("    if a and a.x:", ("a",)) if e[0] == "condition-guard"]


@pytest.mark.parametrize("line, fixed", [
    ("    except (KeyError, IndexError):", "    except (KeyError, IndexError, ValueError):"),       # pandas
    ("        except (ValueError, OverflowError):", "        except (ValueError, OverflowError, TypeError):"),
    ("    except ValueError:", "    except (ValueError, TypeError):"),
    ("    except (netrc.NetrcParseError, TypeError) as e:", "    except (netrc.NetrcParseError, TypeError, ValueError) as e:"),
])
def test_a_handler_may_catch_a_common_exception_it_lacks(line, fixed):
    out = made(line)
    assert out.get(fixed) == "exception-type"
    assert len(out) <= 6


def test_a_handler_of_everything_is_not_widened():
    assert not made("    except Exception:")
    assert not made("    except:")


@pytest.mark.parametrize("line, fixed", [
    ("        for out in fds:", "        for out in list(fds):"),                                 # ansible
    ("    for key in self.sanitized_filters:", "    for key in list(self.sanitized_filters):"),
    ('    msg = "missing required arguments: %s" % ", ".join(missing)',                             # ansible
     '    msg = "missing required arguments: %s" % ", ".join(sorted(missing))'),
])
def test_a_loop_may_run_over_a_copy_and_a_join_in_sorted_order(line, fixed):
    assert made(line, ("fds", "missing")).get(fixed) == "iterable-call"


def test_loops_over_ranges_and_copies_are_left_alone():
    assert not made("    for i in range(n):", ("n",))
    assert not made("    for x in list(xs):", ("xs",))
    assert not made('    return ", ".join(sorted(names))', ("names",))


def test_the_families_are_the_chooser_s_and_the_analysis_runs_them():
    assert {Family(f) for f in FAMILIES} <= set(Family)
    families = {family for family, _, _ in analysis_mutations("    except ValueError:\n", ())}
    assert "exception-type" in families
    assert analysis_mutations("        if task.running:\n", ("task",))[0][2].endswith("\n")
