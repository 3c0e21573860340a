"""SillyTavern character cards: read (never run) their MVU data. See :mod:`mvu_store.cards.reader`."""

from mvu_store.cards.reader import MAX_INPUT_BYTES, CardDefinition, read_card
from mvu_store.cards.summary import json_type, summarize

__all__ = ["MAX_INPUT_BYTES", "CardDefinition", "json_type", "read_card", "summarize"]
