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
value`` whose key is found once there; or a new key with a one-line value under a header shown (or after
a key shown), which goes in after the key shown above it, else first under its header (``jobs:`` /
``  lint:`` / ``    timeout-minutes: 5``; ``"scripts": {`` / ``"lint": "eslint ."``). At least one value
changes or one key is new. A JSON line keeps the file's comma after it, or gets the one its object needs.
A new key that may rename one the snippet does not show (its value, or a key spelt alike) is a doubt; one
shown where the file has lines the snippet leaves out (``a:`` / ``new:`` / ``c:`` where the file has ``b:``
between) most likely replaces them, and the snippet is read as a part of the file or as code.

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
``lint:`` were deleted; a new key after a marker goes at the end of its block. One that is not (a block the
file lacks, a list item) is merged as code (``keymerge.py``). The lines themselves, which are keys and
where their blocks end, are ``keylines.py``'s.

>>> original = ["jobs:\\n", "  test:\\n", "    runs-on: ubuntu-latest\\n", "    steps:\\n", "      - run: pytest\\n"]
>>> placements, doubts = set_keys(original, ["jobs:\\n", "  test:\\n", "    runs-on: macos-latest\\n"], "yaml")
>>> [(p.start, p.end, p.lines) for p in placements], doubts[0][:44]  # steps: and its item after it: a doubt
([(2, 3, ('    runs-on: macos-latest\\n',))], "the snippet sets keys on a run of the file's")
>>> placements, doubts = set_keys(original, ["jobs:\\n", "  test:\\n", "    timeout-minutes: 5\\n"], "yaml")
>>> [(p.start, p.end, p.lines) for p in placements]  # first under `test:`
[(2, 2, ('    timeout-minutes: 5\\n',))]
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

from fastapply.edges import EDGE_DELETION
from fastapply.keylines import (CONFIG, TOML_HEADER, block_end, children_end, closes, is_brackets, is_content,
                                key_entry, key_value, one_line_at, one_line_value, restyled)
from fastapply.markers import indent_width
from fastapply.segments import Placement

_LANGUAGES = (*CONFIG, None)  # read as paths of keys; None: a file of no known language, read as INI
_RUN = ("the snippet sets keys on a run of the file's lines; the lines after it were kept, though it may be their "
        "block as it should be, those lines deleted")


def set_keys(original: list[str], snippet: list[str], language: str | None) -> tuple[list[Placement], list[str]] | None:
    """The placements of a snippet of keys (each key's line replaced, each new key's line inserted), and the
    doubts: none where it leaves out lines between those it shows, or, read as the blocks of the headers it
    shows as they should be (the whole file where it shows none), it would delete no line, or more than a
    snippet may delete with no marker (``EDGE_DELETION``: more is left out, not deleted). None where the
    snippet is not such a path of keys in this file, or changes nothing."""
    read = _read(original, snippet, language)
    if read is None:
        return None
    steps, placements, doubts = read
    gap = any(is_content(original[j]) for a, b in zip(steps, steps[1:]) for j in range(_after_step(a), b.place))
    ends = [step.end for step in steps if step.end is not None]  # the blocks of the headers shown (else the file)
    last = _after_step(steps[-1])
    around = range(last, max(ends)) if ends else [*range(steps[0].place), *range(last, len(original))]
    deleted = sum(is_content(original[j]) for j in around)  # by the blocks read as they should be
    if not (gap or deleted == 0 or deleted > EDGE_DELETION):
        doubts.insert(0, _RUN)
    return placements, doubts


def marked_keys(original: list[str], snippet: list[str], markers: list[bool],
                language: str | None) -> tuple[list[Placement], list[str]] | None:
    """For a snippet with lazy markers (``markers``: which of its lines are), the placements of its keys
    and the doubts, where its other lines are a path of keys (``set_keys``; YAML, TOML, JSON): the
    lines a marker stands for are kept, and so are those between the headers of the path (read as code,
    a segment deletes them: ``jobs:`` / ``  test:`` deleted the jobs between); a new key after a marker
    goes at the end of the block it is in. Doubts where no marker is above (below) its first (last) line
    and the file has lines there: read as code, those are deleted. None, and the snippet is merged as code,
    where it shows two keys of one block with lines of the file between them and no marker (its author
    marks what is left out: they are deleted), ends on a new key with no marker below it where the file
    has lines after it (which it may replace, as ``_in_gap`` reads a new key between two), or shows a new
    key whose line the file has elsewhere (in another section: as code, a line of the file shown)."""
    if language not in CONFIG:
        return None
    read = _read(original, snippet, language, markers)
    if read is None:
        return None
    steps, placements, doubts = read
    edges = [i for i, line in enumerate(snippet) if markers[i] or not is_brackets(line)]  # JSON's braces aside
    if any(a.end is None and b.end is None and not b.marked and indent_width(a.line) == indent_width(b.line)
           and any(is_content(line) for line in original[_after_step(a):b.place]) for a, b in zip(steps, steps[1:])):
        return None
    if steps[-1].new and not markers[edges[-1]] and any(is_content(line) for line in original[steps[-1].place:]):
        return None
    if any(step.new and step.line.strip() in {line.strip() for line in original} for step in steps):
        return None
    if not markers[edges[0]] and any(is_content(line) for line in original[:steps[0].place]):
        doubts.append(f"the snippet shows no marker above {snippet[edges[0]].strip()!r}, where the file has "
                      f"lines; they were kept")
    if not markers[edges[-1]] and any(is_content(line) for line in original[_after_step(steps[-1]):]):
        doubts.append(f"the snippet shows no marker below {snippet[edges[-1]].strip()!r}, where the file has "
                      f"lines; they were kept")
    return placements, doubts


class _Step(NamedTuple):
    """A line of a path of keys as the file takes it."""

    place: int  # the original line it replaces; a new key's: the line it goes in before
    line: str  # as it replaces that line, or goes in
    end: int | None = None  # a header's: one past the lines under it; None for a one-line value
    new: bool = False  # a key the file does not have under that header, inserted
    marked: bool = False  # a lazy marker stands between it and the line shown above it


def _after_step(step: _Step) -> int:
    """The first original line after a step of a path."""
    return step.place if step.new else step.place + 1


def _read(original: list[str], snippet: list[str], language: str | None,
          markers: list[bool] | None = None) -> tuple[list[_Step], list[Placement], list[str]] | None:
    """A snippet read as a path of keys (``_indented_path``, ``_section_path``; its lazy markers, where
    ``markers`` says which lines are, left out): its steps, in the file's order, the placements that make
    its changes, and doubts; None where it is not one, or changes nothing."""
    if language not in _LANGUAGES:
        return None
    marks = markers or [False] * len(snippet)
    shown, after_marker, marked = [], [], False
    for line, marker in zip(snippet, marks):
        if marker:
            marked = True
        elif line.strip():
            shown.append(line if line.endswith("\n") else line + "\n")
            after_marker.append(marked)
            marked = False
    if not shown:
        return None
    read = (_indented_path(original, shown, after_marker, language) if language in ("yaml", "json")
            else _section_path(original, shown, after_marker, language))
    if read is None:
        return None
    steps, doubts = read
    if any(b.place < _after_step(a) for a, b in zip(steps, steps[1:])) or all(step.new for step in steps) \
            or _in_gap(original, steps):
        return None  # shown out of the file's order, or one line twice; nothing of the file to place it by; or
        # a new key in place of lines left out
    placements = _edits(original, steps, language)
    return (steps, placements, doubts) if placements else None


def _in_gap(original: list[str], steps: list[_Step]) -> bool:
    """Whether a new key is shown where the file has lines that the snippet leaves out, between the key
    shown above them and the one below (``a: 1`` / ``new: 2`` / ``c: 3`` where the file has ``b:``
    between): most likely a line that replaces them (``b:`` renamed in a run of the file's lines), as a
    part of the file reads it, not a key added with them kept."""
    for n, step in enumerate(steps):
        below = next((other for other in steps[n + 1:] if not other.new), None)
        if step.new and below and any(is_content(line) for line in original[step.place:below.place]):
            return True
    return False


def _edits(original: list[str], steps: list[_Step], language: str | None) -> list[Placement]:
    """The placements of a path's steps: each changed key's line replaced, the new ones inserted; in JSON
    each line with the comma after it that the object needs (the line above a new key gains one)."""
    replaced = {step.place: step.line for step in steps
                if not step.new and step.end is None and original[step.place].rstrip() != step.line.rstrip()}
    inserted: dict[int, list[str]] = {}
    for step in steps:
        if step.new:
            inserted.setdefault(step.place, []).append(step.line)
    if language == "json":
        for place, lines in inserted.items():
            below = next((line for line in original[place:] if line.strip() and is_content(line) or closes(line)), "")
            last = "" if closes(below) else ","
            lines[:] = [line.rstrip().removesuffix(",") + ("," if k + 1 < len(lines) else last) + "\n"
                        for k, line in enumerate(lines)]
            above = next((j for j in range(place - 1, -1, -1) if original[j].strip() and (
                is_content(original[j]) or closes(original[j]))), None)
            text = replaced.get(above, original[above]) if above is not None else ""
            if text and not text.rstrip().endswith((",", "{", "[")):
                replaced[above] = text.rstrip() + ",\n"
    return [Placement(j, j + (j in replaced), (*inserted.get(j, ()), *([replaced[j]] if j in replaced else ())))
            for j in sorted({*replaced, *inserted})]


def _indented_path(original: list[str], shown: list[str], after_marker: list[bool],
                   language: str) -> tuple[list[_Step], list[str]] | None:
    """For YAML and JSON, the steps of a path of keys, each a key found once among the children of the
    header above it (in the whole file for the first; JSON's braces aside), or a new key there with a
    one-line value (``_new_place``), and the doubts that a new key may rename one (``_renames``)."""
    kept = [(line, marked) for line, marked in zip(shown, after_marker) if not is_brackets(line)]  # a comment is
    # no key: the snippet is no path
    steps: list[_Step] = []
    top = next((j for j, line in enumerate(original) if line.strip()), None)
    root = None  # JSON's root: the keys between it and the first shown left out
    if shown[0].strip() == "{" and top is not None and original[top].strip() == "{":
        root = top
        steps.append(_Step(top, shown[0], len(original)))
    kin: list[tuple[int, int | None]] = [(-1, None)] * len(steps)  # each step's indent and the header above it
    added: list[tuple[int, tuple[str, str, bool], range]] = []  # new keys: (step, entry, the lines of their block)
    stack: list[tuple[int, int]] = []  # (indent, original line) of the headers above
    for k, (line, marked) in enumerate(kept):
        entry = key_entry(line, language)
        if entry is None:
            return None
        width = indent_width(line)
        while stack and stack[-1][0] >= width:
            stack.pop()
        leaf = k + 1 == len(kept) or indent_width(kept[k + 1][0]) <= width
        if leaf == entry[2]:  # a header opens a block with lines under it; a leaf, the reverse
            return None
        parent = stack[-1][1] if stack else root
        if stack:
            start, end = stack[-1][1] + 1, block_end(original, stack[-1][1])
            children = [j for j in range(start, end) if is_content(original[j])]
            if not children or min(indent_width(original[j]) for j in children) != width:
                return None
        else:
            start, end = 0, len(original)
        places = [j for j in range(start, end) if indent_width(original[j]) == width
                  and (other := key_entry(original[j], language)) and other[0] == entry[0]]
        if len(places) > 1:
            return None
        if not places:  # a key the file lacks: a one-line value, in a mapping, where the path says
            place = _new_place(original, steps, kin, (width, parent), marked, language) if leaf else None
            if place is None or not all(key_entry(original[j], language) for j in range(start, end)
                                        if is_content(original[j]) and indent_width(original[j]) == width):
                return None
            added.append((len(steps), entry, range(start, end)))
            steps.append(_Step(place, line, new=True, marked=marked))
            kin.append((width, parent))
            continue
        place = places[0]
        if not leaf:
            if original[place].rstrip() != line.rstrip():
                return None
            stack.append((width, place))
        elif not one_line_at(original, place, language):
            return None  # the file's value is a block (a list, a mapping, `|` text): not one line replaced
        steps.append(_Step(place, restyled(line, original[place], language) if leaf else line,
                           None if leaf else block_end(original, place), marked=marked))
        kin.append((width, parent))
    shown_lines = {step.place for step in steps if not step.new}
    doubts = [doubt for n, entry, block in added for doubt in _renames(
        entry, steps[n].place, [j for j in block if indent_width(original[j]) == kin[n][0] and is_content(original[j])],
        shown_lines, lambda line: key_entry(line, language), original)]
    return steps, doubts


def _new_place(original: list[str], steps: list[_Step], kin: list[tuple[int, int | None]],
               scope: tuple[int, int | None], marked: bool, language: str) -> int | None:
    """Where a new key at ``scope`` (its indent, the original line of the header above it) goes: after the
    last key the snippet shows before it at that scope (its block, in JSON its closing bracket), else
    first under the header shown above it; at the end of the header's block where a lazy marker stands
    between it and the line above (the marker keeps what comes first). None where the snippet shows
    neither (a top-level key with nothing above it: where it goes is a guess)."""
    width, parent = scope
    if marked:
        return None if parent is None else children_end(original, parent)
    sibling = next((steps[n] for n in range(len(steps) - 1, -1, -1) if kin[n] == scope), None)
    if sibling is not None:
        return sibling.place if sibling.new else _after(original, sibling.place, language)
    return None if parent is None else parent + 1


def _after(original: list[str], line: int, language: str | None) -> int:
    """One past a key's lines: its block, and in JSON the bracket closing the object or array it opens."""
    end = children_end(original, line)
    if language == "json" and key_entry(original[line], language)[2]:
        closer = next((j for j in range(end, len(original)) if original[j].strip()), None)
        if closer is not None and closes(original[closer]):
            return closer + 1
    return end


def _renames(entry: tuple[str, ...], place: int, keys: list[int], shown: set[int], read,
             original: list[str]) -> list[str]:
    """Doubts that a new key (``entry``: key, value), going in before the original line ``place``, renames
    the key of its block next to that place (``keys``: the lines of the block's keys, ``read``: a line's
    key and value) that the snippet does not show (``shown``): the same value (not a number or a word of
    five letters or less: ``true``, ``5``), or a key spelt alike (``node_version``, ``node-version``). Both
    are kept."""
    def alike(a: str, b: str) -> bool:
        a, b = (re.sub(r"[\s_.-]", "", key.strip("\"'").lower()) for key in (a, b))
        return SequenceMatcher(None, a, b).ratio() >= 0.8

    value = entry[1].removesuffix(",").strip()
    telling = len(value) > 5 and not re.fullmatch(r"[\d.eE+-]+", value)
    beside = [max((j for j in keys if j < place), default=None), min((j for j in keys if j >= place), default=None)]
    others = [read(original[j]) for j in beside if j is not None and j not in shown]
    return [f"the snippet adds the key {entry[0]!r}, which the file lacks, beside {other[0]!r}, which it does not "
            f"show: it may rename it; both were kept" for other in others if other is not None and (
                telling and other[1].removesuffix(",").strip() == value or alike(entry[0], other[0]))][:1]


def _section_path(original: list[str], shown: list[str], after_marker: list[bool],
                  language: str | None) -> tuple[list[_Step], list[str]] | None:
    """For TOML and files of no known language read as INI (``[section]``, ``key = value``: ``setup.cfg``,
    ``.env``, a systemd unit), the steps of a path of keys, where each header is found once in the file and
    each key once in the section above it (the file's top keys, or the whole file where the snippet shows
    no header above it), its value one line, or is a new key with a one-line value: after the key shown
    above it, else first in the section shown above it, or at the section's end where a lazy marker stands
    between; and the doubts that a new key may rename one (``_renames``)."""
    headers = [j for j, line in enumerate(original) if TOML_HEADER.match(line)]
    steps: list[_Step] = []
    added: list[tuple[int, tuple[str, str], list[int]]] = []  # new keys: (step, key and value, its section's keys)
    section: tuple[int, int] | None = None  # the original lines of the section the snippet is in
    for line, marked in zip(shown, after_marker):
        if TOML_HEADER.match(line):
            places = [j for j in headers if original[j].strip() == line.strip()]
            if len(places) != 1:
                return None
            section = (places[0] + 1, next((j for j in headers if j > places[0]), len(original)))
            steps.append(_Step(places[0], line, section[1], marked=marked))
            continue
        entry = key_value(line, language)
        if entry is None or language == "toml" and not one_line_value(entry[1]):
            return None
        start, end = section or (0, len(original))
        places = [j for j in range(start, end) if j not in headers
                  and (other := key_value(original[j], language)) and other[0] == entry[0]]
        if len(places) > 1:
            return None
        if not places:  # a key the file lacks
            if not steps or marked and section is None:
                return None
            if marked:
                place = max((j + 1 for j in range(*section) if original[j].strip()), default=section[0])
            else:
                place = _after_step(steps[-1])  # after the key shown above, or first under its header
            keys = range(*section) if section else _section_of(headers, place, len(original))
            added.append((len(steps), entry, [j for j in keys if is_content(original[j]) and j not in headers]))
            steps.append(_Step(place, line, new=True, marked=marked))
            continue
        if not one_line_at(original, places[0], language):
            return None
        steps.append(_Step(places[0], line, marked=marked))
    shown_lines = {step.place for step in steps if not step.new}
    return steps, [doubt for n, entry, keys in added for doubt in _renames(
        entry, steps[n].place, keys, shown_lines, lambda line: key_value(line, language), original)][:1]


def _section_of(headers: list[int], line: int, length: int) -> range:
    """The original lines of the section ``line`` is in (the top keys before the first header)."""
    return range(max((j + 1 for j in headers if j < line), default=0), next((j for j in headers if j >= line), length))
