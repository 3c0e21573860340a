"""Zod 4's string formats (``z.email()``, ``z.uuid()``, ``z.iso.datetime()``...) and
``z.templateLiteral``: which strings each accepts and the issue a refused one gets.

The format patterns are fixed here (written from Zod's definitions and checked against real
Zod by tests/schema/zod_api_parity.json); none nests an unbounded repetition, so Python's
engine runs them in time linear in the input (a template literal, which composes patterns from
the declaration, runs on RE2 instead: primitives.TemplateLiteralSchema).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import UNDEFINED

_HHMM = r"(?:[01]\d|2[0-3]):[0-5]\d"
_DATE = (r"(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:"
         r"(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-VERSION[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
_IPV4_PART = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"

# format name -> (the noun of Zod's message "Invalid <noun>", the pattern a value must match whole)
FORMATS: dict[str, tuple[str, str]] = {
    "email": ("email address", r"(?:[A-Za-z0-9_'+\-]+\.)*[A-Za-z0-9_'+\-]*[A-Za-z0-9_+-]@"
                               r"(?:[A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}"),
    "uuid": ("UUID", "(?:" + _UUID.replace("VERSION", "[1-8]") + "|00000000-0000-0000-0000-000000000000|"
                     "ffffffff-ffff-ffff-ffff-ffffffffffff)"),
    "uuidv4": ("UUID", _UUID.replace("VERSION", "4")),
    "uuidv6": ("UUID", _UUID.replace("VERSION", "6")),
    "uuidv7": ("UUID", _UUID.replace("VERSION", "7")),
    "guid": ("GUID", r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
    "nanoid": ("nanoid", r"[a-zA-Z0-9_-]{21}"),
    "cuid": ("cuid", r"[cC][0-9a-z]{6,}"),
    "cuid2": ("cuid2", r"[0-9a-z]+"),
    "ulid": ("ULID", r"[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}"),
    "xid": ("XID", r"[0-9a-vA-V]{20}"),
    "ksuid": ("KSUID", r"[A-Za-z0-9]{27}"),
    "ipv4": ("IPv4 address", rf"(?:{_IPV4_PART}\.){{3}}{_IPV4_PART}"),
    "cidrv4": ("IPv4 range", rf"(?:{_IPV4_PART}\.){{3}}{_IPV4_PART}/(?:[0-9]|[1-2][0-9]|3[0-2])"),
    "e164": ("E.164 number", r"\+[1-9]\d{6,14}"),
    "hex": ("hex", r"[0-9a-fA-F]*"),
    "hostname": ("hostname", r"(?=[^\n\r\u2028\u2029]{1,253}\.?\Z)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
                             r"(?:\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\.?"),
    "date": ("ISO date", _DATE),
    "duration": ("ISO duration", r"P(?:(\d+W)|(?![^\n\r\u2028\u2029]*W)(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?"
                                 r"(T(?=\d)(\d+H)?(\d+M)?(\d+([.,]\d+)?S)?)?)"),
    "lowercase": ("lowercase", r"[^A-Z]*"),
    "base64": ("base64-encoded string", ""),  # tested by code: TESTS
    "base64url": ("base64url-encoded string", ""),
    "ipv6": ("IPv6 address", ""),
    "cidrv6": ("IPv6 range", ""),
    "jwt": ("JWT", ""),
    "mac": ("MAC address", ""),
    "datetime": ("ISO datetime", ""),  # patterns built from the options: iso_datetime, iso_time
    "time": ("ISO time", ""),
    "uppercase": ("uppercase", r"[^a-z]*"),
}

_COMPILED: dict[str, re.Pattern[str]] = {}


def matcher(source: str) -> re.Pattern[str]:
    pattern = _COMPILED.get(source)
    if pattern is None:
        pattern = _COMPILED[source] = re.compile(source, re.ASCII)
    return pattern


def _precision(options: Any) -> Any:
    value = options.get("precision", UNDEFINED) if type(options) is dict else UNDEFINED
    if value is not UNDEFINED and value is not None and not (type(value) is int and value >= -1):
        raise MvuError(Code.SCHEMA, "a time precision must be an integer >= -1")
    return value


def _time(precision: Any, *, seconds_optional: bool) -> str:
    if precision == -1:
        return _HHMM
    if precision == 0:
        return _HHMM + r":[0-5]\d"
    if type(precision) is int:
        return _HHMM + rf":[0-5]\d\.\d{{{precision}}}"
    return _HHMM + (r"(?::[0-5]\d(?:\.\d+)?)?" if seconds_optional else r":[0-5]\d(?:\.\d+)?")


def iso_time(options: Any) -> str:
    return _time(_precision(options), seconds_optional=True)


def iso_datetime(options: Any) -> str:
    """Zod's datetime pattern: Z always, an offset if ``offset``, no zone at all if ``local``."""
    flags = options if type(options) is dict else {}
    time = _time(_precision(options), seconds_optional=False)
    zones = "Z" + (r"|(?:[+-](?:[01]\d|2[0-3]):[0-5]\d)" if flags.get("offset") is True else "")
    local = f"|{time}" if flags.get("local") is True else ""
    return f"{_DATE}T(?:{time}(?:{zones}){local})"


# -- formats Zod checks with code, not a pattern -------------------------------------------------

_BASE64_ALPHABET = re.compile(r"[A-Za-z0-9+/]*")
_BASE64URL_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")
_IPV6_ALPHABET = re.compile(r"[0-9a-fA-F:.]+")


def _atob(text: str) -> bytes | None:
    """The bytes ``atob`` decodes (its forgiving base64: whitespace dropped, padding optional)."""
    data = "".join(char for char in text if char not in " \t\n\f\r")
    if len(data) % 4 == 0:
        data = data[:-2] if data.endswith("==") else data[:-1] if data.endswith("=") else data
    if len(data) % 4 == 1 or not _BASE64_ALPHABET.fullmatch(data):
        return None
    return base64.b64decode(data + "=" * (-len(data) % 4))


def is_base64(text: str) -> bool:
    """Zod's base64: empty, or no whitespace, a length that is a multiple of 4 and atob's rules."""
    if text == "":
        return True
    return not any(char.isspace() for char in text) and len(text) % 4 == 0 and _atob(text) is not None


def is_base64url(text: str) -> bool:
    if not _BASE64URL_ALPHABET.fullmatch(text):
        return False
    padded = text.replace("-", "+").replace("_", "/")
    return is_base64(padded + "=" * (-len(padded) % 4))


def is_ipv6(text: str) -> bool:
    """An IPv6 address in hex digits, colons and dots that the URL parser reads as one."""
    if not _IPV6_ALPHABET.fullmatch(text):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def is_cidrv6(text: str) -> bool:
    parts = text.split("/")
    if len(parts) != 2 or not parts[1].isascii() or not parts[1].isdigit():
        return False
    address, prefix = parts
    return str(int(prefix)) == prefix and int(prefix) <= 128 and is_ipv6(address)


def _jwt_header(text: str) -> Any:
    decoded = _atob(text)
    if decoded is None:
        return None
    try:
        return json.loads(decoded.decode("latin-1"), parse_constant=_no_constant)
    except ValueError:
        return None


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # JSON.parse has no NaN or Infinity


def jwt_test(algorithm: Any) -> Any:
    """Zod's JWT: three dot-separated parts whose first is base64 JSON naming an ``alg`` (the
    given one, if any), with ``typ`` absent or "JWT"."""

    def test(text: str) -> bool:
        parts = text.split(".")
        if len(parts) != 3 or not parts[0]:
            return False
        header = _jwt_header(parts[0])
        if type(header) is list:
            return False
        if type(header) is not dict or ("typ" in header and header["typ"] != "JWT"):
            return False
        alg = header.get("alg")
        if alg in (None, False, 0, "") or (type(alg) is float and alg != alg):
            return False
        return algorithm is UNDEFINED or algorithm is None or alg == algorithm

    return test


HASH_LENGTHS = {"md5": (32, 22, 2), "sha1": (40, 27, 1), "sha256": (64, 43, 1), "sha384": (96, 64, 0),
                "sha512": (128, 86, 2)}
"""A digest's length in hex digits, in base64 characters before padding, and its padding."""


def hash_pattern(algorithm: str, encoding: str) -> str:
    hex_digits, base64_chars, padding = HASH_LENGTHS[algorithm]
    if encoding == "hex":
        return f"[0-9a-fA-F]{{{hex_digits}}}"
    if encoding == "base64":
        return f"[A-Za-z0-9+/]{{{base64_chars}}}" + "=" * padding
    return f"[A-Za-z0-9_-]{{{base64_chars}}}"


def mac_pattern(delimiter: str) -> str:
    sep = re.escape(delimiter)
    return f"(?:[0-9A-F]{{2}}{sep}){{5}}[0-9A-F]{{2}}|(?:[0-9a-f]{{2}}{sep}){{5}}[0-9a-f]{{2}}"


TESTS = {"base64": is_base64, "base64url": is_base64url, "ipv6": is_ipv6, "cidrv6": is_cidrv6}


# -- URLs --------------------------------------------------------------------------------------

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*:")
_SPECIAL = frozenset({"http", "https", "ws", "wss", "ftp"})
_FORBIDDEN_HOST = frozenset(" #/:<>?@[\\]^|%\x7f") | frozenset(chr(code) for code in range(0x20))
_OPAQUE_FORBIDDEN = _FORBIDDEN_HOST - frozenset("%")


def _ipv4_number(part: str) -> int | None:
    """One part of a WHATWG IPv4 host: decimal, 0x hex or 0 octal."""
    try:
        if part[:2].lower() == "0x":
            return int(part[2:] or "0", 16)
        if len(part) > 1 and part.startswith("0"):
            return int(part[1:], 8)
        return int(part, 10) if part.isascii() and part.isdigit() else None
    except ValueError:
        return None


def _host_ok(host: str, special: bool) -> bool:
    if host.startswith("["):
        return host.endswith("]") and is_ipv6(host[1:-1])
    if not special:
        return not any(char in _OPAQUE_FORBIDDEN for char in host)
    if not host or any(char in _FORBIDDEN_HOST for char in host):
        return False
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]
    last = parts[-1]
    numeric = (last.isascii() and last.isdigit()) or (last[:2].lower() == "0x" and _ipv4_number(last) is not None)
    if last and numeric:
        numbers = [_ipv4_number(part) for part in parts]  # a host that ends in a number is IPv4
        if len(numbers) > 4 or any(number is None for number in numbers):
            return False
        *head, tail = numbers
        return all(number <= 255 for number in head) and tail < 256 ** (5 - len(numbers))  # type: ignore[operator]
    return True


def url_text(text: str) -> str:
    """The text ``new URL`` reads: trimmed, tabs and newlines removed (what z.url() keeps)."""
    return "".join(char for char in text.strip() if char not in "\t\n\r")


def parse_url(text: str) -> tuple[str, str] | None:
    """The scheme and host ``new URL(text)`` finds in an absolute URL, or None when it throws.

    For the web's schemes (http, https, ws, wss, ftp) the host must be a name without forbidden
    characters, IPv4 in any of its number forms or [IPv6], with a port up to 65535; ``file:``
    and other schemes take almost anything, as the URL standard has it. Names are lowercased
    (a non-ASCII name is compared as IDNA), not fully normalised."""
    text = url_text(text)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return None
    name = scheme.group()[:-1].lower()
    rest = text[scheme.end():]
    special = name in _SPECIAL
    if name == "file" or (not special and not rest.startswith("//")):
        return name, ""  # a file path or an opaque path: anything goes
    after = rest.lstrip("/\\") if special else rest[2:]
    authority = re.split(r"[/\\?#]" if special else r"[/?#]", after, maxsplit=1)[0]
    host = authority.rsplit("@", 1)[-1]
    port = ""
    if ":" in host and (not host.startswith("[") or "]:" in host):
        host, _, port = host.rpartition(":")
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return None
    if not _host_ok(host, special):
        return None
    try:
        return name, host.encode("idna").decode("ascii").lower() if not host.isascii() else host.lower()
    except UnicodeError:
        return None


HTTP_HOST = (r"(?=[^\n]{1,253}\Z)(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}")
"""The host ``z.httpUrl()`` takes: a domain name with a top-level name."""
