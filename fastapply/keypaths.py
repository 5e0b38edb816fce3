"""The snippet's lines read as a path of keys in a configuration file, each as the file takes it (``keyed.py``).

``indented_path`` reads YAML and JSON by indentation: each line a key found once among the children of the
header above it, or a key the file lacks, and where it goes (``_new_place``); ``section_path`` reads TOML
and INI by sections. Each line is a ``Step``; ``keyed.py`` decides what the path means and makes its
placements.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

from fastapply.keylines import (TOML_HEADER, block_end, children_end, closes, is_brackets, is_content, key_entry,
                                key_value, one_line_at, one_line_value, restyled)
from fastapply.markers import indent_width


class Step(NamedTuple):
    """A line of a path of keys as the file takes it."""

    place: int  # the original line it replaces; a new key's: the line it goes in before
    line: str  # as it replaces that line, or goes in
    end: int | None = None  # a header's: one past the lines under it; None for a one-line value
    new: bool = False  # a key the file does not have under that header, inserted
    marked: bool = False  # a lazy marker stands between it and the line shown above it
    body: tuple[str, ...] = ()  # a new YAML header's: the snippet's lines under it, inserted after it


def after_step(step: Step) -> int:
    """The first original line after a step of a path."""
    return step.place if step.new else step.place + 1


def indented_path(original: list[str], shown: list[str], after_marker: list[bool], ends_marked: bool,
                  language: str) -> tuple[list[Step], list[str]] | None:
    """For YAML and JSON, the steps of a path of keys, each a key found once among the children of the
    header above it (in the whole file for the first; JSON's braces aside), or a new key there with a
    one-line value (``_new_place``), in YAML also a new header with the snippet's lines under it as they
    are (a job, a service, an ``env:`` block). A header shown with a marker under it and no line of its
    block (``test:`` / ``    # ...``, ``ends_marked``: after the snippet's last line) is a step whose block
    is kept. And the doubts that a new key may rename one (``_renames``)."""
    kept = [(line, marked) for line, marked in zip(shown, after_marker) if not is_brackets(line)]  # a comment is
    # no key: the snippet is no path
    steps: list[Step] = []
    top = next((j for j, line in enumerate(original) if line.strip()), None)
    root = None  # JSON's root: the keys between it and the first shown left out
    if shown[0].strip() == "{" and top is not None and original[top].strip() == "{":
        root = top
        steps.append(Step(top, shown[0], len(original)))
    kin: list[tuple[int, int | None]] = [(-1, None)] * len(steps)  # each step's indent and the header above it
    added: list[tuple[int, tuple[str, str, bool], range]] = []  # new keys: (step, entry, the lines of their block)
    stack: list[tuple[int, int]] = []  # (indent, original line) of the headers above
    k = -1
    while (k := k + 1) < len(kept):
        line, marked = kept[k]
        entry = key_entry(line, language)
        if entry is None:
            return None
        width = indent_width(line)
        while stack and stack[-1][0] >= width:
            stack.pop()
        leaf = k + 1 == len(kept) or indent_width(kept[k + 1][0]) <= width
        elided = entry[2] and leaf and (kept[k + 1][1] if k + 1 < len(kept) else ends_marked)  # `test:` / `  # ...`
        if leaf == entry[2] and not elided:  # a header opens a block with lines under it; a leaf, the reverse
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
        if not places:  # a key the file lacks, in a mapping, where the path says: a one-line value, or YAML's block
            under = next((j for j in range(k + 1, len(kept)) if indent_width(kept[j][0]) <= width), len(kept))
            after = kept[under][0] if under < len(kept) and indent_width(kept[under][0]) == width else None
            sibling = [j for j in range(start, end) if after and indent_width(original[j]) == width and (
                other := key_entry(original[j], language)) and other[0] == (key_entry(after, language) or ("",))[0]]
            place = _new_place(original, steps, kin, (width, parent), marked, language,
                               sibling[0] if len(sibling) == 1 else None)
            if place is None or not all(key_entry(original[j], language) for j in range(start, end)
                                        if is_content(original[j]) and indent_width(original[j]) == width) \
                    or elided or not leaf and (language != "yaml" or any(marked for _, marked in kept[k + 1:under])
                                               or _runs_in(original, [line for line, _ in kept[k + 1:under]])):
                return None  # a header the file lacks has no block to keep; a new block is shown whole, and is
                # not the file's lines (a header renamed or taken out above them)
            added.append((len(steps), entry, range(start, end)))
            body = tuple(line for line, _ in kept[k + 1:under])
            steps.append(Step(place, line, new=True, marked=marked, body=body))
            kin.append((width, parent))
            k = under - 1
            continue
        place = places[0]
        if not leaf or elided:
            if original[place].rstrip() != line.rstrip():
                return None
            if not elided:
                stack.append((width, place))
            elif k + 1 < len(kept):  # the marker under it stands for its block, not for keys after it
                kept[k + 1] = (kept[k + 1][0], False)
        elif not elided and not one_line_at(original, place, language):
            return None  # the file's value is a block (a list, a mapping, `|` text): not one line replaced
        steps.append(Step(place, restyled(line, original[place], language) if leaf and not elided else line,
                          None if leaf and not elided else block_end(original, place), marked=marked))
        kin.append((width, parent))
    shown_lines = {step.place for step in steps if not step.new}
    doubts = [doubt for n, entry, block in added for doubt in _renames(
        entry, steps[n], [j for j in block if indent_width(original[j]) == kin[n][0] and is_content(original[j])],
        shown_lines, lambda line: key_entry(line, language), original)]
    return steps, doubts


def _runs_in(original: list[str], lines: list[str]) -> bool:
    """Whether ``lines`` (two or more) are a run of the file's lines, spaces around them aside."""
    stripped, run = [line.strip() for line in original], [line.strip() for line in lines]
    return len(run) > 1 and any(stripped[i:i + len(run)] == run for i in range(len(stripped) - len(run) + 1))


def _new_place(original: list[str], steps: list[Step], kin: list[tuple[int, int | None]],
               scope: tuple[int, int | None], marked: bool, language: str, before: int | None = None) -> int | None:
    """Where a new key at ``scope`` (its indent, the original line of the header above it) goes: after the
    last key the snippet shows before it at that scope (its block, in JSON its closing bracket), else
    first under the header shown above it; where a lazy marker stands between it and the line above (the
    marker keeps what comes first), before the file's key the snippet shows after it at that scope
    (``before``, the blank lines above it after the new one), else at the end of the header's block. None
    where the snippet shows neither (a top-level key with nothing above it: where it goes is a guess)."""
    width, parent = scope
    if marked and before is not None:
        return next(j for j in range(before, -1, -1) if j == 0 or original[j - 1].strip())
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


def _renames(entry: tuple[str, ...], step: Step, keys: list[int], shown: set[int], read,
             original: list[str]) -> list[str]:
    """Doubts that a new key (``entry``: key, value; ``step``: where it goes, the lines under it) renames
    the key of its block next to that place (``keys``: the lines of the block's keys, ``read``: a line's
    key and value) that the snippet does not show (``shown``): the same value (not a number or a word of
    five letters or less: ``true``, ``5``), or mostly the same lines under it, or a key spelt alike
    (``node_version``, ``node-version``). Both are kept."""
    def alike(a: str, b: str) -> bool:
        a, b = (re.sub(r"[\s_.-]", "", key.strip("\"'").lower()) for key in (a, b))
        return SequenceMatcher(None, a, b).ratio() >= 0.8

    def same_block(j: int) -> bool:
        under = [line.strip() for line in original[j + 1:block_end(original, j)] if line.strip()]
        return bool(step.body) and SequenceMatcher(None, under, [line.strip() for line in step.body]).ratio() >= 0.8

    value = entry[1].removesuffix(",").strip()
    telling = len(value) > 5 and not re.fullmatch(r"[\d.eE+-]+", value)
    beside = [max((j for j in keys if j < step.place), default=None), min((j for j in keys if j >= step.place),
                                                                          default=None)]
    others = [(j, read(original[j])) for j in beside if j is not None and j not in shown]
    renamed = [other[0] for j, other in others if other is not None and (
        telling and other[1].removesuffix(",").strip() == value or alike(entry[0], other[0]) or same_block(j))]
    return [f"the snippet adds the key {entry[0]!r}, which the file lacks, beside {renamed[0]!r}, which it does not "
            f"show: it may rename it; both were kept"] if renamed else []


def section_path(original: list[str], shown: list[str], after_marker: list[bool],
                 language: str | None) -> tuple[list[Step], list[str]] | None:
    """For TOML and files of no known language read as INI (``[section]``, ``key = value``: ``setup.cfg``,
    ``.env``, a systemd unit), the steps of a path of keys, where each header is found once in the file and
    each key once in the section above it (the file's top keys, or the whole file where the snippet shows
    no header above it), its value one line, or is a new key with a one-line value: after the key shown
    above it, else first in the section shown above it, or at the section's end where a lazy marker stands
    between. A section the file lacks, with its keys, goes in right after the key the snippet shows above it
    where that is its section's last, else before the next section the snippet shows, else at the file's
    end (a table's place says nothing in TOML, nor a section's in INI). And the doubts that a new key may
    rename one (``_renames``)."""
    headers = [j for j, line in enumerate(original) if TOML_HEADER.match(line)]
    file_lines = {line.strip() for line in original}
    steps: list[Step] = []
    added: list[tuple[int, tuple[str, str], list[int]]] = []  # new keys: (step, key and value, its section's keys)
    section: tuple[int, int] | None = None  # the original lines of the section the snippet is in
    new_section: int | None = None  # where the section the snippet shows goes in, where the file lacks it
    for n, (line, marked) in enumerate(zip(shown, after_marker)):
        if TOML_HEADER.match(line):
            places = [j for j in headers if original[j].strip() == line.strip()]
            if len(places) > 1:
                return None
            if not places:
                if sum(other.strip() == line.strip() for other in shown) > 1:
                    return None  # a new table shown twice
                later = [j for j in headers for other in shown[n + 1:] if TOML_HEADER.match(other)
                         and original[j].strip() == other.strip()][:1]
                last = steps[-1] if steps and not marked and steps[-1].end is None else None
                if last is not None and not any(is_content(original[j]) and not TOML_HEADER.match(original[j])
                                                for j in range(after_step(last), _section_of(
                                                    headers, after_step(last), len(original)).stop)):
                    new_section = after_step(last)  # right after the last key of the section shown above it
                else:
                    new_section = later[0] if later else len(original)
                steps.append(Step(new_section, line, new=True, marked=marked))
                continue
            section, new_section = (places[0] + 1, next((j for j in headers if j > places[0]), len(original))), None
            steps.append(Step(places[0], line, section[1], marked=marked))
            continue
        entry = key_value(line, language)
        if entry is None or language == "toml" and not one_line_value(entry[1]):
            return None
        if new_section is not None:
            if line.strip() in file_lines:
                return None  # a line of the file under a header the file lacks: a run of its lines, a header added
            steps.append(Step(new_section, line, new=True, marked=marked))
            continue
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
                place = after_step(steps[-1])  # after the key shown above, or first under its header
            keys = range(*section) if section else _section_of(headers, place, len(original))
            added.append((len(steps), entry, [j for j in keys if is_content(original[j]) and j not in headers]))
            steps.append(Step(place, line, new=True, marked=marked))
            continue
        if not one_line_at(original, places[0], language):
            return None
        steps.append(Step(places[0], line, marked=marked))
    if any(step.new and TOML_HEADER.match(step.line) and (n + 1 == len(steps) or not steps[n + 1].new)
           for n, step in enumerate(steps)):
        return None  # a section the file lacks, with no key: a header added to a run of the file's lines
    shown_lines = {step.place for step in steps if not step.new}
    return steps, [doubt for n, entry, keys in added for doubt in _renames(
        entry, steps[n], keys, shown_lines, lambda line: key_value(line, language), original)][:1]


def _section_of(headers: list[int], line: int, length: int) -> range:
    """The original lines of the section ``line`` is in (the top keys before the first header)."""
    return range(max((j + 1 for j in headers if j < line), default=0), next((j for j in headers if j >= line), length))
