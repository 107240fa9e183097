from __future__ import annotations

from tracing.core.anchoring import anchor_report
from tracing.core.anchoring.rules.wrong_relation import relation_cues, wrong_relation
from tracing.core.steps import Step

BIRTH_Q = "In which town was the author of the novel The Salt Lantern born?"
VASQUEL = ("Orren Vasquel (1928-1994) was a novelist. He grew up in Mirefield, the mill town he called home all his "
           "life. Parish records show that he was born in Calder Bay, where his parents lived for a year.")


def test_cues_drop_names_titles_and_the_answer_type():
    assert relation_cues(BIRTH_Q) == {"author", "novel", "born"}
    assert "town" not in relation_cues(BIRTH_Q)  # "which town" names the kind of answer
    assert relation_cues("How many seats does the Tolbey Quary Playhouse have?") == set()


def test_the_hometown_for_the_birthplace_is_a_slip():
    slip = wrong_relation(BIRTH_Q, "Mirefield", [(2, VASQUEL)])
    assert slip is not None and slip["rival"] == "Calder Bay" and slip["cues"] == ["born"] and slip["slot"] == "place"
    assert wrong_relation(BIRTH_Q, "Calder Bay", [(2, VASQUEL)]) is None


def test_a_bridge_relation_in_another_sentence_is_not_a_slip():
    q = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
    page = ("She served as Chief of Protocol of the United States. "
            "Temple portrayed Corliss Archer in the film Kiss and Tell in 1945.")
    assert wrong_relation(q, "Chief of Protocol", [(3, page)]) is None


def test_figures_in_the_same_slot():
    q = "What net profit did Brightwell report for 2023, in millions?"
    page = "Adjusted net profit came to 48.2 million. The reported net profit came to 41.7 million."
    slip = wrong_relation(q, "48.2", [(4, page)])
    assert slip is not None and slip["rival"] == "41.7" and slip["cues"] == ["report"]
    assert wrong_relation(q, "41.7", [(4, page)]) is None
    # "of" marks no slot: "the founder of X" next to "a college of Y" is no slip.
    q2 = "In which city is the college attended by the founder of Tarn Instruments?"
    page2 = "Mira Okonjo is the founder of Tarn Instruments. She studied at the college of Fenwick."
    assert wrong_relation(q2, "Fenwick", [(8, page2)]) is None


def test_chinese_birthplace_slip():
    q = "《无岗》的作者出生在哪个城市？"
    page = "作者林舟成长于青石镇。林舟出生于白沙市。"
    slip = wrong_relation(q, "青石镇", [(2, page)])
    assert slip is not None and slip["rival"].startswith("白沙市")
    assert wrong_relation(q, "白沙市", [(2, page)]) is None


def test_only_the_latest_observation_with_the_answer_is_judged_and_odd_input_is_quiet():
    assert wrong_relation(BIRTH_Q, "Mirefield", [(2, VASQUEL), (5, "Mirefield is a mill town.")]) is None
    assert wrong_relation(BIRTH_Q, "", [(2, VASQUEL)]) is None
    assert wrong_relation("", "Mirefield", [(2, VASQUEL)]) is None
    assert wrong_relation(BIRTH_Q, "x" * 200, [(2, VASQUEL)]) is None


def test_the_report_places_the_break_at_the_thought_that_took_the_value():
    steps = [Step(0, "action", tool="search", args={"query": "Orren Vasquel"}),
             Step(1, "observation", text=VASQUEL),
             Step(2, "thought", text="The page says he grew up in Mirefield, so the answer is Mirefield."),
             Step(3, "final", text="Mirefield", tool="finish", args={"answer": "Mirefield"})]
    report = anchor_report(steps, BIRTH_Q)
    assert report.first_break == 2
    assert "born to Calder Bay" in report.reason and "Mirefield" in report.reason
    assert report.evidence["pattern"] == "wrong_relation"


def test_chinese_clauses_and_slot_classes():
    q = "小说《雾港信札》的作者出生在哪个城市？"
    page = ("林墨川（1931—2002），小说家。他在青石镇长大，常说青石镇是他的故乡。"
            "据户籍档案，他出生于白沙市，一岁时随父母迁居青石镇。")
    slip = wrong_relation(q, "青石镇", [(5, page)])
    assert slip is not None and slip["rival"].startswith("白沙市") and slip["slot"] == "place"
    assert wrong_relation(q, "白沙市", [(5, page)]) is None
