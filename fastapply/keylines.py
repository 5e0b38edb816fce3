"""The lines of configuration files: which are keys, their values, and where the blocks under them end.

YAML's ``key: value`` and ``key:`` over the block of its value, JSON's ``"key": value,`` and ``"key": {``,
TOML's and INI's ``key = value`` under a ``[section]`` header, CSS's ``color: red;``: read line by line,
by indentation, as a user's snippet of them is (it need not parse). ``keyed.py`` reads snippets that are
paths of keys with them, ``keymerge.py`` the keys of a configuration file merged as code.
"""

from __future__ import annotations

import re

from fastapply.markers import indent_width

CONFIG = ("yaml", "toml", "json")  # configuration languages fastapply parses
TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")  # `[table]`, `[[array.of.tables]]`
_YAML_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s"'#\-?][^:#]*?)\s*:(?:\s+(.*?))?\s*$""")  # `key:` or `key: value`
_JSON_KEY = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.*?)\s*$')  # `"key": value,` or `"key": {`
_CSS_DECLARATION = re.compile(r"^\s*(-?[A-Za-z][\w-]*)\s*:\s*([^;{}]*;)\s*$")  # `color: red;`
_INI_KEY = re.compile(r"^\s*([^\s=#;\[][^=]*?)\s*=\s*(.*?)\s*$")  # `key = value`, `KEY=value`
_TOML_KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[\w-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[\w-]+))*)\s*=\s*(.*?)\s*$""")


def key_entry(line: str, language: str) -> tuple[str, str, bool] | None:
    """A line's key, value and whether the value is the block under it (YAML's ``key:``, JSON's
    ``"key": {``); None where the line is not a key (a list item, a comment, a continuation)."""
    if language == "yaml":
        entry = _YAML_KEY.match(line)
        return (entry.group(1), entry.group(2) or "", not entry.group(2)) if entry else None
    if language == "css":
        entry = _CSS_DECLARATION.match(line)
        return (entry.group(1).lower(), entry.group(2), False) if entry else None
    entry = _JSON_KEY.match(line)
    if entry is None:
        return None
    value = entry.group(2).removesuffix(",").rstrip()
    return entry.group(1), value, value in ("{", "[")


def key_value(line: str, language: str | None) -> tuple[str, str] | None:
    """A line's key (TOML's with the spaces around its dots taken out) and value, or None."""
    entry = (_TOML_KEY if language == "toml" else _INI_KEY).match(line)
    if entry is None:
        return None
    return (_toml_key(entry.group(1)) if language == "toml" else entry.group(1)), entry.group(2)


def is_content(line: str) -> bool:
    """Whether a line is more than a blank line, a comment or brackets (JSON's ``},``)."""
    return not is_brackets(line) and not line.lstrip().startswith(("#", "//", ";"))


def is_brackets(line: str) -> bool:
    """Whether a line holds nothing but brackets and commas (JSON's ``{`` and ``},``), or nothing."""
    return not line.strip().strip("{}[],")


def closes(line: str) -> bool:
    """Whether a line closes a JSON object or array (``}``, ``],``)."""
    return line.lstrip().startswith(("}", "]"))


def one_line_at(lines: list[str], i: int, language: str | None) -> bool:
    """Whether the key line ``lines[i]`` holds its whole value (no block under it, nothing continued)."""
    if language == "css":
        return True  # a declaration ends with its `;`
    if language in ("yaml", "json"):
        under = range(i + 1, block_end(lines, i))
        return not key_entry(lines[i], language)[2] and not any(is_content(lines[j]) for j in under)
    value = key_value(lines[i], language)[1]
    return one_line_value(value) if language == "toml" else not _continued(lines, i)


def block_end(original: list[str], line: int) -> int:
    """One past the lines under a key (deeper than it; blank lines, comments and closing brackets do not
    end it)."""
    width = indent_width(original[line])
    return next((j for j in range(line + 1, len(original)) if is_content(original[j])
                 and indent_width(original[j]) <= width), len(original))


def children_end(original: list[str], line: int) -> int:
    """One past the last line deeper than ``line`` (the lines of its block; not a JSON object's closing
    bracket, nor blank lines after them)."""
    width, end = indent_width(original[line]), line + 1
    for j in range(line + 1, len(original)):
        if original[j].strip():
            if indent_width(original[j]) <= width:
                break
            end = j + 1
    return end


def restyled(line: str, kept: str, language: str | None) -> str:
    """A snippet's key line as it replaces the file's line ``kept``: in JSON with the comma after its value
    that ``kept`` has, whether the snippet shows one or not."""
    if language != "json":
        return line
    return line.rstrip().removesuffix(",") + ("," if kept.rstrip().endswith(",") else "") + "\n"


def _continued(original: list[str], line: int) -> bool:
    """Whether an INI value goes on on the lines after its own (indented deeper)."""
    after = line + 1 < len(original) and original[line + 1]
    return bool(after and after.strip() and indent_width(after) > indent_width(original[line]))


def _toml_key(key: str) -> str:
    """A TOML key with the spaces around its dots taken out."""
    return re.sub(r"\s*\.\s*", ".", key)


def one_line_value(value: str) -> bool:
    """Whether a TOML value ends on its line: brackets and braces closed, no multi-line string opened."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', value.split(" #")[0])
    return text.count("[") == text.count("]") and text.count("{") == text.count("}") and '"""' not in value \
        and "'''" not in value
