"""The cards in examples/ are the ones the docs use, and read as docs/cards.md says."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mvu_store.cards import read_card, summarize
from mvu_store.demo import sample_card_bytes
from mvu_store.lang import initialize_variables

REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLES = REPOSITORY / "examples"


def _minimal_card_of_the_docs() -> bytes:
    text = (REPOSITORY / "docs" / "cards.md").read_text(encoding="utf-8")
    section = text[text.index("## A minimal card"):]
    block = re.search(r"```json\n(.*?)```", section, flags=re.S)
    assert block is not None
    return block.group(1).encode()


def test_the_docs_small_card_has_initvar_a_schema_and_a_greeting() -> None:
    card = read_card((EXAMPLES / "hero.json").read_bytes(), name="hero")
    report = summarize(card)
    assert report["schema"]["found"] and report["schema"]["compiles"], report["schema"]
    assert [entry["status"] for entry in report["initvar"]] == ["ok"]
    assert report["greetings"] == 1 and report["problems"] == []
    assert initialize_variables(list(card.initvar))["stat_data"] == {"hp": 30, "gold": 10}


def test_the_minimal_card_shown_reads_as_the_example_does() -> None:
    shown = read_card(_minimal_card_of_the_docs(), name="hero")
    example = read_card((EXAMPLES / "hero.json").read_bytes(), name="hero")
    assert shown.initvar == example.initvar
    assert len(shown.greetings) == len(example.greetings) == 1
    assert summarize(shown)["schema"]["compiles"]
    assert json.loads(_minimal_card_of_the_docs())["data"]["extensions"]["tavern_helper"]["scripts"][0]["enabled"]


def test_the_demos_card_is_in_the_examples() -> None:
    assert (EXAMPLES / "ashgrove-road.json").read_bytes() == sample_card_bytes()
