"""Stop strings from the text field: escapes, commas, and readable refusals."""
from __future__ import annotations

import pytest

from playground.errors import ConfigError
from playground.generation.stops import MAX_STOPS, parse_stop_strings


def test_commas_and_escapes():
    assert parse_stop_strings(r"\n\n, THE END") == ("\n\n", "THE END")
    assert parse_stop_strings(r"a\,b, \t") == ("a,b", "\t")
    assert parse_stop_strings(r"\x41\u00e9\U0001F642, \\u") == ("Aé🙂", "\\u")
    assert parse_stop_strings(r"\q") == ("\\q",)  # unknown escapes stay as typed
    assert parse_stop_strings("é, 中文") == ("é", "中文")  # non-ASCII is not mangled
    assert parse_stop_strings("") == () and parse_stop_strings(None) == () and parse_stop_strings(" , ,") == ()


@pytest.mark.parametrize("text, match", [
    ("\\u", r"'\\u' is an incomplete escape.*\\\\u for a literal backslash-u"),
    ("\\x4", r"'\\x' is an incomplete escape"),
    ("\\u12zz", "4 hex digits"),
    ("abc\\", "lone"),
    ("\\ud800", "not a character"),
    ("\\U00110000", "not a character"),
    (",".join("x" * (MAX_STOPS + 1)), "at most"),
    ("x" * 10_000, "characters long"),
])
def test_broken_input_is_refused_with_a_sentence(text, match):
    with pytest.raises(ConfigError, match=match):
        parse_stop_strings(text)
