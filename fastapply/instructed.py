"""An instruction applied with no model, where its words ask for nothing but plain changes.

"Delete the function `save`.", "rename load -> read", "add `import sys`", "Remove the comment that
starts `# old`": where ``asks.read`` reads every word of an instruction (``Asks.only``), the change is
known to the line, and ``apply`` makes it as the training data of fastapply-small makes it
(``data.transforms``): a definition goes with the attributes and comments right above it and the blank
lines that set it apart; a rename changes every identifier that names the one definition of that name;
an import goes into the group of imports (on consecutive lines) whose sources share the longest start
with its own, in order where that group is sorted, else after it; a comment goes with its lines. Its
answer is ``certain`` only when each ask lands in one place with no choice left (one definition of that
name, every mention of a renamed name an identifier of this file's own, one line holding the comment's
start, a group of imports to join), the result parses with no more errors than the original, and the
checks of ``asks.py`` find it done with nothing else deleted; otherwise it is ``none``, with the reason,
and a model makes the edit. ``engine.merge_edit`` applies an instruction alone to the file, and one
beside a snippet to the snippet's certain merge. It returns a ``MergeResult``, as the merge engine does
for a snippet, and reads no files.
"""

from __future__ import annotations

import os
import re

from fastapply.asks import ABOVE, MEMBER, Asks, attributes_above, holds, read, undone, unasked_deletions
from fastapply.defs import definitions
from fastapply.merge import CERTAIN, NONE, MergeResult
from fastapply.segments import is_closer
from fastapply.syntax import count_errors, parse, python_parses

# The node types of one import line, per grammar (Go's specs sit inside an ``import ( ... )`` block).
IMPORT_TYPES = {
    "python": ("import_statement", "import_from_statement"),
    "javascript": ("import_statement",),
    "typescript": ("import_statement",),
    "tsx": ("import_statement",),
    "go": ("import_spec",),
    "rust": ("use_declaration",),
    "java": ("import_declaration",),
    "c": ("preproc_include",),
    "cpp": ("preproc_include",),
}
_SELF = {"self", "this", "cls"}  # the objects through which a class reaches its own methods


def apply(original: str, instruction: str, language: str | None) -> MergeResult:
    """``instruction``, given with no snippet, applied to ``original``: certain, or none with the reason.

    >>> source = "import os\\n\\n\\ndef save():\\n    pass\\n\\n\\ndef load():\\n    return os.getcwd()\\n"
    >>> print(apply(source, "Delete the function `save`.", "python").text)
    import os
    <BLANKLINE>
    <BLANKLINE>
    def load():
        return os.getcwd()
    <BLANKLINE>
    >>> apply(source, "Delete save. Log the calls to load.", "python").reasons
    ('the instruction asks for more than a deletion, a rename, an import or a comment removal',)
    """
    if language is None:
        return _unsure("the file's language is not known")
    asks = read(instruction, original, language)
    if not asks:
        return _unsure("the instruction plainly asks to delete, rename, add or remove nothing that the file holds "
                       "(a definition, a name, an import, a comment)")
    if not asks.only:
        return _unsure("the instruction asks for more than a deletion, a rename, an import or a comment removal")
    text = original
    steps = [(_delete, ask) for ask in asks.deletes] + [(_rename, ask) for ask in asks.renames]
    steps += [(_add_import, (line,)) for line in asks.imports]
    steps += [(_remove_comment, (start,)) for start in asks.comments]
    for step, ask in steps:
        text, why = step(text, *ask, language)
        if text is None:
            return _unsure(why)
    why = _doubt(original, text, instruction, asks, language)
    return _unsure(why) if why else MergeResult(text, CERTAIN, ())


def remove_rows(text: str, first: int, last: int) -> str:
    """``text`` without lines ``first..last`` (0-based, inclusive) and the blank lines that separated
    them from the code above (or, at the top of a block, below).

    >>> remove_rows("a\\n\\nb\\nc\\n", 2, 2)
    'a\\nc\\n'
    """
    lines = text.splitlines(keepends=True)
    start, stop = first, last + 1
    while start > 0 and not lines[start - 1].strip():
        start -= 1
    if start == first:
        while stop < len(lines) and not lines[stop].strip():
            stop += 1
    elif start == 0:
        start = first
    return "".join(lines[:start] + lines[stop:])


def _unsure(why: str) -> MergeResult:
    return MergeResult(None, NONE, (why,))


def _delete(text: str, name: str, scope: str, language: str) -> tuple[str | None, str]:
    shown = f"{scope}.{name}" if scope else name
    defs = definitions(text, language)
    held = [d for d in defs if holds(d, name, scope)]
    if len(held) != 1:
        return None, f"`{shown}` is defined {len(held)} times in the file"
    lines = text.split("\n")
    found = held[0]
    last = found.end - 1
    if language != "python" and last > found.header and not is_closer(lines[last]):
        return None, f"`{shown}` ends on a line with more code after it"
    first = attributes_above(lines, found.start, {d.header for d in defs})
    if not all(line.strip().startswith(ABOVE) for line in lines[first:found.start]):
        return None, f"lines above `{shown}` (between its attributes and comments) may belong to it"
    return remove_rows(text, first, last), ""


def _rename(text: str, old: str, new: str, language: str) -> tuple[str | None, str]:
    named = [d for d in definitions(text, language) if d.name == old]
    if len(named) != 1:
        return None, f"`{old}` is not one definition of the file (defined {len(named)} times)"
    if mentions(text, new):
        return None, f"`{new}` is already a word of the file"
    leaves = [node for node in _nodes(parse(text, language).root_node)
              if not node.child_count and node.text == old.encode("utf-8")]
    if mentions(text, old) != len(leaves):
        return None, f"`{old}` is also written inside strings or comments"
    for leaf in leaves:
        if not (leaf.type.endswith("identifier") or leaf.type == "constant"):
            return None, f"`{old}` is also written where it is no name (a {leaf.type})"
        ancestor, member = leaf.parent, leaf.prev_sibling is not None and leaf.prev_sibling.type in MEMBER
        while ancestor is not None and "import" not in ancestor.type and ancestor.type != "use_declaration":
            ancestor = ancestor.parent
        if ancestor is not None:
            return None, f"`{old}` is also a name an import brings"
        if leaf.parent is not None and leaf.parent.type in ("keyword_argument", "pair") and leaf.prev_sibling is None:
            return None, f"`{old}` is also a keyword or a key"
        owner = leaf.prev_sibling.prev_sibling if member else None
        if member and not (named[0].scope and owner is not None and owner.text.decode("utf-8", "replace") in _SELF):
            return None, f"`{old}` is also a member of another object"
    data = text.encode("utf-8")
    for leaf in sorted(leaves, key=lambda n: n.start_byte, reverse=True):
        data = data[:leaf.start_byte] + new.encode("utf-8") + data[leaf.end_byte:]
    return data.decode("utf-8"), ""


def _add_import(text: str, line: str, language: str) -> tuple[str | None, str]:
    kinds = IMPORT_TYPES.get(language, ())
    statement = parse(line + "\n", language).root_node
    if not kinds or count_errors(line + "\n", language) or [c.type for c in statement.named_children] not in (
            [kind] for kind in kinds):
        return None, f"`{line}` is not one import statement of the file's language"
    lines = text.split("\n")
    if line in {" ".join(row.split()) for row in lines}:
        return None, f"the file already has `{line}`"
    root = parse(text, language).root_node
    if any(_in_block(node, root) for node in _nodes(root) if node.type in kinds):
        return None, "the file also imports inside a block (`if`, `try`, a module), so where this one goes is a choice"
    spans = sorted((node.start_point.row, node.end_point.row) for node in root.named_children
                   if node.type in kinds and node.start_point.column == 0 and not lines[node.end_point.row][
                       node.end_point.column:].strip())
    if not spans:
        return _first_import(lines, line, root, language)
    groups = [[spans[0]]]  # imports on consecutive lines
    for span in spans[1:]:
        if span[0] == groups[-1][-1][1] + 1:
            groups[-1].append(span)
        else:
            groups.append([span])

    def shared(group: list[tuple[int, int]]) -> int:
        return max(len(os.path.commonprefix([_source(lines[first]), _source(line)])) for first, _ in group)

    group = max(groups, key=shared)  # the first of the groups whose sources share the longest start with it
    heads = [lines[first] for first, _ in group]
    at = group[-1][1] + 1
    if heads == sorted(heads):
        at = next((first for first, _ in group if lines[first] > line), at)
    return "\n".join(lines[:at] + [line] + lines[at:]), ""


def _first_import(lines: list[str], line: str, root, language: str) -> tuple[str | None, str]:
    """``line`` as the file's first import: after its head (comments, a shebang, a module docstring, a
    ``"use strict"`` directive) and the blank line below it, with blank lines around it where code would
    touch it. C and C++ are left to a model (an include may belong inside a header guard)."""
    if language in ("c", "cpp"):
        return None, "the file has no include to put it beside (it may belong inside a header guard)"
    nodes, count = root.named_children, 0
    while count < len(nodes) and (nodes[count].type.endswith("comment") or nodes[count].type == "inner_attribute_item"
                                  or (nodes[count].type == "expression_statement" and nodes[count].named_child_count == 1
                                      and nodes[count].named_children[0].type == "string")):
        count += 1
    # comments right above the first statement are its own (a doc comment), not the file's head
    while 0 < count < len(nodes) and nodes[count - 1].type.endswith("comment") \
            and nodes[count].start_point.row <= nodes[count - 1].end_point.row + 1:
        count -= 1
    head = nodes[count - 1].end_point.row + 1 if count else 0
    at = head + (head > 0 and head < len(lines) and not lines[head].strip())
    new = [line] + ([""] if at < len(lines) and lines[at].strip() else [])
    new = ([""] if 0 < at and lines[at - 1].strip() else []) + new
    return "\n".join(lines[:at] + new + lines[at:]), ""


def _source(line: str) -> str:
    """What an import line imports from: its quoted path (``"./a.js"``, ``<stdio.h>``), else the name after
    its first keyword (``os.path`` of ``from os.path import join``, ``std::fmt`` of ``use std::fmt;``).

    >>> _source('import { a } from "../lib/a.js";'), _source("from os.path import join"), _source("#include <stdio.h>")
    ('../lib/a.js', 'os.path', 'stdio.h')
    """
    quoted = re.search(r"[\"'<]([^\"'>]+)[\"'>]", line)
    if quoted:
        return quoted.group(1)
    words = line.replace(";", " ").split()
    return words[1] if len(words) > 1 else ""


def _nodes(root) -> list:
    """Every node of the tree under ``root``, ``root`` included."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


def mentions(text: str, name: str) -> int:
    """How often ``name`` is written in ``text`` as a word of its own (in code, strings or comments)."""
    return len(re.findall(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text))


def _in_block(node, root) -> bool:
    """Whether ``node`` sits inside a block of statements that is not a function's body (a function's own
    imports are its own business)."""
    parent = node.parent
    while parent is not None and parent != root:
        if "function" in parent.type or parent.type in ("method", "method_definition", "arrow_function"):
            return False
        parent = parent.parent
    return node.parent != root


def _remove_comment(text: str, start: str, language: str) -> tuple[str | None, str]:
    lines = text.split("\n")
    rows = [i for i, row in enumerate(lines) if start in row]
    if len(rows) != 1:
        return None, f"{len(rows)} lines of the file hold `{start}`"
    row = rows[0]
    indent = len(lines[row]) - len(lines[row].lstrip())
    node = parse(text, language).root_node.descendant_for_point_range((row, indent), (row, len(lines[row].rstrip())))
    if node is None or not node.type.endswith("comment") or node.start_point.row != row \
            or node.start_point.column != indent \
            or lines[node.end_point.row][node.end_point.column:].strip():
        return None, f"`{start}` does not start a comment of its own lines"
    last = node.end_point.row
    lead = lines[row].strip()[:2]
    if any(0 <= i < len(lines) and lines[i].strip()[:2] == lead for i in (row - 1, last + 1)):
        return None, f"the comment that starts `{start}` runs on into the comments beside it"
    return "\n".join(lines[:row] + lines[last + 1:]), ""


def _doubt(original: str, text: str, instruction: str, asks: Asks, language: str) -> str:
    """Why the applied ``text`` is not certain, or "": more syntax errors than the original (for Python,
    ``ast`` refusing it where it took the original: an emptied class), or an ask left undone, or a line
    deleted that no ask covers."""
    if count_errors(text, language) > count_errors(original, language):
        return "the file would have more syntax errors than before"
    if language == "python" and python_parses(original) and not python_parses(text):
        return "the file would not parse as Python"
    left = undone(original, text, asks, language)
    if left:
        return left
    lost, names = unasked_deletions(original, text, instruction, asks, language)
    if lost or names:
        return "the change would delete lines the instruction does not ask to"
    return ""
