"""Placing a segment by the definitions in it, and reading a segment's edges by the definitions around.

``place_by_definitions`` places a segment made of whole definitions (``def foo``...) on the original
definitions of the same kind and name. ``reopened_definition`` and ``closed_definition`` handle a
segment whose new lines at an edge rewrite the start or the end of the definition its anchor is in
(``def foo(a, b):`` above an anchor inside ``foo``); ``deleted_at_end`` finds a definition a segment with no
marker after it deletes at the file's end. Line anchoring itself is in ``anchor.py``.
"""

from __future__ import annotations

import difflib
import itertools
import re
from dataclasses import replace

from fastapply.defs import CONTAINERS, Definition, definitions
from fastapply.edges import edits_lines_beside
from fastapply.markers import indent_width
from fastapply.segments import (
    INDENT_LANGUAGES,
    Original,
    Placement,
    Segment,
    absorb_blank_edges,
    exact_key,
    is_closer,
    is_trivial,
    opens_block,
)
from fastapply.syntax import count_errors


def _innermost(orig: Original, line: int, lo: int, header_counts: bool = False) -> Definition | None:
    inside = [d for d in orig.defs() if (d.header <= line if header_counts else d.header < line) and line < d.end
              and d.start >= lo]
    return max(inside, key=lambda d: d.header) if inside else None


def reopened_definition(orig: Original, start: int, leading: tuple[str, ...], lo: int, where: str):
    """New lines before the first anchor that sit at (or left of) the indentation of the definition
    enclosing that anchor rewrite its header: the placement then starts at the definition. In an
    indentation language that is a doubt unless such a line keeps the definition's name (a signature
    changed): on the known answers, 5 merges whose only doubts this lifts are all exact. A renamed
    header keeps its doubt, as a new function in front of this one looks the same (rsa's
    ``int2bytes``; a ``copy_of_load`` whose body is ``load``'s lines). New lines above a definition with
    decorators or comments of its own replace them where the snippet shows some of them; where it shows
    none, it may add to them (``MAY_ADD``), a doubt in every language (JavaScript and C comments above a
    function were replaced, certain, by a comment line added above them: ``merge_bench.py --beside``,
    6 certain and wrong merges of 3,000 likely, and 3 certain and exact ones; the known answers did not
    move)."""
    new = [line for line in leading if line.strip()]
    if not new:
        return start, []
    decorated = [d for d in orig.defs() if d.header == start and lo <= d.start < start]
    if decorated:  # the snippet shows the definition's decorators (comments): they replace the original's
        above = {line.strip() for line in orig.lines[decorated[0].start:start] if line.strip()}
        if not above & {line.strip() for line in new}:
            return decorated[0].start, [f"{where} shows none of {decorated[0].name!r}'s decorators and comments, "
                                        f"which it would replace; {MAY_ADD}"]
        return decorated[0].start, []
    enclosing = _innermost(orig, start, lo)
    width = None if enclosing is None else indent_width(orig.lines[enclosing.header])
    if width is None or min(indent_width(line) for line in new) > width:
        return start, []
    doubts = []
    # A new header that keeps the definition's name says its start is rewritten; otherwise only the
    # layout does, and a new definition (``copy_of_load``, ``load_text``) in front of it looks the same.
    name = re.compile(rf"\b{re.escape(enclosing.name)}\b")
    named = any(name.search(line) for line in new if indent_width(line) <= width)
    if orig.language in INDENT_LANGUAGES and not named:
        doubts.append(f"{where} rewrites the start of {enclosing.name!r}; its layout alone says so")
    elif all(is_trivial(line) for line in orig.lines[start:enclosing.end]):
        # the anchor is the definition's closing line alone: the new lines may as well be a definition
        # of their own, closed by that line, inserted after it
        doubts.append(f"{where} rewrites {enclosing.name!r} but repeats only its closing lines")
    return enclosing.start, doubts


def taken_leading_lines(orig: Original, run: list[int], lines: tuple[str, ...], resumes: list[int] | None = None
                        ) -> tuple[Definition, int, bool] | None:
    r"""The definition whose decorators or comments above its header an anchor run ``[original line,
    segment line, length]`` ends in, where the segment's next lines define another at its indentation
    first (a new definition whose name is not its name, nor its name changed) and do not show its header
    after: read so, the new definition takes them and the original one loses them. Not where the next
    run, ``resumes``, picks up among them or at the header and the segment's lines before it are the
    ones it would lose, repeated (the new definition has a copy of them). With it, how many of the
    run's lines come before them (none or fewer where the run starts among them) and whether they are
    decorators alone (``@``, ``#[``), which attach to the next definition and say nothing by themselves:
    the segment's copy of them, on a new definition of its own (``@cli.command()`` above a new command, as
    above the next one). None where the run ends elsewhere.

    ``anchor._place_on`` doubts such a reading; ``anchor._leaving_decorators`` reads decorators so taken
    as the new definition's. On 1,254 snippets of a definition added between two in real files
    (``runs/s78/hunt_lead.py``: the new one opening with the next one's decorators or comments, the last
    line of the one before shown above it; markers indented and at column 0), certain and wrong 284 -> 0
    in Python (certain and exact 6 -> 233), 76 -> 0 in JavaScript, 31 -> 0 in TypeScript. On the known
    answers: one certain and wrong (proj4's ``eqearth.js``: ``forward`` deleted for a new ``inverse`` under
    the comment both open with) likely; two likely, certain and exact (a test added with the next one's
    decorators).

    >>> orig = Original(["def go():\n", "    return x\n", "\n", "@cli.command()\n", "def stop():\n", "    pass\n"],
    ...                 "python")
    >>> lines = ("    return x\n", "\n", "@cli.command()\n", "def start():\n", "    run()\n")
    >>> d, before, decorators = taken_leading_lines(orig, [1, 0, 3], lines)
    >>> d.name, before, decorators
    ('stop', 2, True)
    """
    p, b, size = run
    end, after = p + size, lines[b + size:]
    for d in orig.defs():
        if not d.start < end <= d.header or exact_key(orig.lines[d.header]) in map(exact_key, after):
            continue
        width = indent_width(orig.lines[d.header])
        inside = list(itertools.takewhile(lambda line: not line.strip() or indent_width(line) >= width, after))
        defined = definitions("".join(_dedent(inside, width)), orig.language)
        first = next((new for new in defined if not new.scope), None)
        if first is None or d.name in first.name or orig.positions(exact_key, exact_key(inside[first.header])):
            continue
        if resumes is not None and d.start <= resumes[0] <= d.header:
            repeated = orig.lines[d.start:resumes[0]]
            shown = lines[resumes[1] - len(repeated):resumes[1]] if resumes[1] >= len(repeated) else []
            if list(map(exact_key, shown)) == list(map(exact_key, repeated)):
                continue
        taken = [line.strip() for line in orig.lines[max(d.start, p):end] if line.strip()]
        return d, d.start - p, all(line.startswith(("@", "#[")) for line in taken)
    return None


MAY_KEEP = "the marker after them may keep the rest of it"  # a doubt of the marker's indentation alone
MAY_CLOSE = "the marker after them, left of its body, may end it there"  # and its mirror
MAY_ADD = "it may add to them"  # lines shown above a decorated definition: a doubt of the snippet alone


def closed_definition(orig: Original, end: int, trailing: tuple[str, ...], marker_indent: int, hi: int, where: str,
                      pasted: bool = False):
    """A segment whose last anchor is inside a definition that it then closes (new lines at the
    definition's indentation, or a marker left of its body) replaces the rest of that definition.
    Where its new lines are the definition's next lines edited and the definition goes on past them
    (``edges.edits_lines_beside``: a docstring's first line edited, then a marker at column 0), the
    marker may keep the rest instead: a doubt, as in ``place_by_definitions`` for a definition shown
    whole that way. On the known answers of the suite, ``data/train`` and ``runs/train-h`` (22,504
    updates, ``benchmarks/merge_bench.py --known ... --against``) the two doubts demote none, nor on
    its 1,200 generated edits. In Python, new lines that do not rewrite the rest (``_replaces``: a line
    added at the top of a body, then a marker at column 0, as agents write every marker) are read as
    added, the marker keeping the rest, with the doubt that they may replace it (``anchor._place_on``);
    not so a snippet pasted with no marker (``pasted``), whose edges are its own. New lines that are the
    definition's next lines edited, all inside its body, replace those lines, the marker keeping the rest,
    with the doubt that it may end the definition there (``MAY_CLOSE``): a line changed below a line of
    context, then a marker at column 0, drafted the rest of the function deleted (``runs/s77/hunt.py``:
    439 of 500 such drafts exact, 1 before; one known answer's draft, a method's body shortened, no longer
    exact). In a language of closing lines, new lines that do not show the definition's closing line (a
    ``}`` at its header's indentation) do not end it: the marker stands for that line too (JavaScript:
    a line added under a header, none of 120 drafts exact before, 112 after; a line added at a body's end
    or after a line, column-0 marker, none of 35 exact before, 28 drafts and 5 certain merges after,
    ``runs/s78/hunt_js.py``; the known answers did not move)."""
    enclosing = _innermost(orig, end - 1, 0, header_counts=True)
    new = [line for line in trailing if line.strip()]
    if enclosing is None or enclosing.end > hi or not any(line.strip() for line in orig.lines[end:enclosing.end]):
        return end, []
    width = indent_width(orig.lines[enclosing.header])
    closes_with_code = any(indent_width(line) <= width for line in new)
    if not closes_with_code and not (new and marker_indent <= width):
        return end, []
    doubts = []
    edited = edits_lines_beside(trailing, orig.lines[end:enclosing.end])
    span = _span(orig.lines[end:], len(new))  # the original lines they would edit
    if orig.language in INDENT_LANGUAGES and (closes_with_code or enclosing.kind in CONTAINERS):
        doubts.append(f"{where} rewrites the end of {enclosing.name!r}; its layout alone says so")
    elif edited and not pasted and not closes_with_code and _leaves_open_alike(orig.lines[end:end + span], new):
        # the marker keeps the rest after the lines they edit, as it would after lines added
        return end + span, [f"{where} edits {enclosing.name!r}'s next lines in place; {MAY_CLOSE}"]
    elif edited:
        doubts.append(f"{where} ends {enclosing.name!r} with its next lines edited; {MAY_KEEP}")
    elif orig.language in INDENT_LANGUAGES and not pasted and not _replaces(new, orig.lines[end:enclosing.end]):
        return end, []  # lines added: the marker keeps the rest (``anchor``: a doubt that they may replace it)
    elif orig.language not in INDENT_LANGUAGES and not pasted and not closes_with_code and is_closer(
            orig.lines[enclosing.end - 1]) and indent_width(orig.lines[enclosing.end - 1]) == width:
        return end, []  # its closing line not shown: the marker stands for the rest, that line with it
    return enclosing.end, doubts


def _leaves_open_alike(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` lines leave as many brackets and triple-quoted strings open as ``old`` do: taking
    their place keeps the code after them as it was (a docstring's first line edited into a whole
    docstring would close it early).

    >>> quotes = '"' * 3
    >>> _leaves_open_alike([f"    {quotes}Cast a value."], [f"    {quotes}Cast a value, unchecked.{quotes}"])
    False
    >>> _leaves_open_alike(["    total = f(a,"], ["    total = g(a, b,"])
    True
    """
    def opened(lines: list[str]) -> tuple[int, ...]:
        text = "".join(lines)
        return (text.count('"' * 3) % 2, text.count("'" * 3) % 2,
                *(text.count(a) - text.count(b) for a, b in ("()", "[]", "{}")))
    return opened(old) == opened(new)


def _span(lines: list[str], code: int) -> int:
    """How many of ``lines`` it takes to hold ``code`` lines that are not blank."""
    seen = 0
    for n, line in enumerate(lines):
        seen += bool(line.strip())
        if seen == code:
            return n + 1
    return len(lines)


def _replaces(new: list[str], rest: list[str]) -> bool:
    """Whether new lines that a marker left of a definition's body follows are its ``rest`` rewritten: they
    end by returning (``return``, ``raise`` at their outermost indentation: code after them would never
    run), or at least half the rest's code lines (``pass`` is none, nor a line they show as it is) are
    each kept in one of the others (``_alike``), as a snippet rewriting a function's last lines writes
    them. Agents write every marker at column 0, also after lines added at the top of a body whose rest
    the marker keeps: in Python no closing line tells the two apart.

    >>> _replaces(["    os.makedirs(root)"], ["    path = join(root, name)", "    write(path)"])
    False
    >>> _replaces(["    return typ(val)"], ["    check(typ)", "    return val"])
    True
    """
    shown = [line for line in new if line.strip()]
    if shown and re.match(r"(?:return|raise)\b", shown[-1].strip()) and \
            indent_width(shown[-1]) == min(map(indent_width, shown)):
        return True
    same = {line.strip() for line in shown} & {line.strip() for line in rest}  # shown as they are: context
    code = [line for line in rest if line.strip() not in ("", "pass", "...") and line.strip() not in same]
    added = [line for line in shown if line.strip() not in same]
    return 2 * sum(any(_alike(old, line) for line in added) for old in code) >= len(code)


def _alike(old: str, new: str) -> bool:
    """Whether one line holds most of the other's text in one run, more than a keyword (a line edited, or
    lines joined into one): ``keeps_text`` counts text found in order, so a short line is in most long
    ones (``return 1`` in ``with ThreadPoolExecutor(workers) as pool:``).

    >>> _alike("    actual == expected", "    assert actual == expected, msg")
    True
    >>> _alike("    return 1", "    with open(path) as pool:"), _alike("    return 1", "    return wrap(f)")
    (False, False)
    """
    a, b = old.strip(), new.strip()
    run = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size
    return run >= max(8, 0.6 * min(len(a), len(b)))


def deleted_at_end(orig: Original, start: int, lines: tuple[str, ...], trailing: tuple[str, ...]) -> str | None:
    """The first line of a definition (``def h():``), or of a top-level block where the segment (``lines``)
    ends indented (``if __name__ == "__main__":``), among the original lines from ``start`` to the file's
    end, which a segment with no marker after it deletes, and does not write again in its last lines
    (``trailing``); None where there is none. A snippet that forgot its last marker after a change
    inside the file's last function but one deletes the last function: a few lines, which the rule for an
    edge lets a segment delete. On the known answers of the suite and ``data/train``, two exact merges
    delete definitions that way (commits that delete the file's last test or function); on the
    line-edit bench one."""
    last = next(line for line in reversed(lines) if line.strip())
    shown = {line.strip() for line in trailing}
    headers = {d.header for d in orig.defs()}
    return next((line.strip() for j, line in enumerate(orig.lines[start:], start) if line.strip() not in shown and (
        j in headers or indent_width(last) > indent_width(line) == 0 and opens_block(line))), None)


def place_by_definitions(seg: Segment, index: int, orig: Original, lo: int, hi: int) -> Placement | None:
    """Place a segment made of whole definitions on the original definitions of the same kind and name."""
    if orig.language is None:
        return None
    lead = next((i for i, line in enumerate(seg.lines) if line.strip() and not is_closer(line)), 0)
    if lead and any(line.strip() for line in seg.lines[:lead]):
        return _after_closers(seg, index, orig, lo, hi, lead)
    width = min(indent_width(line) for line in seg.lines if line.strip())
    if any(m is not None and m > width for m in (seg.marker_before, seg.marker_after)):
        return None  # the markers are inside the segment's definitions: they are not whole
    text = "".join(_dedent(seg.lines, width))
    if count_errors(text, orig.language) or (orig.language in INDENT_LANGUAGES and text.rstrip().endswith(":")):
        return None  # not whole definitions (tree-sitter accepts an empty Python block; Python does not)
    found = definitions(text, orig.language)
    top = [d for d in found if not d.scope]
    covered = {line for d in top for line in range(d.start, d.end)}
    if not top or any(line.strip() and i not in covered for i, line in enumerate(seg.lines)):
        return None
    where = f"segment {index + 1}"
    pairs: list[tuple[Definition, Definition]] = []  # (the snippet's, the original's)
    doubts = []
    for d in top:
        same = [o for o in orig.defs() if o.kind == d.kind and o.name == d.name and lo <= o.start and o.end <= hi
                and indent_width(orig.lines[o.header]) == width]
        if len(same) > 1:
            doubts.append(f"{where}: {d.name!r} is defined {len(same)} times in the original")
        if same:
            pairs.append((d, same[0]))
            body, old_body = text.split("\n")[d.header + 1:d.end], orig.lines[same[0].header + 1:same[0].end]
            if edits_lines_beside(tuple(body), old_body):
                doubts.append(f"{where} shows only the first lines of {d.name!r}'s body, edited; the rest of it "
                              f"may be left to a marker")
            elif _cut_short(body, old_body):
                doubts.append(f"{where} shows {d.name!r} ending before the original's last lines; it may be "
                              f"cut short")
            elif (orig.language in INDENT_LANGUAGES and d is top[-1] and seg.marker_after is not None and not seg.pasted
                  and not _replaces(body, old_body)):
                doubts.append(f"{where} shows {d.name!r} with a body like little of the original's; the marker "
                              f"after it may keep the rest of the body")
            missing = _members(orig.defs(), same[0]) - _members(found, d)
            if missing:
                doubts.append(f"{where} shows {d.name!r} without {', '.join(sorted(missing))}, which would be deleted")
    if not pairs:
        return None
    if len(pairs) < len(top):
        doubts.append(f"{where} adds definitions whose place the original does not fix")
    if any(b.start < a.end for (_, a), (_, b) in zip(pairs, pairs[1:])):
        return None
    # Decorators and comments above a definition are replaced only when the snippet shows some.
    (first_new, first), (_, last) = pairs[0], pairs[-1]
    start = first.start if first_new.start < first_new.header else first.header
    end = last.end
    between = [line for line in orig.lines[start:end] if line.strip()]
    if len(between) > sum(o.end - o.start for _, o in pairs):
        doubts.append(f"{where} leaves out original code between the definitions it replaces")
    if seg.marker_before is None and any(line.strip() for line in orig.lines[:start]):
        doubts.append(f"{where} does not start with a marker, yet the original has code before it")
    if seg.marker_after is None and any(line.strip() for line in orig.lines[end:]):
        doubts.append(f"{where} does not end with a marker, yet the original has code after it")
    start, end, doubt = absorb_blank_edges(orig, seg, (start, end), (False, False), (lo, hi), where)
    return Placement(start, end, seg.lines, tuple(doubts + doubt))


def _cut_short(body: list[str], old_body: list[str]) -> bool:
    """Whether a definition's new body ends on a line of the original body with two or more of the
    original's lines after it that the new body does not show: the first lines of a function, one
    deleted, and no marker for the rest (``repr_int`` shown down to ``i = ...``, its ``j = ...`` and
    ``return s`` left out), which reads as the function cut there.

    >>> _cut_short(["    a = 1", "    b = 2"], ["    a = 0", "    b = 2", "    c = 3", "    return c"])
    True
    >>> _cut_short(["    a = 1", "    return c"], ["    a = 0", "    b = 2", "    c = 3", "    return c"])
    False
    """
    shown = [line.strip() for line in body if line.strip()]
    old = [line.strip() for line in old_body if line.strip()]
    if not shown or shown[-1] not in old:
        return False
    after = old[len(old) - old[::-1].index(shown[-1]):]
    return len([line for line in after if line not in shown and not is_closer(line)]) >= 2


def _after_closers(seg: Segment, index: int, orig: Original, lo: int, hi: int, lead: int) -> Placement | None:
    """A segment that opens with the closing lines of the code before its definitions (``}``, then a
    blank line, then ``fn as_bytes...``, every line of it edited): the definitions are placed by name,
    and the closing lines are the original's right before them, or the segment is not placed so. On
    the 22,504 known answers, 5 more merges certain, all exact (zstandard's ``compression_dict.rs``,
    whose segment edits every line but the ``}``, had no candidate); none moved otherwise."""
    rest = place_by_definitions(replace(seg, lines=seg.lines[lead:]), index, orig, lo, hi)
    if rest is None or rest.start - lead < lo:
        return None
    begin = rest.start - lead
    if orig.keys(exact_key)[begin:rest.start] != [exact_key(line) for line in seg.lines[:lead]]:
        return None
    return replace(rest, start=begin, lines=seg.lines[:lead] + rest.lines)


def _members(defs: list[Definition], parent: Definition) -> set[str]:
    """Names of the definitions directly inside ``parent``."""
    scope = parent.scope + (parent.name,)
    return {d.name for d in defs if d.scope == scope and parent.start <= d.start and d.end <= parent.end}


def _dedent(lines: tuple[str, ...], width: int) -> list[str]:
    out = []
    for line in lines:
        expanded = line.expandtabs(8)
        out.append(expanded[width:] if line.strip() else line)
    return out
