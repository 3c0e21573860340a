"""The bundled sample card and the scripted chat that ``mvu demo`` plays (data only, no I/O
beyond reading the packaged card). The demo itself, which opens a ledger and prints, is
:mod:`mvu_api.demo`."""

from mvu_store.demo.script import (
    CHARACTER_ID,
    EDIT,
    SESSION_CREATED_AT,
    SESSION_ID,
    TURNS,
    Edit,
    Turn,
    sample_card_bytes,
)

__all__ = ["CHARACTER_ID", "EDIT", "SESSION_CREATED_AT", "SESSION_ID", "TURNS", "Edit", "Turn", "sample_card_bytes"]
