"""Deterministic merge of a lazy update snippet into the original file, with no model.

The snippet is split at lazy markers (``markers.py``) into segments; each segment is placed in the
original in order (``anchor.py``): lines it repeats anchor it, lines it leaves out between anchors are
deleted, and each marker keeps the original code between the segments around it. A snippet with no
marker is the whole new file (when it parses, keeps every top-level definition of the original and
leaves out no line at the file's edges, ``fileedges.inside_file``), new versions of the definitions it
contains, matched by kind and name, the keys of a configuration file (YAML, TOML, JSON, INI) it sets
under the headers it shows (``keyed.py``), or a part of the file pasted alone (its first line indented,
or more lines of the file left out before or after it than a whole file may delete there; its ends
found once: ``_pinned_block``).

The result says how far to trust it: ``certain`` only when every segment anchored uniquely, nothing
was guessed, nothing the snippet may not mean to lose was lost (``lost.py``: a definition's header with
its body kept, a definition still in use, the file's last lines), and the merged file parses with no
more errors than the original; ``likely`` when a candidate was built on some guess (the reasons say
which); ``none`` when no candidate could be built. A wrong ``certain`` is the worst outcome, so every
doubt demotes it. Text is LF-only; ``fileio.py`` restores the file's own line endings. This module does
not read or write files and imports no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from fastapply.anchor import place
from fastapply.defplace import place_by_definitions
from fastapply.defs import definitions
from fastapply.fileedges import EDGE_DELETION, held_once, inside_file
from fastapply.keyed import marked_keys, set_keys
from fastapply.keymerge import edge_keys, set_in_place
from fastapply.lost import headless, lost_definitions, tail_still_wired
from fastapply.markers import has_inline_marker, indent_width, marker_lines
from fastapply.restate import restated
from fastapply.segments import Original, Placement, Segment, is_trivial, starts_inside_block
from fastapply.syntax import count_errors, get_language

_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
CERTAIN, LIKELY, NONE = "certain", "likely", "none"
_PART = "the snippet has no lazy markers and is not the whole file; it replaced the part it matches"
_KEYS_OR_WHOLE = ("the snippet may be the whole new file, or the keys it sets with the lines it leaves out kept; "
                  "they were kept")
_NO_PARSER = "no parser for this file type, so the merged file cannot be checked"


@dataclass(frozen=True)
class MergeResult:
    text: str | None  # merged file (LF text), None when no candidate could be built
    confidence: str  # "certain" | "likely" | "none"
    reasons: tuple[str, ...]  # why not certain (human-readable, one line each)
    span: tuple[int, int] | None = None  # the original lines the segments replace: [first's start, last's end)


def merge(original: str, update: str, language: str | None) -> MergeResult:
    """Merge the lazy snippet ``update`` into ``original`` (both LF text) written in ``language``."""
    if language is not None:
        get_language(language)  # unknown names are a usage error
    orig = Original(split_lines(original), language)
    snippet = split_lines(update)
    if not any(line.strip() for line in snippet):
        return MergeResult(None, NONE, ("the update is empty",))
    flags = _marker_flags(snippet, language, orig.lines)
    segments = _segments(snippet, flags)
    if segments is None:
        placements, doubts = _unmarked(orig, snippet)
    elif (keys := marked_keys(orig.lines, snippet, flags, language)) is not None:  # `# ...` / `jobs:` / ...
        placements, doubts = keys
    else:
        placements, doubts = _place_all(orig, segments)
    if placements is None:
        return MergeResult(None, NONE, tuple(doubts))
    placements = set_in_place(orig.lines, placements, language)  # `runs-on:` shown and kept: the shown one stays
    placements, restating, settled = restated(orig.lines, placements, language)  # `limit = 20` shown, `= 10` kept
    doubts = [doubt for doubt in doubts if doubt not in settled] + restating
    doubts += headless(orig, placements) + edge_keys(orig.lines, placements, language)
    text = _assemble(orig.lines, placements, original)
    if text is None:
        return MergeResult(None, NONE, tuple(doubts) + ("the snippet's segments overlap in the original",))
    if segments and segments[-1].marker_after is None and placements and not any(
            line.strip() for line in orig.lines[placements[-1].end:]):  # to the file's end (its blank lines may stay)
        doubts += tail_still_wired(orig, placements[-1], text)
    lost, added = lost_definitions(orig, placements, text)
    doubts += lost
    text = added or text  # the draft: the new definition added after the one it is like
    if any(has_inline_marker(line) for line in snippet if not marker_lines([line], language)[0]):
        doubts.append("a lazy marker sits inside a line of code")
    if language is None:
        if segments is not None:  # a snippet with no marker says so itself where it should (``_unmarked``)
            doubts.append(_NO_PARSER)
    elif count_errors(text, language) > count_errors(original, language):
        doubts.append("the merged file has more syntax errors than the original")
    span = (placements[0].start, placements[-1].end) if placements else None
    return MergeResult(text, LIKELY if doubts else CERTAIN, tuple(doubts), span)


def split(snippet: list[str], language: str | None, original: list[str] = ()) -> list[Segment] | None:
    """The segments between the snippet's markers; None when it has no marker.

    A marker-like line that the original has word for word (a ``...`` line in a docstring) is code.
    """
    return _segments(snippet, _marker_flags(snippet, language, original))


def _segments(snippet: list[str], flags: list[bool]) -> list[Segment] | None:
    """``split`` with the snippet's marker lines already known (``_marker_flags``)."""
    if not any(flags):
        return None
    segments: list[Segment] = []
    current: list[str] = []
    before: int | None = None
    for line, is_marker in zip(snippet, flags):
        if not is_marker:
            current.append(line)
            continue
        if any(line.strip() for line in current):
            segments.append(Segment(tuple(current), before, indent_width(line)))
        before = indent_width(line)
        current = []
    if any(line.strip() for line in current):
        segments.append(Segment(tuple(current), before, None))
    return segments


def _marker_flags(snippet: list[str], language: str | None, original: list[str]) -> list[bool]:
    """Which snippet lines are lazy markers (a marker-like line the original has word for word is code). A
    Python block's body of a bare ``...`` (``markers.marker_lines`` reads it as code: a Protocol's stub) is
    a marker too where the original has no ``...`` line so indented: under a function the file has with a
    body, it stands for that body, as a chat model writes it, where read as code it deleted the body."""
    present = {line.rstrip() for line in original}
    flags = marker_lines(snippet, language)
    if language == "python":
        flags = [flag or line.strip() == "..." for line, flag in zip(snippet, flags)]
    return [flag and line.rstrip() not in present for line, flag in zip(snippet, flags)]


def restyle_markers(original: str, update: str, language: str | None) -> str:
    """``update`` with each lazy marker indented like the first original line it stands for.

    That is how ``snippet.make_snippet`` writes markers, so how fastapply-small saw them in training;
    a marker at column 0 after ``def make_cache():`` (the body it stands for is indented) made it copy
    the marker into its answer, and the same snippet with the marker indented is applied exactly. Only
    where the merge places every segment; the update is returned as it is otherwise (no markers, no
    parser, a segment that anchors nowhere) and where a marker stands for no original line.
    """
    if language is None:
        return update
    orig = Original(split_lines(original), language)
    snippet = split_lines(update)
    flags = _marker_flags(snippet, language, orig.lines)
    segments = _segments(snippet, flags)
    placements = _place_all(orig, segments)[0] if segments else None
    if not placements:
        return update
    bounds = [0, *(edge for p in placements for edge in (p.start, p.end)), len(orig.lines)]
    out, done, open_segment = [], 0, False  # done: segments finished before the current line
    for line, is_marker in zip(snippet, flags):
        if not is_marker:
            open_segment = open_segment or bool(line.strip())
            out.append(line)
            continue
        done, open_segment = done + open_segment, False
        lo, hi = bounds[2 * done], bounds[2 * done + 1]
        first = next((orig.lines[i] for i in range(lo, hi) if orig.lines[i].strip()), None)
        out.append(line if first is None else first[:len(first) - len(first.lstrip())] + line.lstrip())
    text = "".join(out)
    return text if update.endswith("\n") else text[:-1]


def _place_all(orig: Original, segments: list[Segment]) -> tuple[list[Placement] | None, list[str]]:
    placements: list[Placement] = []
    doubts: list[str] = []
    matched: list[tuple[int, int]] = []  # (snippet indent, original line) of every anchored line so far
    pos = 0
    for index, seg in enumerate(segments):
        placement = place(seg, index, orig, pos, _scope(orig, matched, seg.marker_before))
        if placement is None:
            return None, doubts + [f"segment {index + 1} ({_first_line(seg)}) anchors nowhere in the original"]
        if placement.start < pos:
            return None, doubts + [f"segment {index + 1} ({_first_line(seg)}) anchors before the segment above it"]
        placements.append(placement)
        doubts.extend(placement.doubts)
        matched.extend(placement.matched)
        pos = placement.end
    return placements, doubts


def _scope(orig: Original, matched: list[tuple[int, int]], marker_indent: int | None) -> int | None:
    """The original line heading the block a segment is in: the last anchored line above it that is
    left of the marker before it (``class A:`` above ``    # ... existing code ...``)."""
    if not marker_indent:
        return None
    for width, line in reversed(matched):
        if width < marker_indent and not is_trivial(orig.lines[line]):
            return line if orig.block_end(line) > line + 1 else None  # a header with a block under it
    return None


def _unmarked(orig: Original, snippet: list[str]) -> tuple[list[Placement] | None, list[str]]:
    """A snippet without markers: the whole file, the keys of a configuration file it sets, new versions
    of the definitions it contains, or the part of the file it shows."""
    whole = Segment(tuple(snippet), None, None)
    kept = _kept_share(orig.lines, snippet)
    keys = set_keys(orig.lines, snippet, orig.language)
    if keys is not None:  # `jobs:` / `  test:` / `    runs-on: macos-latest`: the key's line replaced
        # it may be the whole new file where it keeps half the file's lines and leaves out no more at its
        # edges than a whole file may delete there (``EDGE_DELETION``)
        return _keyed(orig, snippet, keys, kept >= 0.5 and not inside_file(orig.lines, snippet))
    inside = inside_file(orig.lines, snippet, allowance=0)  # it leaves out lines at the file's edges
    if orig.language is None:  # a Dockerfile, a Makefile: no parser checks the merged file
        part = _part(orig, snippet) if inside else None
        if part is not None:  # pinned: lines between two of the file's, nothing for a parser to add
            return [part[0]], [] if part[1] else [_PART, _NO_PARSER]
        return [Placement(0, len(orig.lines), whole.lines)], ["the snippet has no lazy markers, so it was taken "
                                                              "as the whole file (no parser to check it)", _NO_PARSER]
    text = "".join(snippet)
    original_top = {(d.kind, d.name) for d in orig.defs() if not d.scope}
    snippet_top = {(d.kind, d.name) for d in definitions(text, orig.language) if not d.scope}
    whole_reads = original_top <= snippet_top and kept >= 0.5 and not inside
    if whole_reads and count_errors(text, orig.language) <= count_errors("".join(orig.lines), orig.language):
        return [Placement(0, len(orig.lines), whole.lines)], []
    by_defs = place_by_definitions(Segment(whole.lines, 0, 0, pasted=True), 0, orig, 0, len(orig.lines))
    if by_defs is not None:
        return [by_defs], list(by_defs.doubts)
    part = _part(orig, snippet)
    if part is None:
        return None, ["the snippet has no lazy markers and matches no part of the original"]
    return [part[0]], [] if part[1] else [_PART]


def _keyed(orig: Original, snippet: list[str], keys: tuple[list[Placement], list[str]],
           may_be_whole: bool) -> tuple[list[Placement], list[str]]:
    """The placements of a snippet of keys (``keyed.set_keys``), and its doubts; one more where the
    snippet may be the whole new file and that reading gives another file (a small ``package.json`` shown
    from its ``{`` to its ``}``)."""
    placements, doubts = keys
    merged = _assemble(orig.lines, placements, "")
    if may_be_whole and [line.rstrip() for line in merged.splitlines() if line.strip()] != [
            line.rstrip() for line in snippet if line.strip()]:
        doubts.append(_KEYS_OR_WHOLE)
    if doubts and orig.language is None:
        doubts.append(_NO_PARSER)
    return placements, doubts


def _part(orig: Original, snippet: list[str]) -> tuple[Placement, bool] | None:
    """Where a snippet with no marker goes as a part of the file (``anchor.place``), and whether that is
    certain: placed with no doubt on the lines ``_pinned_block`` finds. None where it matches nowhere."""
    guess = place(Segment(tuple(snippet), 0, 0, pasted=True), 0, orig, 0, None)
    if guess is None:
        return None
    return guess, not guess.doubts and (guess.start, guess.end) == _pinned_block(orig.lines, snippet)


def _pinned_block(original: list[str], snippet: list[str]) -> tuple[int, int] | None:
    """The original lines a snippet without markers stands in place of, where it can only be a part of
    the file, edited inside: it starts inside a block (``segments.starts_inside_block``) or leaves out
    more lines at an edge of the file than a whole file may delete there (``fileedges.inside_file``: a
    README's section), its first and last lines are placed (``_ends``: each the original's once, or
    nearest to the lines the original and it each have once, a code fence), in that order, a block
    ends after the last (the next line is no deeper than its first line, a header, or shallower than its
    lines, a run at one depth: else lines after it may be deleted, ``image:`` shown without the
    ``ports:`` after it), and it leaves out no more of the original lines between them than
    ``EDGE_DELETION`` or the new lines it shows (more would be code elided without a marker). None
    otherwise.

    >>> original = ["a:\\n", "  x: 1\\n", "  y: 2\\n", "  z: 3\\n", "b:\\n"]
    >>> _pinned_block(original, ["  x: 1\\n", "  y: 5\\n", "  z: 3\\n"])
    (1, 4)
    >>> _pinned_block(original, ["a:\\n", "  x: 1\\n"]) is None  # not indented: it may be the whole file
    True
    >>> readme = ["# demo\\n", "## Install\\n", "pip install demo\\n", "## Usage\\n", "demo run\\n", "## License\\n",
    ...           "MIT\\n", "Thanks.\\n"]
    >>> _pinned_block(readme, ["## Install\\n", "pip install 'demo[all]'\\n", "## Usage\\n"])  # four lines after it
    (1, 4)
    >>> _pinned_block(original, ["  x: 1\\n", "  y: 5\\n"]) is None  # z may be deleted
    True
    """
    shown = [line.rstrip() for line in snippet if line.strip()]
    block = starts_inside_block(original, shown)
    if len(shown) < 2 or not (block or inside_file(original, snippet)):
        return None
    lines = [line.rstrip() for line in original]
    ends = _ends(lines, shown)
    if ends is None:
        return None
    start, last = ends
    after = next((line for line in lines[last + 1:] if line.strip()), None)
    # the block it shows ends after its last line: the next line is no deeper than its header, or, where it
    # has none (its lines are a run at one depth), shallower than them
    header = indent_width(shown[1]) > indent_width(shown[0])
    if block and after is not None and indent_width(after) > indent_width(shown[0]) - (0 if header else 1):
        return None  # the block goes on after it: the snippet may end where lines were deleted
    return (start, last + 1) if _elides_nothing(lines, shown, start, last) else None


def _ends(lines: list[str], shown: list[str]) -> tuple[int, int] | None:
    """The original lines (first, last) where the snippet's first and last lines ``shown`` are: each
    where the original has it once, else (a code fence, a closing bracket) its nearest place before
    (after) the lines the original and the snippet each have once, counting as many places as the
    snippet shows it there (``#RawData=`` twice after ``[DHCPv4]``: its second place). A place further
    out would read the original lines between as deleted without the snippet showing them; the nearest
    keeps them. None where the snippet and the original have no line once each, or a line is not found.

    >>> lines = ["## Install", "```bash", "pip install demo", "```", "## Usage", "```bash", "demo run", "```"]
    >>> _ends(lines, ["## Install", "```bash", "pip install 'demo[all]'", "```"])
    (0, 3)
    >>> _ends(lines, ["## Install", "```bash", "pip install demo", "```", "## Use", "```bash", "demo run", "```"])
    (0, 7)
    >>> _ends(lines, ["```bash", "pip install 'demo[all]'", "```"]) is None  # no line the original has once
    True
    """
    pairs = held_once(lines, shown)
    if not pairs:
        return None
    once, places = [i for i, _ in pairs], [place for _, place in pairs]
    firsts = [i for i in range(min(places), -1, -1) if lines[i] == shown[0]]  # nearest first
    lasts = [i for i in range(max(places), len(lines)) if lines[i] == shown[-1]]
    before, after = shown[:once[0] + 1].count(shown[0]), shown[once[-1]:].count(shown[-1])
    if len(firsts) < before or len(lasts) < after or lasts[after - 1] <= firsts[before - 1]:
        return None
    return firsts[before - 1], lasts[after - 1]


def _elides_nothing(lines: list[str], shown: list[str], start: int, last: int) -> bool:
    """Whether the snippet ``shown`` in place of ``lines[start:last + 1]`` leaves out no more of them
    than ``EDGE_DELETION`` or the new lines it shows (more would be code elided without a marker)."""
    inside = {line.strip() for line in lines[start:last + 1]}
    left_out = [line for line in lines[start:last + 1] if line.strip() and line not in shown]
    new = [line for line in shown if line.strip() not in inside]
    return len(left_out) <= max(EDGE_DELETION, len(new))


def _kept_share(original: list[str], snippet: list[str]) -> float:
    """Share of the original's non-blank lines that the snippet repeats."""
    wanted = [line.strip() for line in original if line.strip()]
    if not wanted:
        return 1.0
    have: dict[str, int] = {}
    for line in snippet:
        if line.strip():
            have[line.strip()] = have.get(line.strip(), 0) + 1
    kept = 0
    for line in wanted:
        if have.get(line, 0) > 0:
            have[line] -= 1
            kept += 1
    return kept / len(wanted)


def _assemble(lines: list[str], placements: list[Placement], original: str) -> str | None:
    out: list[str] = []
    pos = 0
    for placement in placements:
        if placement.start < pos:
            return None
        out.extend(lines[pos:placement.start])
        out.extend(_as_the_file_has(lines[placement.start:placement.end], placement.lines))
        pos = placement.end
    out.extend(lines[pos:])
    text = "".join(out)
    if original and not original.endswith("\n") and text.endswith("\n"):
        text = text[:-1]
    return text


def _as_the_file_has(old: list[str], new: tuple[str, ...]) -> list[str]:
    """``new`` (a placement's lines) with each line of code that is one of ``old`` (the lines it replaces)
    with its trailing whitespace cut, as editors and chat models cut it, written as ``old`` has it: a
    snippet that shows a line unchanged does not change it. Whitespace a line of the snippet adds is its
    own, and so is a blank line where the file has one of whitespace alone (decimal.js's `decimal.d.ts`
    in the suite: its commit cut such a line, as editors do)."""
    if all(line.rstrip("\n") == line.rstrip() for line in old):
        return list(new)
    out = list(new)
    ops = SequenceMatcher(None, [line.rstrip() for line in old], [line.rstrip() for line in new], autojunk=False)
    for tag, i1, i2, j1, j2 in ops.get_opcodes():
        if tag == "equal":
            out[j1:j2] = [was if len(was) > len(line) and line.strip() else line
                          for was, line in zip(old[i1:i2], new[j1:j2])]
    return out


def split_lines(text: str) -> list[str]:
    """LF-terminated lines (a missing final newline is added): the lines a merge's placements count."""
    lines = _LINE.findall(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def _first_line(seg: Segment) -> str:
    line = next(line for line in seg.lines if line.strip()).strip()
    return repr(line if len(line) <= 60 else line[:57] + "...")
