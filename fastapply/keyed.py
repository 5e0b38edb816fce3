"""A snippet of a configuration file that sets keys: the headers above them and the lines it changes.

A user or a chat model shows a change to a configuration file by the path to it, with no lazy marker for
the lines it leaves out (``jobs:`` / ``  test:`` / ``    runs-on: macos-latest``; ``[tool.ruff]`` /
``line-length = 120``; ``{`` / ``  "scripts": {`` / ``    "test": "jest --ci"`` / ``  }`` / ``}``; in a
file of no language fastapply knows, INI's ``[flake8]`` / ``max-line-length = 120`` or ``.env``'s
``DEBUG=false``). A mapping holds a key once (YAML, TOML and INI make a second one an error, JSON's
parsers keep one of them), so each such line replaces the line of its key under the headers shown, where
read as a part of the file the snippet would add a second ``runs-on:`` beside the first. The reading
holds where every line of the snippet is a key of the file (JSON's braces aside): a header (a key whose
value is the block under it, a section) found once under the header above it, or a one-line ``key:
value`` whose key is found once there; at least one value changes. A JSON line keeps the file's comma
after it.

The lines the snippet leaves out are kept. That is certain where it leaves out lines between the lines it
shows (``services:`` shown above ``  db:`` with ``web``'s lines left out): its author leaves lines out
with no marker, so those after its last line are left out too, not deleted. A snippet that is a run of
the file's lines may instead be the blocks of its headers as they should be, the lines after it under
them deleted: where those are 1 to 3 lines (``  db:`` / ``    image: postgres:16``, ``ports:`` and its
item after it) that is likely, the model decides; where there are none (``[flake8]`` /
``max-line-length = 120``, the file's last section) both readings agree; where there are more
(``jobs:`` / ``  test:`` / ``    runs-on: macos-latest``, the job's steps and the next job after it),
they are left out, as for a part of a file (``edges.EDGE_DELETION``), and the reading is certain.

>>> original = ["jobs:\\n", "  test:\\n", "    runs-on: ubuntu-latest\\n", "    steps:\\n", "      - run: pytest\\n"]
>>> set_keys(original, ["jobs:\\n", "  test:\\n", "    runs-on: macos-latest\\n"], "yaml")  # steps: and its item
([(2, '    runs-on: macos-latest\\n')], False)
"""

from __future__ import annotations

import re

from fastapply.edges import EDGE_DELETION
from fastapply.markers import indent_width

_LANGUAGES = ("yaml", "toml", "json", None)  # None: a file of no known language, read as INI
_YAML_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s"'#\-?][^:#]*?)\s*:(?:\s+(.*?))?\s*$""")  # `key:` or `key: value`
_JSON_KEY = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.*?)\s*$')  # `"key": value,` or `"key": {`
_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")  # `[table]`, `[[array.of.tables]]`
_Path = list[tuple[int, str, "int | None"]]  # (original line, snippet line, a header's block end or None)
_INI_KEY = re.compile(r"^\s*([^\s=#;\[][^=]*?)\s*=\s*(.*?)\s*$")  # `key = value`, `KEY=value`
_TOML_KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[\w-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[\w-]+))*)\s*=\s*(.*?)\s*$""")


def set_keys(original: list[str], snippet: list[str],
             language: str | None) -> tuple[list[tuple[int, str]], bool] | None:
    """The original lines a snippet of keys replaces, (index, new line) in order, and whether that is
    certain: it leaves out lines between those it shows; or, read as the blocks of the headers it shows as
    they should be (the whole file where it shows none), it would delete no line, or more than a snippet
    may delete with no marker (``EDGE_DELETION``: more is left out, not deleted). None where the snippet
    is not such a path of keys in this file, or changes no value."""
    if language not in _LANGUAGES:
        return None
    shown = [line if line.endswith("\n") else line + "\n" for line in snippet if line.strip()]
    if not shown:
        return None
    found = (_indented_path(original, shown, language) if language in ("yaml", "json")
             else _section_path(original, shown, language))
    if found is None:
        return None
    places = [place for place, _, _ in found]
    if places != sorted(set(places)):
        return None  # shown out of the file's order, or one line twice
    changes = [(place, line) for place, line, end in found
               if end is None and original[place].rstrip() != line.rstrip()]
    if not changes:
        return None
    gap = any(_content(original[j]) for a, b in zip(places, places[1:]) for j in range(a + 1, b))
    ends = [end for _, _, end in found if end is not None]  # the blocks of the headers shown (else the file)
    around = range(places[-1] + 1, max(ends)) if ends else [*range(places[0]), *range(places[-1] + 1, len(original))]
    deleted = sum(_content(original[j]) for j in around)  # by the blocks read as they should be
    return changes, gap or deleted == 0 or deleted > EDGE_DELETION


def _content(line: str) -> bool:
    """Whether a line is more than a blank line, a comment or brackets (JSON's ``},``)."""
    return not _brackets(line) and not line.lstrip().startswith(("#", "//", ";"))


def _brackets(line: str) -> bool:
    """Whether a line holds nothing but brackets and commas (JSON's ``{`` and ``},``), or nothing."""
    return not line.strip().strip("{}[],")


def _entry(line: str, language: str) -> tuple[str, str, bool] | None:
    """A line's key, value and whether the value is the block under it (YAML's ``key:``, JSON's
    ``"key": {``); None where the line is not a key (a list item, a comment, a continuation)."""
    if language == "yaml":
        entry = _YAML_KEY.match(line)
        return (entry.group(1), entry.group(2) or "", not entry.group(2)) if entry else None
    entry = _JSON_KEY.match(line)
    if entry is None:
        return None
    value = entry.group(2).removesuffix(",").rstrip()
    return entry.group(1), value, value in ("{", "[")


def _indented_path(original: list[str], shown: list[str], language: str) -> _Path | None:
    """For YAML and JSON, each snippet line's original line, the line as it replaces it, and for a header
    one past the lines under it (None for a leaf, a one-line value), where each is a key found once among
    the children of the header above it (in the whole file for the first); JSON's braces aside."""
    lines = [line for line in shown if not _brackets(line)]  # a comment is no key: the snippet is no path
    found: _Path = []
    top = next((j for j, line in enumerate(original) if line.strip()), None)
    if shown[0].strip() == "{" and top is not None and original[top].strip() == "{":
        found.append((top, shown[0], len(original)))  # JSON's root: the keys between it and the first shown left out
    stack: list[tuple[int, int]] = []  # (indent, original line) of the headers above
    for k, line in enumerate(lines):
        entry = _entry(line, language)
        if entry is None:
            return None
        width = indent_width(line)
        while stack and stack[-1][0] >= width:
            stack.pop()
        leaf = k + 1 == len(lines) or indent_width(lines[k + 1]) <= width
        if leaf == entry[2]:  # a header opens a block with lines under it; a leaf, the reverse
            return None
        if stack:
            start, end = stack[-1][1] + 1, _block_end(original, stack[-1][1])
            children = [j for j in range(start, end) if _content(original[j])]
            if not children or min(indent_width(original[j]) for j in children) != width:
                return None
        else:
            start, end = 0, len(original)
        places = [j for j in range(start, end) if indent_width(original[j]) == width
                  and (other := _entry(original[j], language)) and other[0] == entry[0]]
        if len(places) != 1:
            return None
        place = places[0]
        if not leaf:
            if original[place].rstrip() != line.rstrip():
                return None
            stack.append((width, place))
        elif _entry(original[place], language)[2] or any(
                _content(original[j]) for j in range(place + 1, _block_end(original, place))):
            return None  # the file's value is a block (a list, a mapping, `|` text): not one line replaced
        elif language == "json":  # the file's comma after the value, whether the snippet shows one or not
            line = line.rstrip().removesuffix(",") + ("," if original[place].rstrip().endswith(",") else "") + "\n"
        found.append((place, line, None if leaf else _block_end(original, place)))
    return found


def _block_end(original: list[str], line: int) -> int:
    """One past the lines under a key (deeper than it; blank lines, comments and closing brackets do not
    end it)."""
    width = indent_width(original[line])
    return next((j for j in range(line + 1, len(original)) if _content(original[j])
                 and indent_width(original[j]) <= width), len(original))


def _section_path(original: list[str], shown: list[str], language: str | None) -> _Path | None:
    """For TOML and files of no known language read as INI (``[section]``, ``key = value``: ``setup.cfg``,
    ``.env``, a systemd unit), each snippet line's original line, the line, and for a header one past its
    section (None for a key), where each header is found once in the file and each key once in the
    section above it (the file's top keys, or the whole file where the snippet shows no header above it),
    its value one line."""
    headers = [j for j, line in enumerate(original) if _TOML_HEADER.match(line)]
    found: _Path = []
    section: tuple[int, int] | None = None  # the original lines of the section the snippet is in
    for line in shown:
        if _TOML_HEADER.match(line):
            places = [j for j in headers if original[j].strip() == line.strip()]
            if len(places) != 1:
                return None
            section = (places[0] + 1, next((j for j in headers if j > places[0]), len(original)))
            found.append((places[0], line, section[1]))
            continue
        entry = _key_value(line, language)
        if entry is None or language == "toml" and not _one_line(entry[1]):
            return None
        start, end = section or (0, len(original))
        places = [j for j in range(start, end) if j not in headers
                  and (other := _key_value(original[j], language)) and other[0] == entry[0]]
        if len(places) != 1:
            return None
        value = _key_value(original[places[0]], language)[1]
        if not _one_line(value) if language == "toml" else _continued(original, places[0]):
            return None
        found.append((places[0], line, None))
    return found


def _key_value(line: str, language: str | None) -> tuple[str, str] | None:
    """A line's key (TOML's with the spaces around its dots taken out) and value, or None."""
    entry = (_TOML_KEY if language == "toml" else _INI_KEY).match(line)
    if entry is None:
        return None
    return (_toml_key(entry.group(1)) if language == "toml" else entry.group(1)), entry.group(2)


def _continued(original: list[str], line: int) -> bool:
    """Whether an INI value goes on on the lines after its own (indented deeper)."""
    after = line + 1 < len(original) and original[line + 1]
    return bool(after and after.strip() and indent_width(after) > indent_width(original[line]))


def _toml_key(key: str) -> str:
    """A TOML key with the spaces around its dots taken out."""
    return re.sub(r"\s*\.\s*", ".", key)


def _one_line(value: str) -> bool:
    """Whether a TOML value ends on its line: brackets and braces closed, no multi-line string opened."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', value.split(" #")[0])
    return text.count("[") == text.count("]") and text.count("{") == text.count("}") and '"""' not in value \
        and "'''" not in value
