"""The scans that replaced super-linear regular expressions over card, reply and greeting text.

Each replacement is checked two ways: it finds exactly what the regular expression it replaced
found, on text generated from the pieces that pattern cares about (the old pattern is kept here
as the oracle), and it finishes on the adversarial text that made the old one quadratic, at the
input's size limit, within pytest-timeout's bound (the old patterns would take hours there).
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.cards.imports import imported_urls
from mvu_store.cards.png import MAX_DECODED_BYTES
from mvu_store.js.values import MAX_TEXT, to_number
from mvu_store.processor.repair import repairs
from mvu_store.prompt import expand_message_variables, has_macro, macro_paths
from mvu_store.prompt.units import LINE_TERMINATORS
from mvu_store.service.openings import MAX_GREETING_BYTES, _array_blocks_as_patches
from mvu_store.store_host.events import MAX_REPLY_BYTES

OLD_IMPORT = re.compile(r"""\bimport\s*(?:\(\s*|[\w$*{}\s,]+?\sfrom\s*)?(['"`])(https?://[^'"`\s]+)\1""")
_IN_LINE = f"[^{LINE_TERMINATORS}]"
OLD_MACRO = re.compile(f"(?<!{_IN_LINE})({_IN_LINE}*)\\{{\\{{format_message_variable::({_IN_LINE}*?)\\}}\\}}",
                       re.IGNORECASE | re.ASCII)
OLD_ARRAY_BLOCK = re.compile(r"(<UpdateVariable>)\s*(?:```(?:json)?\s*)?(\[.*?\])\s*(?:```\s*)?(</UpdateVariable>)",
                             re.IGNORECASE | re.DOTALL)
OLD_FENCE_END = re.compile(r"\s*```\Z")
OLD_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)

LIMIT = pytest.mark.timeout(60)
PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pieces(*words: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(words), max_size=40).map("".join)


# --- card script imports -------------------------------------------------------------------

IMPORT_TEXT = pieces("import", "import ", "from", " from ", "  ", "\n", "\t", "(", ")", "'", '"', "`", "{", "}",
                     "a", "x_1", "$", "*", ",", ";", ".", "http://", "https://", "h.js", "/", "ximport", "é")


@PROPERTY
@given(IMPORT_TEXT)
def test_imported_urls_are_the_old_patterns_matches(text: str) -> None:
    old = [(found.start(), found.end(), found.group(2)) for found in OLD_IMPORT.finditer(text)]
    assert [(found.start, found.end, found.url) for found in imported_urls(text)] == old


def test_imported_urls_reads_the_three_forms() -> None:
    text = "import 'https://a/x.js'; import('http://b/y.js'); import { z, w as v } from \"https://c/schema.js\""
    assert [found.url for found in imported_urls(text)] == ["https://a/x.js", "http://b/y.js", "https://c/schema.js"]


@LIMIT
@pytest.mark.parametrize(("unit", "urls"), [("import ", ["https://schema/x.js"]),
                                           ("import {a, b} ", ["https://schema/x.js"]),
                                           ("import  from 'http://x ", [])])
def test_a_card_script_of_repeated_imports_is_scanned_once(unit: str, urls: list[str]) -> None:
    tail = "from 'https://schema/x.js'"
    text = unit * (MAX_DECODED_BYTES // len(unit)) + tail
    assert [found.url for found in imported_urls(text)] == urls
    small = unit * 50 + tail  # what the old pattern finds in the same text, small enough for it
    assert [found.group(2) for found in OLD_IMPORT.finditer(small)] == urls


# --- the world-book macro --------------------------------------------------------------------

MACRO_TEXT = pieces("{{format_message_variable::", "{{FORMAT_message_VARIABLE::", "}}", "}", "{{", "a", "stat_data",
                    ".hp", " ", "\n", "\r", "\u2028", "\u2029", "x\r\n", "😀", "\u212a")


def old_expand(text: str, variables: object) -> str:
    """The regex version of expand_message_variables (its line walk kept as it was)."""
    from mvu_store.prompt.macro import format_message_variable
    from mvu_store.prompt.paths import get_path

    def line(found: re.Match[str]) -> str:
        paths, between, prefix = [found.group(2)], [], found.group(1)
        while (inner := OLD_MACRO.match(prefix)) is not None:
            between.append(prefix[inner.end():])
            paths.append(inner.group(2))
            prefix = inner.group(1)
        built = prefix
        for index in range(len(paths) - 1, -1, -1):
            built += format_message_variable(get_path(variables, paths[index]), built)  # type: ignore[arg-type]
            if index:
                built += between[index - 1]
        return built

    return OLD_MACRO.sub(line, text)


@PROPERTY
@given(MACRO_TEXT)
def test_macro_lines_read_what_the_old_pattern_read(text: str) -> None:
    variables = {"stat_data": {"hp": 3, "mp": [1, 2]}, "a": "x\ny", "stat_data.hp": {"k": {"j": 1}}}
    assert has_macro(text) == (OLD_MACRO.search(text) is not None)
    assert expand_message_variables(text, variables) == old_expand(text, variables)
    old_paths = []
    for found in OLD_MACRO.finditer(text):
        paths, prefix = [found.group(2)], found.group(1)
        while (inner := OLD_MACRO.match(prefix)) is not None:
            paths.append(inner.group(2))
            prefix = inner.group(1)
        old_paths.extend(reversed(paths))
    assert macro_paths(text) == old_paths


@LIMIT
@pytest.mark.parametrize("unit", ["{{format_message_variable::", "{{format_message_variable::a}}"])
def test_a_line_of_openers_is_scanned_once(unit: str) -> None:
    text = unit * (2 * 1024 * 1024 // len(unit))  # a prompt body's size
    closed = unit.endswith("}}")
    assert has_macro(text) == closed
    assert len(macro_paths(text)) == (text.count("}}") if closed else 0)


# --- a greeting's array blocks ---------------------------------------------------------------

ARRAY_TEXT = pieces("<UpdateVariable>", "<updatevariable>", "</UpdateVariable>", "</UPDATEVARIABLE>", "[", "]",
                    "[]", '[{"op":"remove","path":"/a"}]', "```", "```json", "```JSON", "json", " ", "\n", "{}",
                    "x", "1")


@PROPERTY
@given(ARRAY_TEXT)
def test_array_blocks_are_the_old_patterns_blocks(text: str) -> None:
    def wrapped(found: re.Match[str]) -> str:
        try:
            body = json.loads(found.group(2))
        except ValueError:
            return found.group(0)
        if not isinstance(body, list):
            return found.group(0)
        return f"{found.group(1)}<JSONPatch>{found.group(2)}</JSONPatch>{found.group(3)}"

    assert _array_blocks_as_patches(text) == OLD_ARRAY_BLOCK.sub(wrapped, text)


@LIMIT
def test_a_greeting_of_unclosed_arrays_is_scanned_once() -> None:
    unit = "<UpdateVariable>[</UpdateVariable>"
    text = unit * (MAX_GREETING_BYTES // len(unit))
    assert _array_blocks_as_patches(text) == text


# --- numbers in text and a reply's closing fence ---------------------------------------------

@PROPERTY
@given(pieces("1", "0", ".", "e", "E", "+", "-", "x", " "))
def test_number_text_is_the_same_language(text: str) -> None:
    from mvu_store.js.numbers import _NUMBER_TEXT

    assert (_NUMBER_TEXT.fullmatch(text) is None) == (OLD_NUMBER.fullmatch(text) is None)


@LIMIT
def test_a_long_digit_string_is_not_a_number_without_backtracking() -> None:
    assert to_number("1" * (MAX_TEXT - 1) + "x") != to_number("1")


@PROPERTY
@given(pieces("```", "`", " ", "\n", "\u3000", "x", "[1]", "json"))
def test_the_closing_fence_is_removed_as_the_old_pattern_removed_it(text: str) -> None:
    wrapped = f"<UpdateVariable>[{{\"op\":\"remove\",\"path\":\"/a\"}}]{text}</UpdateVariable>"
    body = OLD_FENCE_END.sub("", f"[{{\"op\":\"remove\",\"path\":\"/a\"}}]{text}".strip()).strip()
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    assert bool(repairs(wrapped)) == (parsed == [{"op": "remove", "path": "/a"}])


@LIMIT
def test_a_reply_of_spaces_before_its_fence_is_repaired_once() -> None:
    body = '[{"op":"replace","path":"/a","value":1}' + " " * (MAX_REPLY_BYTES - 200) + "]\n```"
    text = f"<UpdateVariable>```json\n{body}</UpdateVariable>"
    assert [repair.type for repair in repairs(text)] == ["set"]
