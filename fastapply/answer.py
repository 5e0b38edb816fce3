"""A chat model's whole answer as an edit: the code its fenced blocks hold, the words around them aside.

A chat model answers "apply this" with words and code blocks, often naming each block's file: in the
fence's info string (```` ```python:src/calc.py ````, ```` ```src/calc.py ````, ```` ```python
title="src/calc.py" ````) or on the line above it (``src/calc.py``, ``**src/calc.py**``, "Update
`src/calc.py`:") or in a comment that is its first line (``# src/calc.py``, taken out of the code
unless the file's own lines hold it). An edit is such an answer where it holds a fenced block and the lines outside its
blocks are words, not code (``_code_around``: a snippet holding a fenced block of its own, in a
docstring or a template literal, is no answer; a block holding bare fences of its own, a JSDoc example,
is read whole where the first reading leaves code outside it), and, for a Markdown file and the others
whose grammar words do not fail, where the file holds no fence of its own (their snippets may) or a block
names the file or opens with a longer fence than any the file holds (``_told_apart``). The
edit for a file is the blocks that name it, else, where no block names a file, the blocks in its
language (or in none, or a diff); several are one snippet, a lazy marker between them (diffs, one
diff), and a snippet with markers gets one at its start (end) where it starts (ends) on a line of the
file other than its first (last): a chat model shows the part it changes and leaves the rest unsaid.
Such an answer may mean either; ``engine.merge_reading`` is certain only where both readings agree, or
where deleting that code would leave a name in use that only it binds (``deletes_in_use``).

>>> answer = "Here it is:\\n\\n```python\\ndef area(r):\\n    return math.pi * r ** 2\\n```\\n\\nDone."
>>> answer_edit(answer, "import math\\n", "python")[0]
'def area(r):\\n    return math.pi * r ** 2\\n'
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from fastapply.asks import bound_names, identifiers
from fastapply.diffs import read_patch  # fileparts.split_files imports this module when it runs, not at its import
from fastapply.errors import UsageError
from fastapply.markers import is_marker_text
from fastapply.segments import is_trivial
from fastapply.snippet import marker_like
from fastapply.syntax import LANGUAGES, SOURCE_LANGUAGES, count_errors, language_for_path

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`]*?)\s*$")  # indented under a list item: up to 3 spaces
_PATH = r"(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z]\w*"  # a file name with an extension, maybe in folders
_NAMED = r"(?:(?:file|filename|path)\s*:\s*)?"  # "File: " before a path
_PATHLIKE = re.compile(_PATH)
_TITLE = re.compile(r"""\b(?:title|file|filename|path)=["']?([^"'\s]+)""")
_LABEL_LINE = re.compile(rf"^\s*(?:#|//|--|;|/\*|<!--)\s*{_NAMED}({_PATH})\s*(?:\*/|-->)?\s*$", re.IGNORECASE)
_LABEL = re.compile(rf"^(?:#+\s*)?{_NAMED}", re.IGNORECASE)
_FAMILIES = ({"javascript", "typescript", "tsx"}, {"c", "cpp"})
_ALIASES = {"c++": "cpp", "golang": "go", "shell": "bash", "zsh": "bash", "sh": "bash", "py": "python"}
_ANY = {"", "text", "txt", "plaintext", "diff", "patch", "udiff"}
_PARSED = set(SOURCE_LANGUAGES) | {"csharp", "kotlin", "swift", "scala", "php", "lua", "bash"}  # words fail to parse
_UNTOLD = re.compile(r"^\s*#\s*include\b")  # an include: which names it binds is not told


@dataclass(frozen=True)
class Block:
    line: int  # the 1-based line of its opening fence
    info: str  # the fence's info string
    path: str | None  # the file it names, in its info string, on the line above it or in its first line
    body: str  # its lines, each with its newline (but a first line that is a comment naming its file)
    label: str | None = None  # that first line (``# src/calc.py``), taken out of the body
    fence: str = "```"  # its opening fence's backticks or tildes


def code_blocks(text: str, greedy: bool = False) -> tuple[list[Block], list[str]]:
    """The fenced blocks of ``text`` that close (a fence closes with the same character, at least as
    many), and the lines outside them. ``greedy``: a block closes at the last such fence before the next
    fence that opens with an info string, so that bare fences inside it (a JSDoc ``@example``) are its
    own lines."""
    lines = text.replace("\r\n", "\n").split("\n")
    blocks: list[Block] = []
    outside: list[str] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        close = None
        if opening:
            fence = opening.group(2)
            closes = (j for j in range(i + 1, len(lines))
                      if set(lines[j].strip()) == {fence[0]} and len(lines[j].strip()) >= len(fence))
            if greedy:
                until = next((j for j in range(i + 1, len(lines)) if (other := _FENCE.match(lines[j]))
                              and other.group(2)[0] == fence[0] and other.group(3)), len(lines))
                close = max((j for j in closes if j < until), default=None)
            else:
                close = next(closes, None)
        if close is None:
            outside.append(lines[i])
            i += 1
            continue
        indent, info = opening.group(1), opening.group(3)
        inner = [line.removeprefix(indent) for line in lines[i + 1:close]]
        labelled = _LABEL_LINE.match(inner[0]) if inner else None  # `# src/calc.py`: the block's name, not its code
        body = "".join(line + "\n" for line in inner[bool(labelled):])
        named = _named(info, lines[:i]) or (labelled and labelled.group(1))
        blocks.append(Block(i + 1, info, named, body, inner[0] if labelled else None, fence))
        i = close + 1
    return blocks, outside


def _named(info: str, before: list[str]) -> str | None:
    """The file a block names: in its info string (``python:path``, ``path``, ``python path``,
    ``title="path"``), else on the nearest non-blank line above it, that line a path alone (``# path``,
    ``**path**``, ``File: path``) or holding one path in backticks or bold ("Update `calc.py`:")."""
    titled = _TITLE.search(info)
    words = ([titled.group(1)] if titled else []) + info.replace(":", " ").split()
    named = next((word for word in words if _PATHLIKE.fullmatch(word)), None)
    if named is not None:
        return named
    above = next((line.strip() for line in reversed(before[-2:]) if line.strip()), "")
    alone = _LABEL.sub("", above).strip("*`_ :")
    if _PATHLIKE.fullmatch(alone):
        return alone
    quoted = [text for pair in re.findall(r"`([^`]+)`|\*\*([^*]+)\*\*", above) for text in pair if text]
    paths = [text for text in quoted if _PATHLIKE.fullmatch(text)]
    return paths[0] if len(paths) == 1 and above.endswith(":") else None


def _language(word: str) -> str | None:
    """The language an info word names (``python``, ``py``, ``ts``, ``c++``), or None."""
    word = word.lower()
    word = _ALIASES.get(word, word)
    return word if word in LANGUAGES else language_for_path(f"x.{word}") if "." not in word else None


def _speaks(block: Block, language: str | None) -> bool:
    """Whether a block that names no file is in the file's language (or names none, or is a diff)."""
    first = block.info.split()[0].lower() if block.info.split() else ""
    said = _language(first)
    if language is None or first in _ANY or said is None:
        return True
    return said == language or any(said in family and language in family for family in _FAMILIES)


def answer_edit(edit: str, original: str, language: str | None,
                path: str | None = None) -> tuple[str, str] | None:
    """The edit a chat model's answer holds for the file (``path``, where known), with markers at its
    edges where it leaves code around it unsaid, and the same without them (the two differ only there);
    None where ``edit`` is not such an answer. A usage error where its blocks are for other files only,
    for several files and no path is given, or in other languages only."""
    if "```" not in edit and "~~~" not in edit:
        return None
    file_lines = {line.strip() for line in original.split("\n") if line.strip()}
    blocks, outside = code_blocks(edit)
    if language not in _PARSED and not _told_apart(blocks, original, path):
        return None  # a Markdown file's snippet may hold fences of its own; code's is told by the code around
    if blocks and _code_around(outside, file_lines, language):  # a block holding bare fences of its own, read whole
        blocks, outside = code_blocks(edit, greedy=True)
    if not blocks or _code_around(outside, file_lines, language):
        return None  # a snippet holding a fenced block of its own (in a docstring), not an answer
    blocks = [replace(block, body=block.label + "\n" + block.body) if block.label and block.label.strip() in file_lines
              else block for block in blocks]  # a file whose own first line names it keeps that line
    named = [block for block in blocks if block.path is not None]
    if named:
        names = list(dict.fromkeys(block.path for block in named))
        mine = named if path is None or path == "-" else [block for block in named if _is(path, block.path)]
        if not mine:
            raise UsageError(f"the answer's code blocks are for {', '.join(names)}, not {path}")
        if len({block.path for block in mine}) > 1:
            raise UsageError(f"the answer's code blocks are for {len(names)} files ({', '.join(names)}): give "
                             f"the file to edit, or the whole answer to fastapply batch --answer")
    else:
        mine = [block for block in blocks if _speaks(block, language)]
        if not mine:
            raise UsageError(f"the answer's code blocks are in other languages "
                             f"({', '.join(sorted({b.info.split()[0] for b in blocks if b.info.split()}))})")
    return _joined(mine, language, original)


def _told_apart(blocks: list[Block], original: str, path: str | None) -> bool:
    """Whether an answer's blocks for a file whose grammar words do not fail (Markdown) are told apart
    from fences a snippet of it may hold: the file holds no fence, or a block names the file, or opens
    with a fence longer than every fence the file holds (four backticks around a section that holds three)."""
    fences = [opening.group(2) for line in original.split("\n") if (opening := _FENCE.match(line))]
    if not fences:
        return True
    longest = max(len(fence) for fence in fences)
    return any(block.path is not None and path not in (None, "-") and _is(path, block.path)
               or len(block.fence) > longest for block in blocks)


def _code_around(outside: list[str], file_lines: set[str], language: str | None) -> bool:
    """Whether the lines outside an edit's fenced blocks are code, not a chat model's words: one is a
    line of the file, a lazy marker or a docstring's quotes, or together they parse in the file's
    language and hold code's punctuation (a JavaScript template literal around a Markdown example)."""
    words = [line for line in outside if line.strip()]
    if any(line.strip() in file_lines or is_marker_text(line.strip()) or '"""' in line or "'''" in line
           for line in words):
        return True
    text = "\n".join(words)
    return language in _PARSED and any(mark in text for mark in ";{}=`") and count_errors(text, language) == 0


def code_of(text: str) -> str:
    """The code of a chat model's answer that holds a diff (of one file or several): its blocks' lines,
    the words around them aside; the text itself where it has no block or is a diff outside them."""
    blocks, outside = code_blocks(text)
    if not blocks or any(line.startswith(("diff --git ", "--- ", "+++ ", "@@", "*** ")) for line in outside):
        return text
    return "".join(block.body for block in blocks)


def _is(path: str, named: str) -> bool:
    """Whether the file at ``path`` is the one an answer names (the end of its path, as a repository's
    root names it)."""
    parts = Path(named).parts
    return Path(path).resolve().parts[-len(parts):] == parts


def _joined(blocks: list[Block], language: str | None, original: str) -> tuple[str, str]:
    """One edit of several blocks for one file (a diff where each is one; else one snippet, a lazy marker
    between each block and the next), with a marker before (after) it where it has markers and its first
    (last) line is a line of the file other than the file's first (last), and the edit without those: a
    chat model leaves the code above and below the part it shows unsaid, where a snippet that says
    nothing of it deletes it, and an answer may mean either."""
    if all(read_patch(block.body, original) is not None for block in blocks):
        return ("".join(block.body for block in blocks),) * 2
    plain = blocks[0].body
    for block in blocks[1:]:
        plain += marker_like(_edge(block.body, 1), language) + "\n" + block.body
    return edge_marked(plain, language, original), plain


def edge_marked(snippet: str, language: str | None, original: str, head: bool = True, tail: bool = True,
                wide: bool = False) -> str:
    """``snippet`` with a lazy marker before (after) it where it has markers and its first (last) line is
    a line of the file other than the file's first (last): the code above (below) the part it shows kept,
    where the snippet as written deletes it; ``head`` (``tail``) False: not before (after) it. ``wide``
    (for a snippet, whose kept reading ``engine.merge_reading`` takes only where deleting would unbind a
    name or break the file) marks more last lines: new code after a line of the file (a method added after
    the one shown, ``_anchored_tail``), and a line that only closes a block (``}``) though the file ends
    with it too (an `impl` block shown, another after it). Not for a chat model's answer, whose merge is
    certain only where both readings agree: there 91 exact known answers, put in fences, were not."""
    if not any(is_marker_text(line.strip()) for line in snippet.split("\n")):
        return snippet
    kept = [line.strip() for line in original.split("\n") if line.strip()]
    first, last = _edge(snippet, 1), _edge(snippet, -1)
    out = snippet
    if head and kept and not is_marker_text(first.strip()) and first.strip() in kept[1:] and first.strip() != kept[0]:
        out = marker_like(first, language) + "\n" + out
    if tail and kept and not is_marker_text(last.strip()) and (
            last.strip() in kept[:-1] and (last.strip() != kept[-1] or wide and is_trivial(last))
            or wide and last.strip() not in kept and _anchored_tail(snippet, kept)):
        out += marker_like(last, language) + "\n"
    return out


def _anchored_tail(snippet: str, kept: list[str]) -> bool:
    """Whether the code after a snippet's last marker holds a line of the file (``kept``) that is no
    closing bracket: new code after it (a method after the one shown) is placed by it, where new code
    alone after a marker (a function to append) anchors nowhere but at the file's end."""
    lines = snippet.split("\n")
    last = max(i for i, line in enumerate(lines) if is_marker_text(line.strip()))
    return any(line.strip() in kept and not is_trivial(line) for line in lines[last + 1:])


def _edge(text: str, step: int) -> str:
    """The first (``step`` 1) or last (-1) non-blank line of ``text``."""
    return next((line for line in text.split("\n")[::step] if line.strip()), "")


def deletes_in_use(deleting: str, keeping: str, language: str | None) -> bool:
    """Whether ``deleting`` (an answer read as deleting the code around its blocks) is ``keeping`` with
    lines taken out, one of which binds a name (an import, a definition) that ``deleting`` still uses and
    binds nowhere else: so read, the file would use a name it no longer has, which its writer does not
    mean (`import os` above `class Store:`, whose methods call `os.path`); or the file's every `#include`,
    whose names are not told."""
    if language is None:
        return False
    old, new = keeping.split("\n"), deleting.split("\n")
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    if any(tag not in ("equal", "delete") for tag, *_ in ops):
        return False
    gone = "\n".join(line for tag, i1, i2, _, _ in ops if tag == "delete" for line in old[i1:i2])
    if any(_UNTOLD.match(line) for line in gone.split("\n")) and not any(_UNTOLD.match(line) for line in new):
        return True  # the file's every `#include` deleted: the names it gave are not told, and the code uses some
    used = identifiers(deleting, language)
    return any(used[name] for name in bound_names(gone, language) - bound_names(deleting, language))


def split_answer(text: str) -> list[tuple[int, str]]:
    """The files a chat model's answer names for its code blocks: (the line its first block opens on, the
    path as the answer names it), in the order they first appear; ``answer_edit`` with each path gives
    its edit. A usage error where no block names a file."""
    named: dict[str, int] = {}
    for block in code_blocks(text)[0]:
        if block.path is not None:
            named.setdefault(block.path, block.line)
    if not named:
        raise UsageError("the answer names no file for its code blocks (```python:src/calc.py, or the path "
                         "on the line above a block)")
    return [(line, path) for path, line in named.items()]
