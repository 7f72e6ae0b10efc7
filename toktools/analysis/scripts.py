"""Which Unicode script a character or a piece of text belongs to, from a compact table of the
main scripts' blocks (no dependency): what ``inspect`` counts in its script coverage."""

from __future__ import annotations

import bisect
import unicodedata

__all__ = ["ScriptName", "script_of_char", "script_of_text"]

ScriptName = str

#: (first, last, script) for the main scripts' blocks. Only letters and marks are looked up here:
#: digits, punctuation, symbols, spaces and controls are "Common" by their general category
#: first, so the ASCII punctuation inside "Basic Latin" never counts as Latin.
_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x005A, "Latin"),
    (0x0061, 0x007A, "Latin"),
    (0x00AA, 0x00AA, "Latin"),
    (0x00B5, 0x00B5, "Common"),
    (0x00BA, 0x00BA, "Latin"),
    (0x00C0, 0x024F, "Latin"),
    (0x0250, 0x02B8, "Latin"),
    (0x02B9, 0x02DF, "Common"),
    (0x02E0, 0x02E4, "Latin"),
    (0x02E5, 0x02FF, "Common"),
    (0x0300, 0x036F, "Inherited"),
    (0x0370, 0x03FF, "Greek"),
    (0x0400, 0x052F, "Cyrillic"),
    (0x0530, 0x058F, "Armenian"),
    (0x0590, 0x05FF, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"),
    (0x0700, 0x074F, "Syriac"),
    (0x0750, 0x077F, "Arabic"),
    (0x0780, 0x07BF, "Thaana"),
    (0x08A0, 0x08FF, "Arabic"),
    (0x0900, 0x097F, "Devanagari"),
    (0x0980, 0x09FF, "Bengali"),
    (0x0A00, 0x0A7F, "Gurmukhi"),
    (0x0A80, 0x0AFF, "Gujarati"),
    (0x0B00, 0x0B7F, "Oriya"),
    (0x0B80, 0x0BFF, "Tamil"),
    (0x0C00, 0x0C7F, "Telugu"),
    (0x0C80, 0x0CFF, "Kannada"),
    (0x0D00, 0x0D7F, "Malayalam"),
    (0x0D80, 0x0DFF, "Sinhala"),
    (0x0E00, 0x0E7F, "Thai"),
    (0x0E80, 0x0EFF, "Lao"),
    (0x0F00, 0x0FFF, "Tibetan"),
    (0x1000, 0x109F, "Myanmar"),
    (0x10A0, 0x10FF, "Georgian"),
    (0x1100, 0x11FF, "Hangul"),
    (0x1200, 0x139F, "Ethiopic"),
    (0x13A0, 0x13FF, "Cherokee"),
    (0x1780, 0x17FF, "Khmer"),
    (0x1800, 0x18AF, "Mongolian"),
    (0x1AB0, 0x1AFF, "Inherited"),
    (0x1C80, 0x1C8F, "Cyrillic"),
    (0x1C90, 0x1CBF, "Georgian"),
    (0x1D00, 0x1DBF, "Latin"),
    (0x1DC0, 0x1DFF, "Inherited"),
    (0x1E00, 0x1EFF, "Latin"),
    (0x1F00, 0x1FFF, "Greek"),
    (0x2070, 0x209F, "Latin"),
    (0x20D0, 0x20FF, "Inherited"),
    (0x2100, 0x214F, "Common"),
    (0x2C60, 0x2C7F, "Latin"),
    (0x2D00, 0x2D2F, "Georgian"),
    (0x2DE0, 0x2DFF, "Cyrillic"),
    (0x2E80, 0x2FDF, "Han"),
    (0x3005, 0x3005, "Han"),
    (0x3007, 0x3007, "Han"),
    (0x3021, 0x3029, "Han"),
    (0x3038, 0x303B, "Han"),
    (0x3040, 0x309F, "Hiragana"),
    (0x30A0, 0x30FF, "Katakana"),
    (0x3100, 0x312F, "Bopomofo"),
    (0x3130, 0x318F, "Hangul"),
    (0x31A0, 0x31BF, "Bopomofo"),
    (0x31F0, 0x31FF, "Katakana"),
    (0x3400, 0x4DBF, "Han"),
    (0x4E00, 0x9FFF, "Han"),
    (0xA640, 0xA69F, "Cyrillic"),
    (0xA720, 0xA7FF, "Latin"),
    (0xA8E0, 0xA8FF, "Devanagari"),
    (0xA960, 0xA97F, "Hangul"),
    (0xAB30, 0xAB6F, "Latin"),
    (0xAC00, 0xD7FF, "Hangul"),
    (0xF900, 0xFAFF, "Han"),
    (0xFB00, 0xFB06, "Latin"),
    (0xFB13, 0xFB17, "Armenian"),
    (0xFB1D, 0xFB4F, "Hebrew"),
    (0xFB50, 0xFDFF, "Arabic"),
    (0xFE00, 0xFE0F, "Inherited"),
    (0xFE20, 0xFE2F, "Inherited"),
    (0xFE70, 0xFEFF, "Arabic"),
    (0xFF21, 0xFF3A, "Latin"),
    (0xFF41, 0xFF5A, "Latin"),
    (0xFF66, 0xFF9F, "Katakana"),
    (0xFFA0, 0xFFDC, "Hangul"),
    (0x1B000, 0x1B0FF, "Hiragana"),
    (0x20000, 0x323AF, "Han"),
    (0xE0100, 0xE01EF, "Inherited"),
)
_SCRIPT_STARTS = [lo for lo, _, _ in _SCRIPT_RANGES]
_script_cache: dict[str, str] = {}

#: Scripts that do not make a token "Mixed": they go with any script.
_NEUTRAL = frozenset({"Common", "Inherited"})


def script_of_char(ch: str) -> ScriptName:
    """The script of one character: "Common" for digits, punctuation, symbols, spaces and
    controls (by general category), "Inherited" for combining marks, the script of its block for
    letters, and "Other" for letters of scripts outside the table."""
    found = _script_cache.get(ch)
    if found is not None:
        return found
    category = unicodedata.category(ch)
    if category[0] in "NPSZC":
        script = "Common"
    else:
        cp = ord(ch)
        index = bisect.bisect_right(_SCRIPT_STARTS, cp) - 1
        if index >= 0 and cp <= _SCRIPT_RANGES[index][1]:
            script = _SCRIPT_RANGES[index][2]
        else:
            script = "Inherited" if category[0] == "M" else "Other"
    _script_cache[ch] = script
    return script


def script_of_text(text: str) -> ScriptName:
    """One script for a piece of text: the single script of its letters ("Common" and
    "Inherited" characters go with any script), "Common" if it has no letters, "Mixed" if its
    letters belong to several scripts (``"漢字かな"`` is Mixed, ``"ab1,"`` is Latin)."""
    scripts = {script_of_char(ch) for ch in text} - _NEUTRAL
    if not scripts:
        return "Common"
    if len(scripts) == 1:
        return scripts.pop()
    return "Mixed"
