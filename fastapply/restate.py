"""A statement the snippet restates beside the file's own: ``limit = 20`` shown in place of ``limit = 10``.

A segment whose last line of code is new, a marker after it, reads as an insertion there: the marker keeps
the file's lines that follow. Where that new line stores to the very target of the line the marker keeps
next to it (``limit = 20`` shown, ``limit = 10`` kept just below; ``const [page, setPage] = useState(1);``
beside ``... useState(0);``), and neither line reads that target, so read one of the two would be a dead
store, overwritten before any line reads it (in JavaScript or Go, a declaration made twice, an error): the
snippet shows the line changed, and its line takes the place of the kept one. Where one of them reads it
(``s = s + carry``), the snippet may mean either, a doubt; and where the new line stores nothing the kept
one does but is much like it (``print("a", x)`` beside ``print("a")``), it may be that line changed or a
copy added, a doubt too. The same for a segment's first line of code, new, after a marker, and the line
the marker keeps above it. The new line must be the only one between the segment's anchor and the marker
(not a line of the file edited in place). ``keymerge.set_in_place`` does this for a configuration's keys;
this is its rule for code. A new line that is the kept line's statement with a comment after it added,
changed or taken away (``next(); // hand on`` beside ``next();``) is that line edited too: read as a copy,
the statement ran twice (``runs/s78/hunt_js.py``: 4 certain and wrong of 12 lines changed so, none after).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from fastapply.anchor import may_replace
from fastapply.asks import identifiers
from fastapply.keylines import CONFIG
from fastapply.markers import indent_width
from fastapply.segments import Placement

# A new line beside a marker this alike the line the marker keeps there may be that line changed, or a copy
# added: a doubt. Real snippets keep a line of context after a change: none of the 2,447 known answers has one;
# of 3,000 generated edits shown so (``benchmarks/merge_bench.py --beside``), about 1,250 changed lines were
# certain and wrong as insertions, and about 1,000 copies added, certain and right, are doubts now.
ALIKE = 0.8
_NOT_CODE = (*CONFIG, "css", "markdown", "html")
# a store: a target (no call, no string, no comparison before it), then `=` or `:=`, no `==`, `=>`, `+=`, `<=`...
_STORE = re.compile(r"^(?P<target>[^=()\"'`;]*?[\w\]\}>])\s*(?::=|=)(?![=>~])(?P<value>.*)$")
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_MEMBER = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*|\[[^\]]*\])+")  # `self.limit`, `items[0]`
_CONTROL = frozenset(("if", "elif", "else", "while", "for", "foreach", "return", "assert", "yield",
                      "await", "throw", "raise", "print", "echo", "unless", "until", "do", "export", "goto",
                      "defer", "del", "delete", "typeof"))
_DECLARES = frozenset(("const", "let", "var", "val", "mut", "final", "static", "auto", "local", "private",
                       "public", "protected", "readonly", "my", "our"))
_COMMENT = re.compile(r"\s(?:#|//|/\*)")
_COMMENT_LINE = ("#", "//", "/*", "*", "--", "<!--", ";")  # how a line of comment alone opens
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")
_OPEN_END = re.compile(r"(?:[(\[{\\.+\-*/%&|^<>=?:]|\band|\bor)\s*$")


def restated(original: list[str], placements: list[Placement],
             language: str | None) -> tuple[list[Placement], list[str], set[str]]:
    """The placements of a merge, with each segment's new edge line that restates the store of the line a
    marker keeps beside it put in that line's place (the module's docstring); the doubts where one of the
    two reads what they store to, or the new line stores nothing the kept one does but is much like it;
    and the doubts this settles: that the segment's new lines there, that line alone, may replace the code
    beside them (``anchor.may_replace``). The placements as they are otherwise."""
    if language is None or language in _NOT_CODE or any(b.start < a.end for a, b in zip(placements, placements[1:])):
        return placements, [], set()
    out, extra, doubts, settled = list(placements), [], [], set()
    for n, placement in enumerate(placements):
        shown = [k for k, line in enumerate(placement.lines) if line.strip()]
        if not shown:
            continue
        kept_from = placements[n - 1].end if n else 0
        kept_to = placements[n + 1].start if n + 1 < len(placements) else len(original)
        below = next((j for j in range(placement.end, kept_to) if original[j].strip()), None)
        above = next((j for j in range(placement.start - 1, kept_from - 1, -1) if original[j].strip()), None)
        drop = set()
        for k, kept, side in ((shown[-1], below, "after its last anchor"),
                              (shown[0], above, "before its first anchor")):
            if kept is None or k in drop or not _alone(placement, shown, k, original) \
                    or not _new_beside(placement, k, original, kept):
                continue  # no new line inserted there beside the kept one
            store = _same_store(placement.lines[k], original[kept], language)
            if store is None and _comment_changed(placement.lines[k], original[kept]):
                store = ("its code", False)  # the same statement, its comment changed: the line edited
            if store is None:
                if _alike(placement.lines[k], original[kept]):
                    doubts.append(f"the snippet's line {placement.lines[k].strip()!r} is much like the line "
                                  f"{original[kept].strip()!r} a marker keeps beside it: it may replace it")
                continue
            target, read = store
            if read:
                doubts.append(f"the snippet's line {placement.lines[k].strip()!r} stores to {target} as the line "
                              f"{original[kept].strip()!r} a marker keeps beside it does: it may replace it")
                continue
            drop.add(k)
            extra.append(Placement(kept, kept + 1, (placement.lines[k],)))
            settled.add(may_replace(n, side))
        if drop:
            out[n] = replace(placement, lines=tuple(line for k, line in enumerate(placement.lines) if k not in drop))
    return (sorted(out + extra, key=lambda p: (p.start, p.end)) if extra else placements), doubts, settled


def _alone(placement: Placement, shown: list[int], k: int, original: list[str]) -> bool:
    """Whether the placement's line ``k``, its last (first) line of code, is its only new line after its last
    (before its first) anchor: the line of code next to it is the last (first) original line it replaces."""
    if len(shown) < 2:
        return False
    inner = shown[-2] if k == shown[-1] else shown[1]
    span = [line.strip() for line in original[placement.start:placement.end] if line.strip()]
    return bool(span) and placement.lines[inner].strip() == (span[-1] if k == shown[-1] else span[0])


def _new_beside(placement: Placement, k: int, original: list[str], kept: int) -> bool:
    """Whether the placement's line ``k`` is new (no line of the file it replaces) and at the indentation of
    the file's line ``kept``, not that line's text."""
    new, old = placement.lines[k], original[kept]
    return indent_width(new) == indent_width(old) and new.strip() != old.strip() and not any(
        line.strip() == new.strip() for line in original[placement.start:placement.end])


def _same_store(new: str, old: str, language: str) -> tuple[str, bool] | None:
    """(the target, whether either line reads it) where ``new`` stores to the target of ``old``, each a
    statement of one line; else None."""
    stores = [_store(line) for line in (new, old)]
    if None in stores or stores[0][0] != stores[1][0]:
        return None
    target = stores[0][0]
    return target, any(_reads(value, target, language) for _, value in stores)


def _comment_changed(new: str, old: str) -> bool:
    """Whether ``new`` is ``old``'s statement, of 6 characters or more, with a comment after it added,
    changed or taken away (``next(); // retry``, beside ``next();``): a copy of the line it stands beside
    would run that statement twice.

    >>> _comment_changed("    next(); // retry", "    next();")
    True
    >>> _comment_changed("x = 1", "x = 1  # one")
    False
    >>> _comment_changed("# Work around issue #4555", "# Work around issue #4554")  # a comment, no statement
    False
    """
    code = _code_part(new.strip()).rstrip()
    return len(code) >= 6 and not code.startswith(_COMMENT_LINE) and code == _code_part(old.strip()).rstrip()


def _alike(new: str, old: str) -> bool:
    """Whether ``new``, no store of ``old``'s target, is ``old`` changed as much as not: of 6 characters or
    more, 80% alike (``fmt.Fprintf(w, "hello %s (%s)\n", ...)`` beside ``fmt.Fprintf(w, "hello %s\n", ...)``)."""
    new, old = new.strip(), old.strip()
    return len(new) >= 6 and difflib.SequenceMatcher(None, new, old, autojunk=False).ratio() >= ALIKE


def _store(line: str) -> tuple[str, str] | None:
    """(the target, declaring words aside, no space around its punctuation; the value, a comment after it
    aside) of a one-line store (a `;` or `,` may end it: a keyword argument's line), else None."""
    text = _code_part(line.strip()).rstrip().removesuffix(";").removesuffix(",").rstrip()
    match = _STORE.match(text)
    if match is None or _OPEN_END.search(text) or not _balanced(text):
        return None
    words = match["target"].split()
    first = _WORD.match(words[0])
    if first is None or first[0] in _CONTROL:
        return None
    while len(words) > 1 and words[0] in _DECLARES:
        words.pop(0)
    return re.sub(r"\s*([^\w$\s])\s*", r"\1", " ".join(words)), match["value"]


def _code_part(line: str) -> str:
    """The line without a comment after its code (``#``, ``//``, ``/*`` after a space, outside quotes)."""
    for found in _COMMENT.finditer(line):
        head = line[:found.start()]
        if all(head.count(quote) % 2 == 0 for quote in "\"'`"):
            return head
    return line


def _reads(value: str, target: str, language: str) -> bool:
    """Whether ``value`` may read what ``target`` stores to: a member (``self.text``, ``items[0]``) where it
    holds that chain, else (a name, names unpacked, a declaration with its type) where it uses one of its
    names as a name of its own (``asks.identifiers``: ``req.params.format`` reads no ``format``, nor
    ``"out"`` ``out``)."""
    if _MEMBER.fullmatch(target):
        return re.search(r"(?<![\w$.])" + re.escape(target) + r"(?![\w$])", _QUOTED.sub('""', value)) is not None
    used = identifiers(value, language)
    return any(used[name] for name in _WORD.findall(target))


def _balanced(text: str) -> bool:
    """Whether ``text`` closes every bracket it opens (strings not told apart: a store of one line)."""
    return all(text.count(a) == text.count(b) for a, b in ("()", "[]", "{}"))
