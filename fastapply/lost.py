"""What a merged file may have lost that its snippet did not mean to lose, each a doubt that keeps the merge
from being certain (``merge.py`` asks once the placements are assembled): a definition whose header a
segment deletes while its body stays (``headless``); a definition deleted though the merged file still
uses it, or read as renamed, or as cut short, where the segment may as well add its new definition after
it (``lost_definitions``, which also gives the merged file so read, the model's draft); the file's last
lines, deleted by a last segment with no marker after it (``tail_still_wired``).
"""

from __future__ import annotations

from collections import Counter

from fastapply.asks import bound_inside, bound_names, identifiers
from fastapply.defs import Definition, definitions
from fastapply.fileedges import lost_at_end, still_wired
from fastapply.markers import indent_width
from fastapply.segments import Original, Placement


def lost_definitions(orig: Original, placements: list[Placement], text: str) -> tuple[list[str], str | None]:
    """The doubts of ``_still_called`` and ``_renamed_alike``, asked of the definitions whose header the
    merged file ``text`` has fewer copies of (``_headers_lost``), and the draft ``_renamed_alike`` reads."""
    lost = _headers_lost(orig, text)
    alike, added = _renamed_alike(orig, placements, text, lost)
    return _still_called(orig, text, lost) + alike, added


def headless(orig: Original, placements: list[Placement]) -> list[str]:
    """Doubts for definitions whose header line a placement deletes while lines of their body stay.

    A segment that covers ``function encodeArray(...) {`` with no line that may be that header
    rewritten (``_opens_alike``), and ends inside that function or anchors on its body, leaves the body
    hanging on whatever the segment wrote above it: what a segment anchored across two definitions
    that look alike does (its first lines in one, its last in the next). The file may still parse, so
    only this check catches it. On the known answers of the suite and ``data/train`` it demotes two
    wrong certain merges and no exact one; on ``benchmarks/merge_bench.py``'s random edits, which cut
    line ranges across headers, it demotes 30 exact ones of 1,074 (their merges go to the model).
    """
    doubts = []
    for p in placements:
        doubts += [f"the merge deletes the line {orig.lines[d.header].strip()!r} but keeps the rest of its block"
                   for d in orig.defs() if p.start <= d.header < p.end and (
                       p.end < d.end or any(d.header < line < d.end for _, line in p.matched))
                   and not any(_opens_alike(orig.lines[d.header], line) for line in p.lines)]
    return doubts


def _headers_lost(orig: Original, text: str) -> list[Definition]:
    """The original's definitions whose header line the merged file has fewer copies of than the original (a
    header that methods of several classes share, `getInfo`, counts for each): the only ones the merge may
    have deleted or renamed, found with no parse of the merged file."""
    kept, held = Counter(text.splitlines(True)), Counter(orig.lines)
    return [d for d in orig.defs() if kept[orig.lines[d.header]] < held[orig.lines[d.header]]]


def _still_called(orig: Original, text: str, lost: list[Definition]) -> list[str]:
    """The doubt where the merged file has lost the definition of a name it still uses: a segment that opens
    with a line the file ends many definitions with (``}``), then a new function like the one after it, was
    anchored by that function's lines found in the one before, which it read as renamed and rewritten,
    though the file still calls it (``test_set_if_match();``, a method table's ``.ml_meth``): a new
    definition added beside it reads so too (``merge_bench.py --definitions``). A rename whose callers the
    snippet does not change is in doubt as well. Asked only of the definitions ``_headers_lost`` finds (``lost``)."""
    if orig.language is None:
        return []
    gone = {d.name for d in lost if not d.scope}
    if not gone:
        return []
    gone -= bound_names(text, orig.language) | bound_inside(text, orig.language)  # defined again, imported,
    used = identifiers(text, orig.language, keys=False)  # declared, or a name a function binds for itself
    return [f"the merge deletes the definition of {name!r}, which the merged file still uses"
            for name in sorted(gone) if used.get(name)]


def _renamed_alike(orig: Original, placements: list[Placement], text: str,
                   lost: list[Definition]) -> tuple[list[str], str | None]:
    """The doubt where the merge reads a segment's new definition as one the file has, renamed and rewritten,
    or as the rest of the one it lies in, cut short, though the lines the segment shows above it are that
    one's own last lines too: the segment may as well add the new definition after it, like it (an agent
    adding a method after the last one shows its `}`, or its `raise NotImplementedError()`; a copy of a
    nested function whose lines after its first `return false` anchor in the original's); and the merged
    file so read, the draft (None where no doubt). A name that several definitions share (`@overload`s, a
    getter and its setter) counts as renamed where the merged file has fewer of them. Where the lines above
    end several (an `impl` block and its last method), the new definition goes beside one of its own level,
    where one is among them. Asked only of the definitions ``_headers_lost`` finds (``lost``) and of those a
    placement ends (``_ends_inside``)."""
    if orig.language is None:
        return [], None
    cut = _ends_inside(orig, placements)
    if not lost and not cut:
        return [], None
    merged = definitions(text, orig.language)
    had = Counter((*d.scope, d.name) for d in orig.defs())
    names = Counter((*d.scope, d.name) for d in merged)
    readings: dict[str, str | None] = {}  # each doubt, and the merged file it reads (None: no draft)
    offset, at = 0, []
    for p in placements:
        at.append((p.start + offset, p))
        offset += len(p.lines) - (p.end - p.start)
    lines = text.splitlines(True)
    for new in merged:
        start, p = next(((start, p) for start, p in at if start <= new.start < start + len(p.lines)), (0, None))
        if p is None or had[(*new.scope, new.name)]:  # not in a segment, or no new name
            continue
        renamed = [d for d in lost if p.start <= d.header < p.end and names[(*d.scope, d.name)] < had[(
            *d.scope, d.name)]]
        gap = new.start - start
        while gap > 0 and not p.lines[gap - 1].strip():
            gap -= 1
        options = []  # each definition the new one may be added after, and the merged file so read
        for d in renamed + [d for d in cut.get(p.start, []) if d not in renamed]:
            if not _shown_above(orig, d, p.lines[:new.start - start], d in renamed):
                continue
            after = "".join(lines[:start] + orig.lines[p.start:d.end] + list(p.lines[gap:new.start - start])
                            + lines[new.start:])
            if after not in readings.values() and after not in [other for _, other in options] and (
                    d in renamed or after != text):  # not read so already
                options.append((d, after))
        for d, after in [(d, after) for d, after in options if d.scope == new.scope] or options:  # its level
            if d in renamed:
                doubt = (f"the merge reads {new.name!r} as {d.name!r} renamed, but the lines above it end "
                         f"{d.name!r} too: it may be added after it")
                readings[doubt] = after if p.start <= d.start else None  # none where it starts above the segment
            else:
                readings[f"the merge reads {new.name!r} as the rest of {d.name!r}, but the lines above it end "
                         f"{d.name!r}: it may be added after it"] = after
    return list(readings), next(iter(readings.values())) if len(readings) == 1 else None


def _shown_above(orig: Original, d: Definition, above: tuple[str, ...], renamed: bool) -> bool:
    """Whether the lines of code a segment shows above a new definition are ``d``'s own last lines: as
    written, for one cut short (its own closers, as indented), or stripped, for one renamed."""
    key = str.strip if renamed else str.rstrip
    shown = [key(line) for line in above if line.strip()]
    return bool(shown) and [key(line) for line in orig.lines[d.start:d.end] if line.strip()][-len(shown):] == shown


def _ends_inside(orig: Original, placements: list[Placement]) -> dict[int, list[Definition]]:
    """The definitions each placement (by its start) may end early: one whose header lies above it and whose
    end inside it, its last line of code among the placement's lines with more code after it. Found with
    no parse of the merged file; only these are asked whether a new definition took their last lines."""
    found: dict[int, list[Definition]] = {}
    lasts = [(d, next((line.strip() for line in reversed(orig.lines[d.start:d.end]) if line.strip()), None))
             for d in orig.defs()]
    for p in placements:
        shown = [line.strip() for line in p.lines]
        for d, last in lasts:
            if d.header < p.start < d.end <= p.end and last in shown and any(shown[shown.index(last) + 1:]):
                found.setdefault(p.start, []).append(d)
    return found


TAIL_WIRED = "the snippet does not end with a marker; the file's last lines"  # the doubt of ``tail_still_wired``


def tail_still_wired(orig: Original, last: Placement, text: str) -> list[str]:
    """The doubt where the last segment, with no marker after it, deletes the file's last lines and they use
    a definition the merged file keeps, or the snippet adds a definition and they lie outside the definitions
    around its last anchor (``fileedges.still_wired``); what took their place is the merged file's lines after
    the last copy of the segment's last anchor line of code. The definition the snippet adds (a name the
    merged file has and the original not) may lie before that line: a new function modelled on the file's
    last one ends with that one's last line, which is then the last anchor (``merge_bench.py
    --definitions``). Lines deleted inside the definition the anchor is in are that definition rewritten."""
    anchor = max((line for _, line in last.matched if orig.lines[line].strip()), default=None)
    if anchor is None or orig.language is None:
        return []
    merged = text.splitlines(True)
    after = max((k for k, line in enumerate(merged) if line == orig.lines[anchor]), default=len(merged))
    added = merged[after + 1:]
    wired = still_wired(orig.lines[anchor + 1:], added, text, orig.language)
    if wired is None:
        had = {d.name for d in orig.defs()}
        if any(d.name not in had for d in definitions(text, orig.language)):  # the snippet adds a definition
            held = max((d.end for d in orig.defs() if d.start <= anchor < d.end), default=anchor + 1)
            wired = next((line.strip() for line in lost_at_end(orig.lines[held:], added)), None)
    return [] if wired is None else [f"{TAIL_WIRED} ({wired!r}) would be deleted"]


def _opens_alike(header: str, line: str) -> bool:
    """Whether ``line`` may be ``header`` rewritten: the same text reindented, or at its indentation with
    its first word (``def``, ``function``) or its last character (``{``, ``:``, ``(``)."""
    header, line = header.rstrip(), line.rstrip()
    return line.strip() == header.strip() or indent_width(line) == indent_width(header) and bool(line.strip()) and (
        line.split()[0] == header.split()[0] or line[-1] == header[-1])
