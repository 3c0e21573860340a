"""The card text chunks of a PNG, read with a small chunk walker (no image decoding, no Pillow).

SillyTavern stores a card as base64 JSON in a ``tEXt`` chunk keyed ``chara`` (v2) and, since
v3, also ``ccv3``. We only walk the chunk list: every chunk's CRC is checked so a damaged file
is refused instead of yielding half a card, and nothing beyond the text is decoded.
"""

from __future__ import annotations

import binascii
import zlib

from mvu_store.errors import Code, MvuError

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Preferred first: a v3 exporter writes both, and `ccv3` is the one that carries v3 fields.
CARD_KEYS = ("ccv3", "chara")
MAX_DECODED_BYTES = 8 * 1024 * 1024
MAX_CHUNKS = 65_536
"""Chunks walked in one file. Image writers split pixel data into chunks of 8 KiB (libpng) or
more, so a card image within the 32 MiB input limit has at most a few thousand; a file of
millions of empty chunks cost seconds of walking on every upload."""


def _bad(message: str) -> MvuError:
    return MvuError(Code.JSON, f"not a readable PNG card: {message}")


def card_text_chunks(data: bytes) -> dict[str, bytes]:
    """The ``tEXt`` payloads of the card keys, each as raw (still base64) bytes."""
    if not data.startswith(SIGNATURE):
        raise _bad("missing PNG signature")
    found: dict[str, bytes] = {}
    position = len(SIGNATURE)
    for _ in range(MAX_CHUNKS):
        if position + 8 > len(data):
            raise _bad("truncated before IEND")
        length = int.from_bytes(data[position : position + 4], "big")
        kind = data[position + 4 : position + 8]
        body_end = position + 8 + length
        if length > 0x7FFFFFFF or body_end + 4 > len(data):
            raise _bad(f"chunk {kind!r} runs past the end of the file")
        body = data[position + 8 : body_end]
        crc = int.from_bytes(data[body_end : body_end + 4], "big")
        if zlib.crc32(kind + body) != crc:
            raise _bad(f"CRC mismatch in chunk {kind!r}")
        if kind == b"IEND":
            return found
        if kind == b"tEXt":
            keyword, separator, text = body.partition(b"\x00")
            key = keyword.decode("latin-1")
            # The first chunk of a key wins, as in SillyTavern's reader.
            if separator and key in CARD_KEYS and key not in found:
                found[key] = text
        position = body_end + 4
    raise MvuError(Code.LIMIT, f"the PNG has more than {MAX_CHUNKS} chunks", limit=MAX_CHUNKS, kind="chunks")


def card_json_bytes(data: bytes) -> tuple[str, bytes]:
    """``(key, json bytes)`` of the preferred card chunk; ``ccv3`` wins over ``chara``."""
    chunks = card_text_chunks(data)
    for key in CARD_KEYS:
        if key in chunks:
            text = chunks[key].strip()
            # Base64 is 4 characters per 3 bytes: refuse before allocating the decoded copy.
            if len(text) // 4 * 3 > MAX_DECODED_BYTES:
                raise MvuError(Code.LIMIT, f"the {key!r} card text is over 8 MiB decoded",
                               limit=MAX_DECODED_BYTES, kind="bytes")
            try:
                return key, binascii.a2b_base64(text, strict_mode=True)
            except (binascii.Error, ValueError):
                raise _bad(f"the {key!r} chunk is not base64") from None
    raise MvuError(Code.CONFIG, "the PNG carries no character card (no 'ccv3' or 'chara' text chunk)")
