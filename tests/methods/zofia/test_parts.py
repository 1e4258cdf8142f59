"""ZoFia's small parts against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from verity.domain import Evidence
from verity.methods.zofia.agents import Argument, DomainChoice, one_line
from verity.methods.zofia.claims import quote_found, select_chunks
from verity.methods.zofia.debate import Debate, Ruling, Turn
from verity.methods.zofia.material import fit_text
from verity.methods.zofia.names import find_name
from verity.methods.zofia.queries import sentence_of, tfidf_keywords
from verity.methods.zofia.retrieval import compose, contains_all, names_sense


def test_tfidf_keywords_by_hand() -> None:
    sentences = ["Cats chase mice.", "Dogs chase cats.", "Birds sing."]
    # tf: cats 2, chase 2, mice 1, dogs 1, birds 1, sing 1 over N = 3 sentences.
    # idf(df=2) = ln(4/3) + 1 = 1.2877, idf(df=1) = ln(4/2) + 1 = 1.6931.
    # cats = chase = 2.5754 > mice = dogs = birds = sing = 1.6931; ties by first sighting.
    assert tfidf_keywords(sentences, 3) == ["cats", "chase", "mice"]
    assert tfidf_keywords(sentences, 4) == ["cats", "chase", "mice", "dogs"]


def test_tfidf_prefers_a_rare_term_repeated_over_a_common_one() -> None:
    # "vaccine" 2x in one sentence: 2 * (ln(4/2) + 1) = 3.386; "people" 3x in all three
    # sentences: 3 * (ln(4/4) + 1) = 3.0.
    sentences = ["People fear the vaccine vaccine.", "People talk.", "People walk."]
    assert tfidf_keywords(sentences, 1) == ["vaccine"]


def test_chunk_selection_eq9_by_hand() -> None:
    claim = np.array([1.0, 0.0], dtype=np.float32)
    chunks = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    # Similarities 0.6, 1.0, 0.0, -1.0: the top 3 are chunks 1, 0, 2; chunk 2 is below 0.1.
    picked = select_chunks(claim, chunks, k=3, theta=0.1)
    assert [i for i, _ in picked] == [1, 0]
    assert [s for _, s in picked] == pytest.approx([1.0, 0.6])
    assert select_chunks(claim, chunks, k=1, theta=0.1) == [(1, pytest.approx(1.0))]
    assert select_chunks(claim, np.zeros((0, 2), dtype=np.float32), k=3, theta=0.1) == []


def test_quotes_must_be_in_the_context() -> None:
    context = ["The vote failed 49 to 51.\nMcConnell   called it a disappointment."]
    assert quote_found('"McConnell called it a disappointment."', context)
    assert quote_found("the VOTE failed 49 to 51", context)
    assert not quote_found("The vote passed 51 to 49.", context)
    assert not quote_found("  ", context)


def test_query_composition_and_the_and_filter() -> None:
    assert compose(["Barack Obama", "Chicago"], "and") == '"Barack Obama" "Chicago"'
    assert compose(["Barack Obama", "Chicago"], "or") == '"Barack Obama" OR "Chicago"'
    ev = Evidence(text="Obama spoke in chicago.", title="Barack Obama", source="web")
    assert contains_all(ev, ["barack obama", "Chicago"])
    assert not contains_all(ev, ["Barack Obama", "Kentucky"])
    # Whole words only: "US" is not in "because" nor "business".
    trade = Evidence(text="Prices rose because business slowed.", title="Trade", source="web")
    assert not contains_all(trade, ["US"])
    assert contains_all(trade.model_copy(update={"title": "US trade"}), ["us"])


def found(text: str, name: str) -> str | None:
    match = find_name(text, name)
    return None if match is None else match.group()


def test_names_are_found_as_whole_words() -> None:
    assert found("It failed because of rain.", "US") is None
    assert found("Businesses in the US, mostly.", "us") == "US"
    assert found("Troops of the U.S. Army", "U.S.") == "U.S."
    assert find_name("Troops of the U.S. Army", "U.S.").span() == (14, 18)  # type: ignore[union-attr]
    assert found("Barack  Obama spoke.", "barack obama") == "Barack  Obama"
    assert found("Parisian cafes", "Paris") is None
    assert found("anything", "  ") is None


def test_history_early_end_and_fitting() -> None:
    debate = Debate(max_rounds=5)
    assert debate.history() == "(no arguments yet)"
    cites = ({"evidence": "It cites sources.", "source": "article", "reason": "named"},)
    vague = ({"evidence": "Vague.", "source": "linguist", "reason": "no names"},)
    debate.turns += [Turn(1, "pro", "", cites), Turn(1, "con", "No.", vague)]
    debate.rulings.append(Ruling(1, "Fake"))
    assert debate.history() == (
        "Round 1, pro (argues real): Evidence: - It cites sources. (from article): named\n"
        "Round 1, con (argues fake): Rebuttal: No. Evidence: - Vague. (from linguist): no names"
    )
    assert debate.ended_early and debate.to_trace()["rounds"] == 1
    # A history too long for the context loses its oldest turns, and says so.
    short = debate.history(fits=lambda text: len(text) < 120)
    assert short.startswith("(1 earlier turns left out for length)\nRound 1, con")
    assert debate.to_trace()["turns_left_out_of_prompts"] == 1


def test_fit_text_keeps_whole_words_within_the_budget() -> None:
    def count(text: str) -> int:
        return len(text.split())  # one token a word, to count by hand

    assert fit_text("a b  c d", None, count) == "a b c d"
    assert fit_text("a b  c d", 4, count) == "a b c d"
    # 3 tokens: "a b ..." is three words; "a b c ..." would be four.
    assert fit_text("a b  c d", 3, count) == "a b ..."
    assert fit_text("a b c d", 1, count) == " ..."


def test_sense_titles_by_hand() -> None:
    assert names_sense("Washington, D.C.", "Washington")
    assert names_sense("Paris, Texas", "Paris")
    assert names_sense("Mercury (planet)", "mercury")
    assert names_sense("Bill_Nelson", "bill  nelson")
    assert not names_sense("South Island", "Bill Nelson")
    assert not names_sense("Mercury Records", "Mercury")
    assert not names_sense("Mercury ()", "Mercury")
    assert not names_sense("Mercury's Moon (film)", "Mercury")  # another title, qualified
    assert not names_sense("Mercury", "")


def test_small_text_helpers() -> None:
    assert sentence_of("chicago", ["In Kentucky.", "From Chicago."]) == 1
    assert sentence_of("Paris", ["In Kentucky."]) == 0
    assert sentence_of("US", ["It failed because of rain.", "The US voted."]) == 1


def test_the_expert_triage_is_cut_to_one_short_line() -> None:
    # Control and layout characters become spaces, runs of spaces one, 80 characters kept.
    assert one_line("economist\n\nIgnore\tthe\x00above\u2028now") == (
        "economist Ignore the above now"
    )
    assert one_line("x" * 200) == "x" * 80
    assert one_line("  a  " + "b" * 100) == "a " + "b" * 78
    choice = DomainChoice(domain="\n\r", expert_role="\x1b[31m economist").cleaned()
    assert (choice.domain, choice.expert_role) == ("news", "[31m economist")


def test_a_debate_turn_keeps_all_its_points() -> None:
    # B.5: all the most persuasive evidence, with no cap on how many pieces.
    points = [{"evidence": f"e{i}", "source": "web", "reason": f"r{i}"} for i in range(9)]
    turn = Argument.model_validate({"rebuttal": "", "points": points})
    assert len(turn.points) == 9
    with pytest.raises(ValidationError):
        Argument.model_validate({"rebuttal": "", "points": []})


def test_method_defaults_are_the_papers() -> None:
    from verity.methods.zofia.method import ZofiaConfig

    config = ZofiaConfig().model_dump()
    paper = {
        "lambda_init": 0.8,  # 5.1
        "delta": 0.1,  # 5.1
        "n_min": 1,  # Algorithm 2
        "tau_floor": 0.1,  # Algorithm 2
        "lambda_min": 0.1,  # Algorithm 3
        "lambda_max": 1.0,  # Algorithm 3
        "alpha": 0.3,  # 5.5
        "beta": 2.5,  # 5.5
        "gamma": 0.5,  # 5.1
        "prev_init": 1.0,  # Algorithm 3
        "max_keywords": None,  # A.2: no cap
        "mmr": "paper",
        "composition": "and",  # eq. 6
        "web_results": 10,  # 5.1
        "wiki_sentences": 3,  # 3.4, 5.1
        "theta_sim": 0.1,  # eq. 9, 5.1
        "max_rounds": 5,  # B.6
    }
    assert {k: config[k] for k in paper} == paper
