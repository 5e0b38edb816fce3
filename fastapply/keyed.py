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

A snippet with markers whose other lines are such a path (``# ...`` / ``jobs:`` / ``  lint:`` /
``    runs-on: macos-latest`` / ``    # ...``) sets its keys the same way (``marked_keys``): merged as code,
the new line was inserted beside the ``runs-on:`` the marker keeps, and the jobs between ``jobs:`` and
``lint:`` were deleted. One that is not (a key the file lacks, a list item) is merged as code, and then a
key line at the end of its code takes the place of the one a marker keeps beyond it (``set_in_place``);
where it deletes the file's first (last) keys by showing no marker above (below) its code, the rule for
code (a few lines at an edge, an import the snippet replaces), ``edge_keys`` doubts it.

>>> original = ["jobs:\\n", "  test:\\n", "    runs-on: ubuntu-latest\\n", "    steps:\\n", "      - run: pytest\\n"]
>>> set_keys(original, ["jobs:\\n", "  test:\\n", "    runs-on: macos-latest\\n"], "yaml")  # steps: and its item
([(2, '    runs-on: macos-latest\\n')], False)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from fastapply.edges import EDGE_DELETION
from fastapply.markers import indent_width
from fastapply.segments import Placement

_CONFIG = ("yaml", "toml", "json")  # configuration languages fastapply parses
_LANGUAGES = (*_CONFIG, None)  # read as paths of keys; None: a file of no known language, read as INI
_YAML_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[^\s"'#\-?][^:#]*?)\s*:(?:\s+(.*?))?\s*$""")  # `key:` or `key: value`
_JSON_KEY = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.*?)\s*$')  # `"key": value,` or `"key": {`
_CSS_DECLARATION = re.compile(r"^\s*(-?[A-Za-z][\w-]*)\s*:\s*([^;{}]*;)\s*$")  # `color: red;`
_MAPPINGS = (*_CONFIG, "css")  # whose keys ``set_in_place`` keeps once
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
    read = _read(original, snippet, language)
    if read is None:
        return None
    found, changes = read
    places = [place for place, _, _ in found]
    gap = any(_content(original[j]) for a, b in zip(places, places[1:]) for j in range(a + 1, b))
    ends = [end for _, _, end in found if end is not None]  # the blocks of the headers shown (else the file)
    around = range(places[-1] + 1, max(ends)) if ends else [*range(places[0]), *range(places[-1] + 1, len(original))]
    deleted = sum(_content(original[j]) for j in around)  # by the blocks read as they should be
    return changes, gap or deleted == 0 or deleted > EDGE_DELETION


def marked_keys(original: list[str], snippet: list[str], markers: list[bool],
                language: str | None) -> tuple[list[tuple[int, str]], list[str]] | None:
    """For a snippet with lazy markers (``markers``: which of its lines are), the original lines its keys
    replace and the doubts, where its other lines are a path of keys (``set_keys``; YAML, TOML, JSON): the
    lines a marker stands for are kept, and so are those between the headers of the path (read as code,
    a segment deletes them: ``jobs:`` / ``  test:`` deleted the jobs between). Doubts where no marker is
    above (below) its first (last) line and the file has lines there: read as code, those are deleted."""
    if language not in _CONFIG:
        return None
    read = _read(original, [line for line, marker in zip(snippet, markers) if not marker], language)
    if read is None:
        return None
    found, changes = read
    edges = [i for i, line in enumerate(snippet) if markers[i] or not _brackets(line)]  # JSON's braces aside
    doubts = []
    if not markers[edges[0]] and any(_content(line) for line in original[:found[0][0]]):
        doubts.append(f"the snippet shows no marker above {snippet[edges[0]].strip()!r}, where the file has "
                      f"lines; they were kept")
    if not markers[edges[-1]] and any(_content(line) for line in original[found[-1][0] + 1:]):
        doubts.append(f"the snippet shows no marker below {snippet[edges[-1]].strip()!r}, where the file has "
                      f"lines; they were kept")
    return changes, doubts


def _read(original: list[str], snippet: list[str], language: str | None) -> tuple[_Path, list[tuple[int, str]]] | None:
    """A snippet read as a path of keys: each line's original line (``_indented_path``,
    ``_section_path``), in the file's order, and the lines whose values it changes; None where it is
    not one, or changes nothing."""
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
    return (found, changes) if changes else None


def set_in_place(original: list[str], placements: list[Placement], language: str | None) -> list[Placement]:
    """The placements of a merge, where a line of the snippet that sets a key has, under the same header,
    the file's line of that key kept beside it (a marker keeps it: ``jobs:`` / ``  test:`` /
    ``    runs-on: macos-latest`` / ``    # ...``), with the snippet's line in place of the kept one: a
    mapping holds a key once, and the file meant holds the key where it was, valued as the snippet says.
    The snippet's line is the first or last of its code, the kept line beyond it (``_beside``); both
    one-line values; a JSON line keeps the file's comma. A CSS rule's declarations the same (``color:
    red;`` set above the ``color: blue;`` kept below it would lose to it), but a declaration after the one
    kept above it is left there (it wins, and may be its fallback). Placements as they are otherwise."""
    if language not in _MAPPINGS or any(b.start < a.end for a, b in zip(placements, placements[1:])):
        return placements  # a file of no known language may hold a key twice (systemd's `After=`)
    merged: list[tuple[str, int | None, tuple[int, int] | None]] = []  # line, kept original line, or snippet's
    pos = 0
    for n, placement in enumerate(placements):
        merged += [(original[j], j, None) for j in range(pos, placement.start)]
        merged += [(line, None, (n, k)) for k, line in enumerate(placement.lines)]
        pos = placement.end
    merged += [(original[j], j, None) for j in range(pos, len(original))]
    lines = [line for line, _, _ in merged]
    groups: dict[tuple, list[int]] = {}
    for i, key in _scoped_keys(lines, language):
        groups.setdefault(key, []).append(i)
    moves: dict[tuple[int, int], tuple[int, str]] = {}  # the snippet's line -> (the kept line, its new text)
    for group in groups.values():
        new = [i for i in group if merged[i][2] is not None]
        kept = [i for i in group if merged[i][1] is not None]
        if len(new) == 1 and len(kept) == 1 and all(_one_line_at(lines, i, language) for i in (*new, *kept)) \
                and _beside(placements, merged[new[0]][2], merged[kept[0]][1], len(original), language != "css"):
            line, j = lines[new[0]], merged[kept[0]][1]
            moves[merged[new[0]][2]] = (j, _restyled(line, original[j], language))
    if not moves:
        return placements
    out = [replace(placement, lines=tuple(line for k, line in enumerate(placement.lines) if (n, k) not in moves))
           for n, placement in enumerate(placements)]
    out += [Placement(j, j + 1, (line,)) for j, line in moves.values()]
    return sorted(out, key=lambda placement: (placement.start, placement.end))


def edge_keys(original: list[str], placements: list[Placement], language: str | None) -> list[str]:
    """Doubts for a merge of a YAML, TOML or JSON file that deletes the file's first (last) lines, before
    (after) the snippet's first (last) line, putting nothing in their place: a snippet with markers that
    shows no marker above ``jobs:`` deletes ``name:`` and ``on:`` by the rule for code (a few lines at an
    edge, an import the snippet replaces), where a configuration's snippet more likely leaves them unsaid."""
    if language not in _CONFIG or not placements:
        return []
    doubts = []
    first, last = placements[0], placements[-1]
    if first.start == 0 and first.lines:
        shown = next((j for j in range(first.end) if original[j].rstrip() == first.lines[0].rstrip()), 0)
        lost = sum(_content(line) for line in original[:shown])
        if lost:
            doubts.append(f"the snippet starts at {first.lines[0].strip()!r} with no marker above it, deleting the "
                          f"file's {lost} lines of keys before it")
    if last.end == len(original) and last.lines:
        shown = next((j for j in range(len(original) - 1, last.start - 1, -1)
                      if original[j].rstrip() == last.lines[-1].rstrip()), len(original) - 1)
        lost = sum(_content(line) for line in original[shown + 1:])
        if lost:
            doubts.append(f"the snippet ends at {last.lines[-1].strip()!r} with no marker below it, deleting the "
                          f"file's {lost} lines of keys after it")
    return doubts


def _beside(placements: list[Placement], new: tuple[int, int], kept: int, length: int, above: bool = True) -> bool:
    """Whether the snippet's line ``new`` (placement, line) is its placement's last line, and the file's line
    ``kept`` among those kept after it (a marker below it keeps them), or (``above``) its first and ``kept``
    before it: a line inside the snippet's code, with lines of the file shown after it, is where the
    snippet puts it."""
    n, k = new
    shown = [i for i, line in enumerate(placements[n].lines) if line.strip()]
    after = placements[n + 1].start if n + 1 < len(placements) else length
    before = placements[n - 1].end if n else 0
    return (k == shown[-1] and placements[n].end <= kept < after
            or above and k == shown[0] and before <= kept < placements[n].start)


def _scoped_keys(lines: list[str], language: str | None) -> Iterator[tuple[int, tuple]]:
    """(line, (its header lines, its indent, its key)) for each key line of a file: YAML's, JSON's and
    CSS's headers the nearest shallower lines above it, each in turn (a CSS rule's selector); TOML's its
    section's header."""
    if language in ("yaml", "json", "css"):
        stack: list[tuple[int, int]] = []  # (indent, line) of the lines above, each shallower
        for i, line in enumerate(lines):
            if not line.strip() or line.lstrip().startswith(("#", "//", "/*")):
                continue  # a JSON object's `{` and a YAML document's `---` open a scope of their own
            width = indent_width(line)
            while stack and stack[-1][0] >= width:
                stack.pop()
            entry = _entry(line, language)
            if entry is not None:
                yield i, (tuple(j for _, j in stack), width, entry[0])
            stack.append((width, i))
        return
    header = -1
    for i, line in enumerate(lines):
        if _TOML_HEADER.match(line):
            header = i
        elif (entry := _key_value(line, language)) is not None and _content(line):
            yield i, ((header,), 0, entry[0])


def _one_line_at(lines: list[str], i: int, language: str | None) -> bool:
    """Whether the key line ``lines[i]`` holds its whole value (no block under it, nothing continued)."""
    if language == "css":
        return True  # a declaration ends with its `;`
    if language in ("yaml", "json"):
        under = range(i + 1, _block_end(lines, i))
        return not _entry(lines[i], language)[2] and not any(_content(lines[j]) for j in under)
    value = _key_value(lines[i], language)[1]
    return _one_line(value) if language == "toml" else not _continued(lines, i)


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
    if language == "css":
        entry = _CSS_DECLARATION.match(line)
        return (entry.group(1).lower(), entry.group(2), False) if entry else None
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
        elif not _one_line_at(original, place, language):
            return None  # the file's value is a block (a list, a mapping, `|` text): not one line replaced
        found.append((place, _restyled(line, original[place], language) if leaf else line,
                      None if leaf else _block_end(original, place)))
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
        if not _one_line_at(original, places[0], language):
            return None
        found.append((places[0], line, None))
    return found


def _key_value(line: str, language: str | None) -> tuple[str, str] | None:
    """A line's key (TOML's with the spaces around its dots taken out) and value, or None."""
    entry = (_TOML_KEY if language == "toml" else _INI_KEY).match(line)
    if entry is None:
        return None
    return (_toml_key(entry.group(1)) if language == "toml" else entry.group(1)), entry.group(2)


def _restyled(line: str, kept: str, language: str | None) -> str:
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


def _one_line(value: str) -> bool:
    """Whether a TOML value ends on its line: brackets and braces closed, no multi-line string opened."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', value.split(" #")[0])
    return text.count("[") == text.count("]") and text.count("{") == text.count("}") and '"""' not in value \
        and "'''" not in value
