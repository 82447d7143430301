"""The debate's rule: who speaks next and which answer is submitted, from what was said."""

from __future__ import annotations

import pytest

from consortium.coord.debate.rule import DebateRule, Said


def said(*pairs: str) -> list[Said]:
    """`said("a:A", "b:-")`: speaker a answered A, b gave no answer."""
    return [Said(p.split(":")[0], None if p.endswith(":-") else p.split(":")[1]) for p in pairs]


def test_first_answers_that_agree_end_the_debate_before_it_starts() -> None:
    rule = DebateRule(("a", "b"), max_rounds=6)
    assert rule.next_speaker([]) == "a"
    assert rule.next_speaker(said("a:A")) == "b"
    assert rule.next_speaker(said("a:A", "b:A")) is None
    assert rule.final(said("a:A", "b:A")) == (1, "agreed after 0 rounds")


def test_speakers_take_turns_until_they_agree_or_the_cap() -> None:
    rule = DebateRule(("a", "b"), max_rounds=3)
    assert rule.next_speaker(said("a:A", "b:B")) == "a"
    assert rule.next_speaker(said("a:A", "b:B", "a:A")) == "b"
    assert rule.next_speaker(said("a:A", "b:B", "a:B")) is None  # a gave in
    assert rule.final(said("a:A", "b:B", "a:B")) == (2, "agreed after 1 rounds")
    held = said("a:A", "b:B", "a:A", "b:B", "a:A")
    assert rule.next_speaker(held) is None  # three later turns: the cap
    # no agreement: the answer stated most often (A: 3, B: 2), its latest turn submitted
    assert rule.final(held) == (4, "no agreement after 3 rounds: stated most often")


def test_a_tie_goes_to_the_answer_stated_first_or_to_the_lead() -> None:
    tied = said("a:A", "b:B", "a:A", "b:B")
    assert DebateRule(("a", "b"), 2).final(tied) == (
        2,
        "no agreement after 2 rounds: a tie, the answer stated first",
    )
    assert DebateRule(("a", "b"), 2, lead="b").final(tied) == (
        3,
        "no agreement after 2 rounds: a tie, b's answer",
    )


def test_no_answer_never_agrees_and_never_wins() -> None:
    rule = DebateRule(("a", "b"), max_rounds=2)
    assert rule.next_speaker(said("a:-", "b:-")) == "a"
    assert rule.final(said("a:-", "b:B")) == (1, "no agreement after 0 rounds: stated most often")
    assert rule.final(said("a:-", "b:-")) == (None, "no answer read after 0 rounds")


def test_stop_after_and_always() -> None:
    assert DebateRule(("a", "b"), 6, stop_after=0).next_speaker(said("a:A", "b:B")) is None
    assert DebateRule(("a", "b"), 6, stop_after=1).next_speaker(said("a:A", "b:B", "a:A")) is None
    always = DebateRule(("a", "b"), 6, always=True)
    assert always.next_speaker(said("a:A", "b:A")) == "a"  # one turn even when they agree
    assert always.next_speaker(said("a:A", "b:A", "a:A")) is None


def test_three_speakers_rotate_and_agree_only_all_together() -> None:
    rule = DebateRule(("a", "b", "c"), max_rounds=9)
    assert rule.next_speaker(said("a:A", "b:A", "c:B")) == "a"
    assert rule.next_speaker(said("a:A", "b:A", "c:B", "a:A")) == "b"
    assert rule.next_speaker(said("a:A", "b:A", "c:B", "a:A", "b:A", "c:A")) is None


def test_a_rule_that_cannot_be_played_is_refused() -> None:
    with pytest.raises(ValueError, match="two or more different models"):
        DebateRule(("a", "a"), 6)
    with pytest.raises(ValueError, match="lead 'z' is not one of the debaters"):
        DebateRule(("a", "b"), 6, lead="z")
