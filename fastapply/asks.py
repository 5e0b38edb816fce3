"""What an instruction asks of a file, where its words are plain enough to check, and whether an output did it.

An instruction alone ("Delete the function `save`.", "rename load -> read", "add `import os`") gives the
deletion checks of ``deletions.py`` no snippet line to anchor on, so a model's answer could delete the
wrong function, or the whole file, and be written. Read where its words are plain (``read``), the
instruction still says what must change and what must stay: ``undone`` names an ask the output leaves
undone (the function still defined, the old name still used, the import missing, the comment kept);
``unasked_deletions`` finds the lines an output deletes that no ask covers, or, where the instruction
asks more than this module reads, the definitions it deletes that the instruction does not name. A
wording nothing here reads asks nothing. This module judges; ``validate.py`` names the problems.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from fastapply.defs import Definition, definitions
from fastapply.segments import lost_lines
from fastapply.syntax import parse

_NAME = r"`?([A-Za-z_$][\w$]*)(?:\(\))?`?"
_DELETE = re.compile(
    r"\b(?:delete|remove|drop|get rid of)\s+(?:the\s+)?(?:unused\s+)?(?:(?:function|method|class|def|fn)\s+)?"
    rf"(?:`?([\w$]+)`?\.)?{_NAME}\s*(?:(?:function|method|class)\b\s*)?(?:$|[.;,!](?!\S)|\bfrom\s+{_NAME}|\bentirely\b)",
    re.IGNORECASE)
_NOT_NEEDED = re.compile(rf"(?<!\S){_NAME}\s+is\s+(?:not|no longer)\s+needed", re.IGNORECASE)
_NO_LONGER = re.compile(rf"(?:(?<!\S){_NAME}\s+)?\bno longer needs\s+{_NAME}", re.IGNORECASE)
_RENAME = re.compile(rf"\brename\s+(?:the\s+\w+\s+)?{_NAME}\s*(?:\s(?:to|as|into)\s|->|→)\s*{_NAME}"
                     rf"|\bcall\s+{_NAME}\s+{_NAME}\s+instead\b", re.IGNORECASE)
_IMPORT = re.compile(r"`((?:import|from|#include|use|require)\b[^`]*|(?:const|let|var)\s[^`]*\brequire\([^`]*)`")
# A comment's start may hold backticks itself: the longest quote held by a line of the file is taken.
_COMMENT = re.compile(r"\b(?:delete|remove|drop|get rid of)\s+(?:the\s+)?comment\s+(?:that\s+)?"
                      r"(?:starts|starting|begins|beginning)\s+(?:with\s+)?`([^\n]+)`", re.IGNORECASE)
_DELETE_WORD = re.compile(r"\b(?:delete|remove|drop|get rid of|clean|strip|trim|prune)\b", re.IGNORECASE)
_ADD_WORD = re.compile(r"\b(?:add|import|insert|include)\b", re.IGNORECASE)
# Words an instruction may hold beside its asks and still ask nothing else ("Please also remove `x`.").
_FILLER = frozenset("""a also an and any be can could entirely everywhere file from here in instead it its just module
    more needed no not now of please should the then this too unused we you""".split())
ABOVE = ("#[", "[", "@", "//", "/*", "*", "#")  # how attributes and comments above a definition start
_BINDS = re.compile(r"^\s*(?:import|from|#include|use|using|require|package)\b|\brequire\(")  # an import line
# a top-level declaration or store: `static PyObject *cache;`, `const LIMIT = 10;`, `X = 1`: the name it binds
_DECLARED = re.compile(r"^(?!(?:return|throw|delete|yield|await|goto)\b)(?:[A-Za-z_$][\w$<>,]*\s+)*[*&]*"
                       r"([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\])?\s*(?:=(?!=)|;)")
MEMBER = {".", "->", "::", "?.", "optional_chain"}  # what comes before a member of another object or module (`?.`)


@dataclass(frozen=True)
class Asks:
    deletes: tuple[tuple[str, str], ...]  # definitions of the file to delete: (name, the one holding it or "")
    renames: tuple[tuple[str, str], ...]  # (old, new) names
    imports: tuple[str, ...]  # import lines to add, whitespace collapsed
    comments: tuple[str, ...]  # the starts of comments to remove
    whole: bool  # every deletion the instruction asks for is among the above
    only: bool  # the instruction asks nothing but the above: its other words are filler

    def __bool__(self) -> bool:
        return bool(self.deletes or self.renames or self.imports or self.comments)


@lru_cache(maxsize=8)  # one edit reads its instruction in the engine, the merge and validation alike
def read(instruction: str, original: str, language: str | None) -> Asks:
    """The asks of ``instruction`` that this module reads, for ``original`` (an ``Asks`` is immutable, so
    the last few are kept).

    >>> read("Remove the save method from Store.", "class Store:\\n    def save(self):\\n        pass\\n", "python")
    Asks(deletes=(('save', 'Store'),), renames=(), imports=(), comments=(), whole=True, only=True)
    >>> read("Remove `save` from `__all__`.", "def save():\\n    pass\\n", "python").whole
    False
    >>> read("Remove save and log every call to load.", "def save():\\n    pass\\n", "python").only
    False
    """
    defs = definitions(original, language) if language is not None else []
    spans, deletes = [], []
    found = [(m, m.group(2), m.group(1) or m.group(3)) for m in _DELETE.finditer(instruction)]
    found += [(m, m.group(1), None) for m in _NOT_NEEDED.finditer(instruction)]
    found += [(m, m.group(2), m.group(1)) for m in _NO_LONGER.finditer(instruction)]
    for match, name, scope in found:
        if any(holds(d, name, scope or "") for d in defs):
            deletes.append((name, scope or ""))
            spans.append(match.span())
    renames = []
    for match in _RENAME.finditer(instruction):
        a, b, c, d = match.groups()
        renames.append((a or c, b or d))
        spans.append(match.span())
    plain = re.sub(r"`[^`]*`", " ", instruction)
    imports = []
    if _ADD_WORD.search(plain) and not _DELETE_WORD.search(plain):
        for match in _IMPORT.finditer(instruction):
            imports.append(" ".join(match.group(1).split()))
            spans.append(match.span())
    comments = []
    for match in _COMMENT.finditer(instruction):
        quote = match.group(1)
        ends = [len(quote)] + [i for i, c in enumerate(quote) if c == "`"][::-1]
        start = next((quote[:end] for end in ends if quote[:end].strip() and quote[:end] in original), None)
        if start is not None:
            comments.append(start)
            spans.append((match.start(), match.start(1) + len(start) + 1))
    rest = "".join(" " if any(a <= i < b for a, b in spans) else c for i, c in enumerate(instruction))
    words = {w.lower() for w in re.findall(r"[\w$`]+", rest)} - _FILLER
    if imports:
        words -= {"add", "import", "insert", "include"}
    asks = (tuple(dict.fromkeys(deletes)), tuple(renames), tuple(imports), tuple(comments))
    return Asks(*asks, not _DELETE_WORD.search(re.sub(r"`[^`]*`", " ", rest)), any(asks) and not words)


def undone(original: str, output: str, asks: Asks, language: str | None) -> str | None:
    """The first of ``asks`` (``read`` from the instruction) that ``output`` leaves undone, as a message,
    or None.

    >>> save = "def save():\\n    pass\\n"
    >>> undone(save, save + "\\n", read("Delete the function `save`.", save, "python"), "python")
    'the instruction asks to delete `save`, but the output still defines it'
    >>> undone(save, "", read("Remove save.", save, "python"), "python") is None
    True
    >>> undone("import os\\n", "import os\\n", read("add `import sys`", "import os\\n", "python"), "python")
    'the instruction asks to add `import sys`, but the output does not have it'
    """
    if asks.deletes:
        old, defs, kept = original.split("\n"), definitions(original, language), definitions(output, language)
        fewer = Counter(line.strip() for line in old) - Counter(line.strip() for line in output.split("\n"))
        for name, scope in asks.deletes:
            shown = f"{scope}.{name}" if scope else name
            held = [d for d in defs if holds(d, name, scope)]
            if sum(holds(d, name, scope) for d in kept) >= len(held):
                return f"the instruction asks to delete `{shown}`, but the output still defines it"
            codes = [Counter(old[i].strip() for i in range(d.header, d.end) if old[i].strip()) for d in held]
            if not any(sum((code & fewer).values()) * 2 >= code.total() for code in codes):  # renamed, not deleted
                return f"the instruction asks to delete `{shown}`, but the output keeps its code"
    for was, new in asks.renames:
        if identifiers(original, language)[was] and (not _words(output)[new] or (
                left := identifiers(output, language)[was])):
            still = f"still uses `{was}` {left} time(s)" if _words(output)[new] else f"has no `{new}`"
            return f"the instruction asks to rename `{was}` to `{new}`, but the output {still}"
    flat, had = " ".join(output.split()), " ".join(original.split())
    for line in asks.imports:
        if line not in had and line.rstrip(";") not in flat:
            return f"the instruction asks to add `{line}`, but the output does not have it"
    for start in asks.comments:
        count = sum(start in line for line in original.split("\n"))
        if count and sum(start in line for line in output.split("\n")) >= count:
            return f"the instruction asks to remove the comment that starts `{start}`, but the output keeps it"
    return None


def unasked_deletions(original: str, output: str, instruction: str, asks: Asks,
                      language: str) -> tuple[list[int], list[str]]:
    """What ``output`` deletes that ``instruction`` does not ask to: where every deletion it asks for is
    among its ``asks``, the non-blank original lines (0-based) it loses outside the definitions and
    comments asked away; else the names of the definitions it deletes (defined fewer times) more often
    than the instruction names them or a deleted definition holding them (a renamed one counts as named).

    >>> two = "def a():\\n    pass\\n\\ndef b():\\n    pass\\n"
    >>> unasked_deletions(two, "", "Remove a.", read("Remove a.", two, "python"), "python")
    ([3, 4], [])
    >>> unasked_deletions(two, "def b():\\n    pass\\n", "Tidy up b.", read("Tidy up b.", two, "python"), "python")
    ([], ['a'])
    """
    defs = definitions(original, language)
    old = original.split("\n")
    if asks and asks.whole:
        headers = {d.header for d in defs}
        covered = {i for d in defs if any(holds(d, *asked) for asked in asks.deletes)
                   for i in range(attributes_above(old, d.start, headers), d.end)}
        for start in asks.comments:
            for i in (i for i, line in enumerate(old) if start in line):
                covered.add(i)
                lead, block = old[i].strip()[:2], "/*" in old[i] and "*/" not in old[i].split("/*", 1)[1]
                while i + 1 < len(old) and (block or old[i + 1].strip().startswith(lead)):
                    block = block and "*/" not in old[i + 1]
                    covered.add(i := i + 1)
        # Diffed without the lines asked away, so that a deleted block is not matched against its twin
        # (the closing brace of the function above it).
        rest = [i for i in range(len(old)) if i not in covered]
        lost = lost_lines([old[i] for i in rest], output.split("\n"))
        return sorted(rest[j] for j in lost if old[rest[j]].strip()), []
    lost = _names(original, language) - _names(output, language)
    words = _words(instruction)
    named = [d for d in defs if any(words[w] for w in re.findall(r"[\w$]+", d.name))]
    gone = [n for n in named if lost[n.name]]  # what a deleted definition holds goes with it
    held = Counter(d.name for d in defs if d in named or any(n.start <= d.start and d.end <= n.end for n in gone))
    return [], list(lost - held)


def holds(definition: Definition, name: str, scope: str) -> bool:
    """Whether ``definition`` is the one named ``name`` (inside ``scope``, where one is given)."""
    return definition.name == name and (not scope or any(scope in re.findall(r"[\w$]+", held)
                                                          for held in definition.scope))  # "impl Trait for Type"


def attributes_above(lines: list[str], start: int, headers: set[int]) -> int:
    """Where a definition starting at ``start`` begins with the attributes and doc comments right above
    it that its range leaves out (Rust's ``#[...]`` and ``///``, C#'s ``[...]``), or ``start``; no other
    definition's header line (``headers``) is taken."""
    top = start
    while top > 0 and lines[top - 1].strip().startswith(ABOVE) and top - 1 not in headers:
        top -= 1
    block = top
    while block > 0 and lines[block - 1].strip() and block - 1 not in headers:
        block -= 1
    return block if block < top and lines[block].strip().startswith(ABOVE) else top


def identifiers(text: str, language: str | None, keys: bool = True) -> Counter:
    """How often ``text`` uses each name as a name of its own (identifiers; not a member of another
    object such as ``json.load``, nor words in comments and strings): a renamed name has none left.
    ``keys=False``: nor an object's keys and a struct's fields (``{webTransform: ...}``, ``.ml_meth =``).
    Without a known language, every word counts."""
    if language is None:
        return _words(text)
    found, stack = Counter(), [parse(text, language).root_node]
    while stack:
        node = stack.pop()
        if node.child_count:
            stack.extend(node.children)
        elif (node.type.endswith("identifier") or node.type.endswith("identifier_pattern") or node.type == "constant") \
                and not (node.prev_sibling is not None and node.prev_sibling.type in MEMBER) \
                and (keys or node.type not in _KEYS):
            found[node.text.decode("utf-8", "replace")] += 1
    return found


_KEYS = {"property_identifier", "field_identifier"}  # an object's key, a struct's field: no name of its own


def bound_names(text: str, language: str) -> set[str]:
    """The names ``text`` binds: its definitions', every word of its import lines, and the name of each
    top-level declaration or store."""
    names = {definition.name for definition in definitions(text, language)}
    for line in text.split("\n"):
        if _BINDS.search(line):
            names |= set(re.findall(r"[A-Za-z_$][\w$]*", line))
        elif declared := _DECLARED.match(line):
            names.add(declared[1])
    return names


def bound_inside(text: str, language: str) -> set[str]:
    """The names ``text`` binds as a parameter or a local variable (``def test_flags(flags):``, ``let value``):
    a use of such a name may be its own, not the definition's of that name."""
    found, stack = set(), [parse(text, language).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        parent = node.parent
        if not node.type.endswith("identifier") or parent is None:
            continue
        if "parameter" in parent.type or any(node == parent.child_by_field_name(field)
                                             for field in ("name", "left", "pattern", "declarator")):
            found.add(node.text.decode("utf-8", "replace"))
    return found


def _names(text: str, language: str) -> Counter:
    return Counter(d.name for d in definitions(text, language))


def _words(text: str) -> Counter:
    return Counter(re.findall(r"[A-Za-z_$][\w$]*", text))
