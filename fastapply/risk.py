"""Where a draft source is likely to be left: the tokens at which an answer may stop copying it.

An apply answer copies the original file except where the update snippet changes it, and the snippet
shows each change between lines of the original. So the answer leaves the original only next to a line
the snippet also holds, and only where the snippet does not go on as the original does: after a
context line the snippet follows with new code, or before one it precedes with new code that no
context line places. A lazy marker (``# ... existing code ...``) or the snippet's own start or end
beside a context line means the original's code goes on there. The answer may also add code at the
file's end. The snippet itself is left at its markers (the answer goes back to the original there, so
a draft stops before one) and at its end.

The decode loop counts acceptance apart for the calm tokens and the risky ones, so it drafts through
unchanged code at full length and stops at a likely edit (``draftlen.choose_draft_length``). Replayed on
the 450 suite tasks with this CPU's pass costs, drafts blind to the risky lines waste 217,317 draft
tokens and take (median) 1.52x one prefill of the answer; knowing them, 35,295 and 1.24x
(``benchmarks/draft_length_bench.py``).

Positions are token indices into a source's ids: every token of a risky line and the line break before
it (a break token often carries the next line's indentation), lines being split after each token whose
text holds a line break. This module reads text and token ids only; it runs no model.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from itertools import pairwise

from fastapply.markers import is_marker_text

EDGE = "\x00edge"  # a marker, or the snippet's start or end: the original goes on there
MAX_ANCHOR_COPIES = 3  # a line found more often in the source does not place the snippet's neighbours


def line_spans(ids: Sequence[int], newline_ids: Collection[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``ids``, a line ending after a token that holds a line break."""
    spans, start = [], 0
    for i, token in enumerate(ids):
        if token in newline_ids:
            spans.append((start, i + 1))
            start = i + 1
    if start < len(ids):
        spans.append((start, len(ids)))
    return spans


def snippet_lines(update: str) -> list[tuple[str, int]]:
    """The snippet's non-blank lines, stripped, each marker as ``EDGE``, each with the number of blank
    lines before it.

    >>> snippet_lines("a\\n\\n\\n  b\\n# ... existing code ...\\n")
    [('a', 0), ('b', 2), ('\\x00edge', 0)]
    """
    lines, blanks = [], 0
    for line in update.splitlines():
        text = line.strip()
        if not text:
            blanks += 1
            continue
        lines.append((EDGE if is_marker_text(text) else text, blanks))
        blanks = 0
    return lines


def _lines(tokenizer, ids: Sequence[int], newline_ids: Collection[int]) -> list[tuple[int, int, str, int]]:
    """``(start, end, stripped text, line breaks)`` of each line of ``ids``: a token may hold several
    breaks ("\\n\\n"), so a line may end in blank ones."""
    lines = []
    for start, end in line_spans(ids, newline_ids):
        text = tokenizer.decode(list(ids[start:end]))
        lines.append((start, end, text.strip(), text.count("\n")))
    return lines


def file_risk(tokenizer, ids: Sequence[int], newline_ids: Collection[int], update: str) -> frozenset[int]:
    """Risky tokens of a file-shaped source (the original's prediction, a merged candidate): a line is
    risky where the snippet holds the line before it but goes on with another; where the snippet puts
    new code before it, or before the line after it, with no line of the source ahead of that code
    since the snippet's start or a marker (an insertion or a replacement, it cannot tell); and the last
    line; and the line after a placed one where the snippet puts other blank lines between the two. A
    line is placed by the pair of it and the line before it where the source holds that pair at most
    ``MAX_ANCHOR_COPIES`` times, else by itself where the source holds it that seldom ("}", "pass" it
    holds more often), else nothing places it; where both place it, the pair's snippet lines decide."""
    lines = _lines(tokenizer, ids, newline_ids)
    texts = [text for _, _, text, _ in lines if text]  # the non-blank lines, in order
    counts = Counter(texts)
    pairs = Counter(pairwise(texts))

    def anchors(previous: str | None, line: str) -> list[str | tuple[str, str]]:
        """What places ``line`` (after ``previous``) in the source, tightest first: the pair, the line."""
        keys: list[str | tuple[str, str]] = []
        if previous is not None and 0 < pairs[previous, line] <= MAX_ANCHOR_COPIES:
            keys.append((previous, line))
        if 0 < counts[line] <= MAX_ANCHOR_COPIES:
            keys.append(line)
        return keys

    shown = snippet_lines(update)
    snippet = [EDGE, *(line for line, _ in shown), EDGE]
    blanks = [0, *(count for _, count in shown), 0]  # blank lines before each
    after: dict[str | tuple[str, str], set[str]] = defaultdict(set)  # anchor -> the snippet lines after it
    spacing: dict[str | tuple[str, str], set[tuple[str, int]]] = defaultdict(set)  # ... with the blanks between
    unanchored: set[str] = set()  # lines the snippet puts new code before, with no anchor ahead of it
    anchored = False  # whether an anchor came since the start or the last marker
    for i, (before, line, following) in enumerate(zip(snippet, snippet[1:], snippet[2:])):
        keys = anchors(before, line)
        for key in keys:
            after[key].add(following)
            if following != EDGE:
                spacing[key].add((following, blanks[i + 2]))
        if keys and before not in counts and before != EDGE and not anchored:
            unanchored.add(line)
        anchored = bool(keys) or (anchored and line != EDGE)
    gaps = []  # blank lines after each non-blank line of the source
    for _, _, text, breaks in lines:
        if text:
            gaps.append(max(breaks - 1, 0))
        elif gaps:
            gaps[-1] += breaks
    risky: set[int] = set()
    seen = 0  # non-blank lines before the current one
    right_after = False  # whether the line before the current one is non-blank
    for i, (start, end, text, _) in enumerate(lines):
        previous = texts[seen - 1] if seen else None
        following = texts[seen + bool(text)] if seen + bool(text) < len(texts) else None
        keys = anchors(texts[seen - 2] if seen > 1 else None, previous) if previous is not None else []
        key = next((key for key in keys if key in after), None)  # the tightest the snippet shows
        left_after = key in after and not after[key] & {text or following, EDGE}
        # the snippet goes on with the same line, but with other blank lines between: they change here
        spaced = {count for line, count in spacing.get(key, ()) if line == (text or following)}
        respaced = right_after and bool(spaced) and gaps[seen - 1] not in spaced
        if left_after or respaced or text in unanchored or following in unanchored or i == len(lines) - 1:
            risky.update(range(max(start - 1, 0), end))
        seen += bool(text)
        right_after = bool(text)
    return frozenset(risky)


def snippet_risk(tokenizer, ids: Sequence[int], newline_ids: Collection[int]) -> tuple[frozenset[int], frozenset[int]]:
    """``(risky, stops)`` of the snippet: risky, the line break before each marker line and its last
    line; stops, the first token of each marker line, which an answer never writes (it goes back to the
    original there), so no draft goes past it."""
    lines = _lines(tokenizer, ids, newline_ids)
    markers = [(start, end) for start, end, text, _ in lines if text and is_marker_text(text)]
    risky = {start - 1 for start, _ in markers if start} | set(range(max(lines[-1][0] - 1, 0), lines[-1][1]) if lines else ())
    return frozenset(risky), frozenset(start for start, _ in markers)
