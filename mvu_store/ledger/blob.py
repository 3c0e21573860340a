"""A JSON payload ready to store in the content-addressed ``blobs`` table."""

from __future__ import annotations

from mvu_store.jsonvalue import JsonValue, canonical_text, sha256_hex, utf8


class Blob:
    """A JSON payload ready to store: canonical text, its UTF-8 size and its hash."""

    __slots__ = ("hash", "size", "text")

    def __init__(self, text: str, data: bytes | None = None) -> None:
        encoded = utf8(text) if data is None else data
        self.text = text
        self.size = len(encoded)
        self.hash = sha256_hex(encoded)

    @classmethod
    def of(cls, value: JsonValue) -> Blob:
        return cls(canonical_text(value))
