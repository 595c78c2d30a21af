"""Grouping proposals for new modes by the words they use (pure, no database)."""

from annotator.codebook.grouping import Proposal, group_proposals, similarity, words


def test_descriptions_of_the_same_failure_in_other_words_fall_in_one_group():
    proposals = [
        Proposal(
            1, "The agent keeps calling the same tool with identical arguments", "tool loop", ("FM-1.3",)
        ),
        Proposal(2, "Repeated identical tool calls, same arguments every time", "", ("FM-1.3", "FM-3.1")),
        Proposal(3, "It cites a web page that does not exist", "fabricated source"),
        Proposal(4, "Identical tool calls repeated until the step limit", ""),
        Proposal(5, "Cites a source page that never existed", "", ("FM-3.3",)),
    ]
    groups = group_proposals(proposals)
    assert [g.ids for g in groups] == [(1, 2, 4), (3, 5)]
    loop = groups[0]
    assert "identical" in loop.terms and "tool" in loop.terms
    assert loop.cooccurring == (("FM-1.3", 2), ("FM-3.1", 1))
    assert loop.names == ("tool loop",)


def test_words_drop_stop_words_short_words_and_plurals():
    assert words("The agents kept calling tools, again and AGAIN") == {"kept", "calling", "tool"}
    assert similarity(frozenset(), frozenset({"x"})) == 0.0


def test_grouping_is_deterministic_and_every_proposal_is_in_one_group():
    proposals = [Proposal(i, f"failure number {i % 3} happens in module {i % 2}") for i in range(12)]
    first, second = group_proposals(proposals), group_proposals(list(reversed(proposals)))
    assert sorted(i for g in first for i in g.ids) == list(range(12))
    assert {g.ids for g in first} == {g.ids for g in second}
