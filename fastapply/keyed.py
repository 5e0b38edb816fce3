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
a key shown), or in YAML a new header with the snippet's lines under it as they are, which goes in after
the key shown above it, else first under its header (``jobs:`` / ``  lint:`` / ``    timeout-minutes: 5``;
``"scripts": {`` / ``"lint": "eslint ."``); or a TOML table (INI section) the file lacks with its keys,
before the next one shown, else at the file's end. At least one value changes or one key is new. A JSON
line keeps the file's comma after it, or gets the one its object needs. A new key that may rename one
the snippet does not show (its value, its lines, or a key spelt alike) is a doubt; one shown where the
file has lines the snippet leaves out (``a:`` / ``new:`` / ``c:`` where the file has ``b:`` between), or
a new block or section made of the file's lines, is most likely the file's lines edited, and the snippet
is read as a part of the file or as code.

The lines the snippet leaves out are kept. That is certain where it leaves out lines between the lines it
shows (``services:`` shown above ``  db:`` with ``web``'s lines left out): its author leaves lines out
with no marker, so those after its last line are left out too, not deleted. A snippet that is a run of
the file's lines may instead be the blocks of its headers as they should be, the lines after it under
them deleted: where those are 1 to 3 lines (``  db:`` / ``    image: postgres:16``, ``ports:`` and its
item after it) that is likely, the model decides; where there are none (``[flake8]`` /
``max-line-length = 120``, the file's last section) both readings agree; where there are more
(``jobs:`` / ``  test:`` / ``    runs-on: macos-latest``, the job's steps and the next job after it),
they are left out, as for a part of a file (``fileedges.EDGE_DELETION``), and the reading is certain.

A snippet with markers whose other lines are such a path (``# ...`` / ``jobs:`` / ``  lint:`` /
``    runs-on: macos-latest`` / ``    # ...``) sets its keys the same way (``marked_keys``): merged as code,
the new line was inserted beside the ``runs-on:`` the marker keeps, and the jobs between ``jobs:`` and
``lint:`` were deleted; a new key after a marker goes before the key shown after it, else at the end of its
block, and a header shown with only a marker under it (``  test:`` / ``    # ...``) keeps its block. One
that is not (a list item, a JSON object the file lacks) is merged as code (``keymerge.py``). The snippet's
lines are read as a path by ``keypaths.py``; which lines are keys, and where their blocks end, is
``keylines.py``'s.

>>> original = ["jobs:\\n", "  test:\\n", "    runs-on: ubuntu-latest\\n", "    steps:\\n", "      - run: pytest\\n"]
>>> placements, doubts = set_keys(original, ["jobs:\\n", "  test:\\n", "    runs-on: macos-latest\\n"], "yaml")
>>> [(p.start, p.end, p.lines) for p in placements], doubts[0][:44]  # steps: and its item after it: a doubt
([(2, 3, ('    runs-on: macos-latest\\n',))], "the snippet sets keys on a run of the file's")
>>> placements, doubts = set_keys(original, ["jobs:\\n", "  test:\\n", "    timeout-minutes: 5\\n"], "yaml")
>>> [(p.start, p.end, p.lines) for p in placements]  # first under `test:`
[(2, 2, ('    timeout-minutes: 5\\n',))]
"""

from __future__ import annotations

from fastapply.fileedges import EDGE_DELETION
from fastapply.keylines import CONFIG, TOML_HEADER, closes, is_brackets, is_content
from fastapply.keypaths import Step, after_step, indented_path, section_path
from fastapply.markers import indent_width
from fastapply.segments import Placement

_LANGUAGES = (*CONFIG, None)  # read as paths of keys; None: a file of no known language, read as INI
_INDENTED = ("yaml", "json")  # read by indentation (``indented_path``); the others by sections
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
    gap = any(is_content(original[j]) for a, b in zip(steps, steps[1:]) for j in range(after_step(a), b.place))
    ends = [step.end for step in steps if step.end is not None]  # the blocks of the headers shown (else the file)
    last = after_step(steps[-1])
    around = range(last, max(ends)) if ends else [*range(steps[0].place), *range(last, len(original))]
    deleted = sum(is_content(original[j]) for j in around)  # by the blocks read as they should be
    if not (gap or deleted == 0 or deleted > EDGE_DELETION or all(step.new for step in steps)):  # a new table
        # alone is no file as it should be, whatever the file's size
        doubts.insert(0, _RUN)
    return placements, doubts


def marked_keys(original: list[str], snippet: list[str], markers: list[bool],
                language: str | None) -> tuple[list[Placement], list[str]] | None:
    """For a snippet with lazy markers (``markers``: which of its lines are), the placements of its keys
    and the doubts, where its other lines are a path of keys (``set_keys``; YAML, TOML, JSON): the
    lines a marker stands for are kept, and so are those between the headers of the path (read as code,
    a segment deletes them: ``jobs:`` / ``  test:`` deleted the jobs between); a new key after a marker
    goes before the key the snippet shows next, else at the end of the block it is in. Doubts where no
    marker is above (below) its first (last) line and the file has lines there: read as code, those are
    deleted. None where the snippet is merged as code instead (``_code_reads``)."""
    if language not in CONFIG:
        return None
    read = _read(original, snippet, language, markers)
    if read is None:
        return None
    steps, placements, doubts = read
    edges = [i for i, line in enumerate(snippet) if markers[i] or not is_brackets(line)]  # JSON's braces aside
    if _code_reads(original, steps, ends_marked=markers[edges[-1]]):
        return None
    if not markers[edges[0]] and any(is_content(line) for line in original[:steps[0].place]):
        doubts.append(f"the snippet shows no marker above {snippet[edges[0]].strip()!r}, where the file has "
                      f"lines; they were kept")
    if not markers[edges[-1]] and any(is_content(line) for line in original[after_step(steps[-1]):]):
        doubts.append(f"the snippet shows no marker below {snippet[edges[-1]].strip()!r}, where the file has "
                      f"lines; they were kept")
    return placements, doubts


def _code_reads(original: list[str], steps: list[Step], ends_marked: bool) -> bool:
    """Whether a snippet with markers that is a path of keys reads better as code: it shows two keys of one
    block with lines of the file between them and no marker (its author marks what is left out: they are
    deleted), ends on a new key with no marker below it (``ends_marked``) where the file has lines after
    it (which it may replace, as ``_in_gap`` reads a new key between two), or shows a new key whose line
    the file has elsewhere (in another section: as code, a line of the file shown)."""
    file_lines = {line.strip() for line in original}
    skipped = any(a.end is None and b.end is None and not b.marked and indent_width(a.line) == indent_width(b.line)
                  and any(is_content(line) for line in original[after_step(a):b.place])
                  for a, b in zip(steps, steps[1:]))
    return skipped or steps[-1].new and not ends_marked and any(
        is_content(line) for line in original[steps[-1].place:]) or any(
        step.new and step.line.strip() in file_lines for step in steps)


def _read(original: list[str], snippet: list[str], language: str | None,
          markers: list[bool] | None = None) -> tuple[list[Step], list[Placement], list[str]] | None:
    """A snippet read as a path of keys (``indented_path``, ``section_path``; its lazy markers, where
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
    read = (indented_path(original, shown, after_marker, marked, language) if language in _INDENTED
            else section_path(original, shown, after_marker, language))
    if read is None:
        return None
    steps, doubts = read
    out_of_order = any(b.place < after_step(a) for a, b in zip(steps, steps[1:]))  # or one line twice
    unplaced = all(step.new for step in steps) and not (language not in _INDENTED and TOML_HEADER.match(steps[0].line))
    if out_of_order or unplaced or _in_gap(original, steps):  # unplaced: nothing of the file to place it by,
        return None  # but for a new table (at the end)
    placements = _edits(original, steps, language)
    return (steps, placements, doubts) if placements else None


def _in_gap(original: list[str], steps: list[Step]) -> bool:
    """Whether a new key is shown where the file has lines that the snippet leaves out, between the key
    shown above them and the one below (``a: 1`` / ``new: 2`` / ``c: 3`` where the file has ``b:``
    between): most likely a line that replaces them (``b:`` renamed in a run of the file's lines), as a
    part of the file reads it, not a key added with them kept."""
    for n, step in enumerate(steps):
        below = next((other for other in steps[n + 1:] if not other.new), None)
        if step.new and below and any(is_content(line) for line in original[step.place:below.place]):
            return True
    return False


def _edits(original: list[str], steps: list[Step], language: str | None) -> list[Placement]:
    """The placements of a path's steps: each changed key's line replaced, the new ones inserted; in JSON
    each line with the comma after it that the object needs (the line above a new key gains one)."""
    replaced = {step.place: step.line for step in steps
                if not step.new and step.end is None and original[step.place].rstrip() != step.line.rstrip()}
    inserted: dict[int, list[str]] = {}
    for step in steps:
        if step.new:
            inserted.setdefault(step.place, []).extend((step.line, *step.body))
    for place, lines in inserted.items():  # a new section set apart by a blank line, as the file's are
        if TOML_HEADER.match(lines[0]) and language in ("toml", None):
            if place == len(original) and place and original[-1].strip():
                lines.insert(0, "\n")
            elif place < len(original) and TOML_HEADER.match(original[place]):  # right before the next section
                lines.append("\n")
    if language == "json":
        for place, lines in inserted.items():
            below = next((line for line in original[place:] if is_content(line) or closes(line)), "")
            last = "" if closes(below) else ","
            lines[:] = [line.rstrip().removesuffix(",") + ("," if k + 1 < len(lines) else last) + "\n"
                        for k, line in enumerate(lines)]
            above = next((j for j in range(place - 1, -1, -1) if is_content(original[j]) or closes(original[j])), None)
            text = replaced.get(above, original[above]) if above is not None else ""
            if text and not text.rstrip().endswith((",", "{", "[")):
                replaced[above] = text.rstrip() + ",\n"
    return [Placement(j, j + (j in replaced), (*inserted.get(j, ()), *([replaced[j]] if j in replaced else ())))
            for j in sorted({*replaced, *inserted})]
