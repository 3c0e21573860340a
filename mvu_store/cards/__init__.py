"""SillyTavern character cards: read (never run) their MVU data. See :mod:`mvu_store.cards.reader`."""

from mvu_store.cards.reader import CardDefinition, read_card
from mvu_store.cards.summary import summarize

__all__ = ["CardDefinition", "read_card", "summarize"]
