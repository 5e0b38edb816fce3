"""A snippet of a YAML or TOML file that sets keys: the headers above them and the lines it changes.

A user or a chat model shows a change to a configuration file by the path to it, with no lazy marker for
the lines it leaves out (``jobs:`` / ``  test:`` / ``    runs-on: macos-latest``; ``[tool.ruff]`` /
``line-length = 120``). A mapping holds a key once (both formats make a second one an error), so each
such line replaces the line of its key under the headers shown, where read as a part of the file the
snippet would add a second ``runs-on:`` beside the first. The reading holds where every line of the
snippet is a key of the file: a header (a key whose value is the block under it) found once under the
header above it, or a one-line ``key: value`` whose key is found once there; at least one value changes.

The lines the snippet leaves out are kept. That is certain where it leaves out lines between the lines it
shows (``services:`` shown above ``  db:`` with ``web``'s lines left out): its author leaves lines out
with no marker, so those after its last line are left out too, not deleted. A snippet that is a run of
the file's lines (``  db:`` / ``    image: postgres:16``, ``ports:`` after it) may instead be the block
as it should be, the lines after it deleted: likely, the model decides.

>>> original = ["jobs:\\n", "  test:\\n", "    runs-on: ubuntu-latest\\n", "    steps:\\n", "      - run: pytest\\n"]
>>> set_keys(original, ["jobs:\\n", "  test:\\n", "    runs-on: macos-latest\\n"], "yaml")
([(2, '    runs-on: macos-latest\\n')], False)
"""

from __future__ import annotations

import re

from fastapply.markers import indent_width

LANGUAGES = ("yaml", "toml")
_YAML_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s"'#\-?][^:#]*?)\s*:(?:\s+(.*?))?\s*$""")  # `key:` or `key: value`
_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")  # `[table]`, `[[array.of.tables]]`
_TOML_KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[\w-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[\w-]+))*)\s*=\s*(.*?)\s*$""")


def set_keys(original: list[str], snippet: list[str],
             language: str | None) -> tuple[list[tuple[int, str]], bool] | None:
    """The original lines a snippet of keys replaces, (index, new line) in order, and whether that is
    certain (it leaves out lines between those it shows); None where the snippet is not such a path of
    keys in this file, or changes no value."""
    if language not in LANGUAGES:
        return None
    shown = [line if line.endswith("\n") else line + "\n" for line in snippet if line.strip()]
    if not shown:
        return None
    found = (_yaml_path if language == "yaml" else _toml_path)(original, shown)
    if found is None:
        return None
    places = [place for place, _, _ in found]
    if places != sorted(set(places)):
        return None  # shown out of the file's order, or one line twice
    changes = [(place, line) for place, line, leaf in found if leaf and original[place].rstrip() != line.rstrip()]
    if not changes:
        return None
    gap = any(_content(original[j]) for a, b in zip(places, places[1:]) for j in range(a + 1, b))
    return changes, gap


def _content(line: str) -> bool:
    """Whether a line is more than a blank line or a comment."""
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _yaml_path(original: list[str], shown: list[str]) -> list[tuple[int, str, bool]] | None:
    """Each snippet line's original line, with the line and whether it is a leaf (a one-line value), where
    each is a key found once among the children of the header above it (the whole file for the first)."""
    found: list[tuple[int, str, bool]] = []
    stack: list[tuple[int, int]] = []  # (indent, original line) of the headers above
    for k, line in enumerate(shown):
        entry = _YAML_KEY.match(line)
        if entry is None:
            return None  # a list item, a comment, a continuation: not a path of keys
        width = indent_width(line)
        while stack and stack[-1][0] >= width:
            stack.pop()
        leaf = k + 1 == len(shown) or indent_width(shown[k + 1]) <= width
        if leaf == (not entry.group(2)):  # a header shows no value and has lines under it; a leaf, the reverse
            return None
        if stack:
            start, end = stack[-1][1] + 1, _yaml_block_end(original, stack[-1][1])
            children = [j for j in range(start, end) if _content(original[j])]
            if not children or min(indent_width(original[j]) for j in children) != width:
                return None
        else:
            start, end = 0, len(original)
        key = entry.group(1)
        places = [j for j in range(start, end) if indent_width(original[j]) == width
                  and (other := _YAML_KEY.match(original[j])) and other.group(1) == key]
        if len(places) != 1:
            return None
        place = places[0]
        under = range(place + 1, _yaml_block_end(original, place))
        one_line = bool(_YAML_KEY.match(original[place]).group(2)) and not any(_content(original[j]) for j in under)
        if leaf and not one_line:
            return None  # the file's value is a block (a list, a mapping, `|` text): not one line replaced
        if not leaf and original[place].rstrip() != line.rstrip():
            return None
        if not leaf:
            stack.append((width, place))
        found.append((place, line, leaf))
    return found


def _yaml_block_end(original: list[str], line: int) -> int:
    """One past the lines under a YAML key (deeper than it; blank lines and comments do not end it)."""
    width = indent_width(original[line])
    return next((j for j in range(line + 1, len(original)) if _content(original[j])
                 and indent_width(original[j]) <= width), len(original))


def _toml_path(original: list[str], shown: list[str]) -> list[tuple[int, str, bool]] | None:
    """Each snippet line's original line, with the line and whether it is a key (else a table header),
    where each header is found once in the file and each key once in the table above it (the file's top
    keys, or the whole file where the snippet shows no header above it)."""
    headers = [j for j, line in enumerate(original) if _TOML_HEADER.match(line)]
    found: list[tuple[int, str, bool]] = []
    table: tuple[int, int] | None = None  # the original lines of the table the snippet is in
    for line in shown:
        header = _TOML_HEADER.match(line)
        if header:
            places = [j for j in headers if original[j].strip() == line.strip()]
            if len(places) != 1:
                return None
            table = (places[0] + 1, next((j for j in headers if j > places[0]), len(original)))
            found.append((places[0], line, False))
            continue
        entry = _TOML_KEY.match(line)
        if entry is None or not _one_line(entry.group(2)):
            return None
        start, end = table or (0, len(original))
        key = _toml_key(entry.group(1))
        places = [j for j in range(start, end) if (other := _TOML_KEY.match(original[j]))
                  and _toml_key(other.group(1)) == key and j not in headers]
        if len(places) != 1 or not _one_line(_TOML_KEY.match(original[places[0]]).group(2)):
            return None
        found.append((places[0], line, True))
    return found


def _toml_key(key: str) -> str:
    """A TOML key with the spaces around its dots taken out."""
    return re.sub(r"\s*\.\s*", ".", key)


def _one_line(value: str) -> bool:
    """Whether a TOML value ends on its line: brackets and braces closed, no multi-line string opened."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', value.split(" #")[0])
    return text.count("[") == text.count("]") and text.count("{") == text.count("}") and '"""' not in value \
        and "'''" not in value
