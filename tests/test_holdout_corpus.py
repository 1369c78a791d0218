"""The held-out corpus (sandbox_repos/holdout): bugs injected into three PyPI projects that no
chooser was developed on, for judging a chooser once. The checks are shared with the second
held-out corpus (tests/heldout_corpora.py)."""
from __future__ import annotations

from heldout_corpora import (CORPORA, assert_goals_describe_symptoms_not_the_fix,
                             assert_kinds_mixed_and_some_fixes_add_lines, assert_no_shared_project_and_not_discovered,
                             assert_pinned_tagged_and_mirrored)

from repair_agent.scenario import SCENARIO_PATH_ENV

HOLDOUT = CORPORA / "holdout"
OTHER_CORPORA = [CORPORA / "real", CORPORA / "dev", CORPORA / "holdout2"]


def test_holdout_corpus_is_pinned_tagged_and_each_fix_mirrors_its_bug():
    assert_pinned_tagged_and_mirrored(HOLDOUT, "corpus:holdout")


def test_holdout_corpus_mixes_bug_kinds_and_needs_more_than_one_line_sometimes():
    assert_kinds_mixed_and_some_fixes_add_lines(HOLDOUT)


def test_holdout_goals_describe_symptoms_not_the_fix():
    assert_goals_describe_symptoms_not_the_fix(HOLDOUT)


def test_holdout_corpus_shares_no_project_with_the_other_corpora_and_is_not_discovered_by_default(monkeypatch):
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    assert_no_shared_project_and_not_discovered(HOLDOUT, OTHER_CORPORA)
