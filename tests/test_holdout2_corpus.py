"""The second held-out corpus (sandbox_repos/holdout2): 12 more bugs injected into three other PyPI
projects, built without reading the search chooser or the other corpora's bugs. Same checks as the
first held-out corpus (tests/heldout_corpora.py)."""
from __future__ import annotations

from heldout_corpora import (CORPORA, assert_goals_describe_symptoms_not_the_fix,
                             assert_kinds_mixed_and_some_fixes_add_lines, assert_no_shared_project_and_not_discovered,
                             assert_pinned_tagged_and_mirrored)

from repair_agent.scenario import SCENARIO_PATH_ENV

HOLDOUT2 = CORPORA / "holdout2"
OTHER_CORPORA = [CORPORA / "real", CORPORA / "dev", CORPORA / "holdout"]


def test_holdout2_corpus_is_pinned_tagged_and_each_fix_mirrors_its_bug():
    assert_pinned_tagged_and_mirrored(HOLDOUT2, "corpus:holdout2")


def test_holdout2_corpus_mixes_bug_kinds_and_needs_more_than_one_line_sometimes():
    assert_kinds_mixed_and_some_fixes_add_lines(HOLDOUT2)


def test_holdout2_goals_describe_symptoms_not_the_fix():
    assert_goals_describe_symptoms_not_the_fix(HOLDOUT2)


def test_holdout2_corpus_shares_no_project_with_the_other_corpora_and_is_not_discovered_by_default(monkeypatch):
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    assert_no_shared_project_and_not_discovered(HOLDOUT2, OTHER_CORPORA)
