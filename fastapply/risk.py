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
unchanged code at full length and stops at a likely edit (``decode.choose_draft_length``). Replayed on
the 450 suite tasks with this CPU's pass costs, drafts blind to the risky lines waste 217,317 draft
tokens and take (median) 1.52x one prefill of the answer; knowing them, 35,969 and 1.24x
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


def snippet_lines(update: str) -> list[str]:
    """The snippet's lines, stripped, blank ones left out, each marker as ``EDGE``."""
    lines = [s for s in (line.strip() for line in update.splitlines()) if s]
    return [EDGE if is_marker_text(s) else s for s in lines]


def _lines(tokenizer, ids: Sequence[int], newline_ids: Collection[int]) -> list[tuple[int, int, str]]:
    return [(start, end, tokenizer.decode(list(ids[start:end])).strip())
            for start, end in line_spans(ids, newline_ids)]


def file_risk(tokenizer, ids: Sequence[int], newline_ids: Collection[int], update: str) -> frozenset[int]:
    """Risky tokens of a file-shaped source (the original's prediction, a merged candidate): a line is
    risky where the snippet holds the line before it but goes on with another; where the snippet puts
    new code before it, or before the line after it, with no line of the source ahead of that code
    since the snippet's start or a marker (an insertion or a replacement, it cannot tell); and the last
    line. A line the source holds more than ``MAX_ANCHOR_COPIES`` times ("}", "pass") is told apart by
    the line before it, or places nothing."""
    lines = _lines(tokenizer, ids, newline_ids)
    texts = [text for _, _, text in lines if text]  # the non-blank lines, in order
    counts = Counter(texts)
    pairs = Counter(pairwise(texts))

    def anchor(previous: str | None, line: str) -> str | tuple[str, str] | None:
        """What places ``line`` (after ``previous``) in the source: itself, the pair, or nothing."""
        if counts[line] and counts[line] <= MAX_ANCHOR_COPIES:
            return line
        if previous is not None and 0 < pairs[previous, line] <= MAX_ANCHOR_COPIES:
            return previous, line
        return None

    snippet = [EDGE, *snippet_lines(update), EDGE]
    after: dict[str | tuple[str, str], set[str]] = defaultdict(set)  # anchor -> the snippet lines after it
    unanchored: set[str] = set()  # lines the snippet puts new code before, with no anchor ahead of it
    anchored = False  # whether an anchor came since the start or the last marker
    for before, line, following in zip(snippet, snippet[1:], snippet[2:]):
        key = anchor(before, line)
        if key is not None:
            after[key].add(following)
            if before not in counts and before != EDGE and not anchored:
                unanchored.add(line)
        anchored = key is not None or (anchored and line != EDGE)
    risky: set[int] = set()
    seen = 0  # non-blank lines before the current one
    for i, (start, end, text) in enumerate(lines):
        previous = texts[seen - 1] if seen else None
        following = texts[seen + bool(text)] if seen + bool(text) < len(texts) else None
        key = anchor(texts[seen - 2] if seen > 1 else None, previous) if previous is not None else None
        left_after = key in after and not after[key] & {text or following, EDGE}
        if left_after or text in unanchored or following in unanchored or i == len(lines) - 1:
            risky.update(range(max(start - 1, 0), end))
        seen += bool(text)
    return frozenset(risky)


def snippet_risk(tokenizer, ids: Sequence[int], newline_ids: Collection[int]) -> tuple[frozenset[int], frozenset[int]]:
    """``(risky, stops)`` of the snippet: risky, the line break before each marker line and its last
    line; stops, the first token of each marker line, which an answer never writes (it goes back to the
    original there), so no draft goes past it."""
    lines = _lines(tokenizer, ids, newline_ids)
    markers = [(start, end) for start, end, text in lines if text and is_marker_text(text)]
    risky = {start - 1 for start, _ in markers if start} | set(range(max(lines[-1][0] - 1, 0), lines[-1][1]) if lines else ())
    return frozenset(risky), frozenset(start for start, _ in markers)
