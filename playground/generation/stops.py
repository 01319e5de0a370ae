"""Stop strings typed in a text field: comma-separated, with a few backslash escapes.

`\\n`, `\\t`, `\\r`, `\\\\` (a backslash), `\\,` (a comma inside a stop string), `\\xHH`,
`\\uHHHH` and `\\UHHHHHHHH`; any other backslash pair is kept as typed. Non-ASCII text is kept
as is (no byte-level decoding).
"""
from __future__ import annotations

from playground.errors import ConfigError

MAX_STOPS = 16
MAX_STOP_CHARS = 256
SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", ",": ","}
HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def parse_stop_strings(text: str | None) -> tuple[str, ...]:
    """The stop strings in `text`; ConfigError (saying how to write it) on a broken escape."""
    if not text:
        return ()
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == ",":
            parts.append("".join(current))
            current = []
            i += 1
            continue
        if ch != "\\":
            current.append(ch)
            i += 1
            continue
        if i + 1 >= len(text):
            raise ConfigError("Stop strings: the text ends with a lone '\\'; write \\\\ for a literal backslash.")
        code = text[i + 1]
        if code in SIMPLE:
            current.append(SIMPLE[code])
            i += 2
        elif code in HEX_DIGITS:
            width = HEX_DIGITS[code]
            digits = text[i + 2:i + 2 + width]
            if len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(
                    f"Stop strings: '\\{code}' is an incomplete escape (it needs {width} hex digits, as in "
                    f"\\{code}{'0' * (width - 1)}A); write \\\\{code} for a literal backslash-{code}.")
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise ConfigError(f"Stop strings: '\\{code}{digits}' is not a character; use a code point up to "
                                  "10FFFF outside the surrogates D800-DFFF.")
            current.append(chr(value))
            i += 2 + width
        else:  # an unknown escape stays as typed, like Python's
            current.append(text[i:i + 2])
            i += 2
    parts.append("".join(current))
    stops = tuple(p.strip(" ") for p in parts if p.strip(" "))
    if len(stops) > MAX_STOPS:
        raise ConfigError(f"Stop strings: {len(stops)} given; use at most {MAX_STOPS}.")
    for stop in stops:
        if len(stop) > MAX_STOP_CHARS:
            raise ConfigError(f"Stop strings: one is {len(stop):,} characters long; keep each to "
                              f"{MAX_STOP_CHARS} characters or fewer.")
    return stops
