"""Seeded random edits of real source files, for the merge benchmark.

``corpus()`` lists real files on this machine (the Python standard library's sources, JavaScript files
of the node installation), ``sources(dirs)`` the files of any language fastapply knows under some
folders; ``random_edit(rng, text, language)`` makes one plausible edit of a file: lines inserted,
replaced or deleted, a function body changed, a function added or removed (in Python and JavaScript;
in the other languages, lines only, the new ones borrowed from elsewhere in the file and changed). It
does not make snippets (``fastapply.snippet.make_snippet`` does), but for ``block_edit``, whose snippet
is the edited block itself; nor merges them.
"""

from __future__ import annotations

import random
import re
import sysconfig
from pathlib import Path

NEW_LINES = [
    "result = compute(value, strict=True)",
    "logger.debug('retrying %s', name)",
    "total += len(items)",
    "return result",
    "raise ValueError(f'bad input: {value!r}')",
    "self._cache.clear()",
    "count = count + 1",
]
NEW_JS_LINES = [
    "const result = compute(value, { strict: true });",
    "log.verbose('retrying', name);",
    "total += items.length;",
    "return result;",
    "throw new Error(`bad input: ${value}`);",
    "count = count + 1;",
]


def corpus(language: str, min_lines: int = 40, max_lines: int = 800) -> list[Path]:
    """Real files of ``language`` ("python" or "javascript") on this machine, sorted, sizes bounded."""
    if language == "python":
        root = Path(sysconfig.get_paths()["stdlib"])
        files = [p for p in root.rglob("*.py") if "site-packages" not in p.parts and "test" not in p.parts]
    else:
        files = list(Path("/usr/lib/node_modules").rglob("*.js"))
    out = []
    for path in sorted(files):
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if "\r" in text or "\x0c" in text:
            continue
        if min_lines <= text.count("\n") <= max_lines:
            out.append(path)
    return out


OTHER = "other"  # the name ``sources`` gives the files of no language fastapply knows (merged with no parser)


def sources(dirs: list[Path], min_lines: int = 20, max_lines: int = 400, other: bool = False) -> dict[str, list[Path]]:
    """The files under ``dirs`` of each language fastapply knows (by extension), sorted, UTF-8 with LF
    line ends, sizes bounded; with ``other``, the rest too, under ``OTHER`` (a Dockerfile, a ``.conf``)."""
    from fastapply.syntax import language_for_path

    out: dict[str, list[Path]] = {}
    for path in sorted(p for root in dirs for p in Path(root).rglob("*") if p.is_file()):
        language = language_for_path(path) or (OTHER if other else None)
        if language is None:
            continue
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if "\r" not in text and "\x0c" not in text and min_lines <= text.count("\n") <= max_lines:
            out.setdefault(language, []).append(path)
    return out


def random_edit(rng: random.Random, text: str, language: str, lines_only: bool = False) -> tuple[str, str]:
    """(edited text, kind of edit): one to three edits of the kinds below, far enough apart; of lines
    alone, borrowed from the file, with ``lines_only`` or in a language other than Python and JavaScript."""
    lines = text.splitlines(keepends=True)
    kinds = []
    pool = None if lines_only or language not in _DEF else language  # None: lines borrowed from the file
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["insert", "replace", "delete", "body", "add-function", "delete-function", "rename"]
                          if pool else ["insert", "replace", "delete"])
        lines = _EDITS[kind](rng, lines, pool) or lines
        kinds.append(kind)
    return "".join(lines), "+".join(kinds)


def block_edit(rng: random.Random, text: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind of edit): one line inside an indented block of the file replaced,
    inserted or deleted, and the edited block alone as the snippet, with no marker (a changed block
    pasted as it is); None where the file has no such block. The block's first and last lines stay as they are: a snippet with
    no marker cannot show an edit there. Its new line is borrowed from the file, a word changed."""
    from fastapply.markers import indent_width

    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() and indent_width(line) > 0
              and (i == 0 or not lines[i - 1].strip() or indent_width(lines[i - 1]) < indent_width(line))]
    if not starts:
        return None
    start = rng.choice(starts)
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or indent_width(lines[end]) >= indent_width(lines[start])):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    end = min(end, start + rng.randint(3, 25))
    if end - start < 3:
        return None
    return _edited_inside(rng, lines, start, end, "block")


def region_edit(rng: random.Random, text: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind of edit): one line inside a run of 3 to 25 lines anywhere in the file
    replaced, inserted or deleted, and the edited run alone as the snippet, with no marker (the part of a
    file that changed, pasted as it is: a section of a README, a class without the imports above it);
    None where the file is too short. The run starts and ends at a line that is not blank, and leaves
    out lines of the file before it or after it that are not blank: it is never the whole file."""
    lines = text.splitlines(keepends=True)
    full = [i for i, line in enumerate(lines) if line.strip()]
    if len(full) < 6:
        return None
    start = rng.choice(full[:-2])
    ends = [i + 1 for i in full if start + 3 <= i + 1 <= start + 25]
    ends = [end for end in ends if start > full[0] or end <= full[-1]]  # never the whole file
    if not ends:
        return None
    return _edited_inside(rng, lines, start, rng.choice(ends), "region")


def key_edit(rng: random.Random, text: str, language: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind) for a YAML, TOML or JSON file, or one of no known language read as INI
    (``OTHER``): one key's one-line value changed, and the snippet the path to it, as a user shows a
    configuration change: the headers above the key (each nearest shallower line above it; in TOML and
    INI its section's header; in JSON the root's ``{`` too, and the braces closing them) and the key's
    new line, no marker. ``keys-gap`` where the snippet leaves out lines between those it shows,
    ``keys-run`` where they are a run of the file's lines; a third of them ``keys-marked``, a lazy marker
    after the key's line and one before the path where lines of the file are above it. None where the
    file has no such key (a key under a list item is not)."""
    lines = text.splitlines(keepends=True)
    content, leaves = _key_leaves(lines, language)
    if not leaves:
        return None
    path, i = rng.choice(leaves)
    new = _new_value(lines[i])
    edited = lines[:i] + [new] + lines[i + 1:]
    shown = new.rstrip().removesuffix(",") + "\n" if language == "json" and rng.random() < 0.5 else new  # the
    # last line of an object, as a user writes it, or the file's comma kept
    return "".join(edited), *_key_snippet(rng, lines, language, content, path, i, shown, "keys")


def new_key_edit(rng: random.Random, text: str, language: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind) as ``key_edit``, but a key the file lacks (``fastapply_added``, a
    one-line value) added after one of the file's keys, and the snippet the path to that key, its line as
    the edited file has it (in JSON with the comma the new key after it needs) and the new key's line
    (half of JSON's shown without its comma): ``new-key-gap``, ``new-key-run``, a third ``new-key-marked``
    (a marker after the new line); in a third of YAML's, a block (``fastapply_added:`` over ``enabled: true``,
    ``new-block-*``); in a third of TOML's and INI's, a section at the file's end (``[fastapply_added]`` over
    ``enabled = true``, set apart by a blank line; ``new-section-run``, or ``-marked`` with a marker above
    it). None where the file has no such key, or has that name already."""
    lines = text.splitlines(keepends=True)
    content, leaves = _key_leaves(lines, language)
    if not leaves or "fastapply_added" in text:
        return None
    path, i = rng.choice(leaves)
    if language in ("toml", OTHER) and text.endswith("\n") and rng.random() < 1 / 3:
        section = "[fastapply_added]\nenabled = true\n"
        marked = rng.random() < 1 / 3
        return (text + ("\n" if lines[-1].strip() else "") + section, ("# ...\n" if marked else "") + section,
                "new-section-marked" if marked else "new-section-run")
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    end = "\n" if lines[i].endswith("\n") else ""
    sibling = lines[i]
    if language == "json":
        last = not lines[i].rstrip().endswith(",")
        sibling = lines[i].rstrip() + ("," if last else "") + "\n"
        new = f'{indent}"fastapply_added": "added"' + ("" if last else ",") + end
    else:
        new = indent + ("fastapply_added: added" if language == "yaml" else 'fastapply_added = "added"'
                        if language == "toml" else "fastapply_added = added") + end
    block = language == "yaml" and rng.random() < 1 / 3
    if block:
        new = f"{indent}fastapply_added:\n{indent}  enabled: true{end}"
    edited = lines[:i] + [sibling, new] + lines[i + 1:]
    shown = new.rstrip().removesuffix(",") + "\n" if language == "json" and rng.random() < 0.5 else new
    if not shown.endswith("\n"):
        shown += "\n"
    return "".join(edited), *_key_snippet(rng, lines, language, content, path, i, sibling + shown,
                                          "new-block" if block else "new-key")


def function_edit(rng: random.Random, text: str, language: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind) for a code file: one line inside a top-level definition replaced (another
    line of the file, a word changed), and the snippet as an agent writes it: from the definition's first
    line, with no marker above it though the file has code there (imports), a marker, the changed line
    between lines of the file, a marker, and the definition's closing line where it has one (``}``,
    ``end``): ``function-head``. None where the file has no such definition (8 lines or more, below other
    code)."""
    shown = _function_part(rng, text, language)
    if shown is None:
        return None
    _, i, new, part = shown
    lines = text.splitlines(keepends=True)
    return "".join(lines[:i] + [new] + lines[i + 1:]), "".join(part), "function-head"


def _function_part(rng: random.Random, text: str, language: str, after: int = 0
                   ) -> tuple[int, int, str, list[str]] | None:
    """A top-level definition of 8 lines or more, starting at line ``after`` or below with code above it,
    one line inside it replaced (another line of the file, a word changed), and the part of a snippet that
    shows it as ``function_edit`` says: (its header's line, the changed line, the new line, the part's
    lines). None where the file has no such definition."""
    from fastapply.defs import definitions
    from fastapply.snippet import marker_like

    lines = text.splitlines(keepends=True)
    found = [d for d in definitions(text, language) if not d.scope and d.end - d.header >= 8 and d.start >= after
             and any(line.strip() for line in lines[:d.start])]
    if not found:
        return None
    d = rng.choice(found)
    body = [i for i in range(d.header + 2, d.end - 2) if lines[i].strip() and lines[i - 1].strip()
            and lines[i + 1].strip()]
    if not body:
        return None
    i = rng.choice(body)
    new = _new_line(rng, lines[i], None, lines)
    last = max(j for j in range(d.header, d.end) if lines[j].strip())
    closer = lines[last] if lines[last].strip() in ("}", "};", "end") else None
    part = [lines[d.header]]
    if i - 1 > d.header + 1:
        part.append(marker_like(lines[d.header + 1], language) + "\n")
    part += [lines[i - 1], new, lines[i + 1]]
    if i + 2 < (last if closer else d.end):
        part.append(marker_like(lines[i + 1], language) + "\n")
    part += [closer] if closer else []
    return d.header, i, new, part


# an import of one line, by language (the lines ``import_edit`` copies)
_IMPORT = {"python": r"^(import [\w.]+( as \w+)?|from [\w.]+ import \w+( as \w+)?(, \w+( as \w+)?)*)\n$",
           "javascript": r"^(import [^'\"\n]* from ['\"][^'\"]+['\"];?"
                         r"|(const|let|var) \w+ = require\(['\"][^'\"]+['\"]\);?)\n$",
           "c": r"^#include [<\"][\w./]+[>\"]\n$", "rust": r"^(pub )?use [\w:{}, ]+;\n$"}
_IMPORT.update(typescript=_IMPORT["javascript"], cpp=_IMPORT["c"])
_NOT_NAMES = {"import", "from", "as", "use", "pub", "include", "const", "let", "var", "require", "crate", "self",
              "super", "type"}


def import_edit(rng: random.Random, text: str, language: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind) for a code file: an import added after one of the file's imports (a copy
    of it, its last name ``NAME_added``) and one line inside a top-level definition below them changed (as
    ``function_edit``), and the snippet as an agent writes the two: 1 to 3 of the file's lines ending with
    that import (a marker above them where the file has code above), the new import, a marker (or the blank
    lines there), then the definition as ``function_edit`` shows it. ``import-below``: no line of the file
    shown below the new import; ``import-between``: the next import shown below it. None where the file has
    no two imports of one line each (``_IMPORT``) with such a definition below them."""
    from fastapply.snippet import marker_like

    if language not in _IMPORT:
        return None
    lines = text.splitlines(keepends=True)
    imports = [i for i, line in enumerate(lines) if re.match(_IMPORT[language], line)]
    if len(imports) < 2:
        return None
    shown = _function_part(rng, text, language, after=imports[-1] + 1)
    if shown is None:
        return None
    header, changed, new, part = shown
    i = rng.choice(imports)
    names = [m for m in re.finditer(r"[A-Za-z_]\w+", lines[i]) if m.group() not in _NOT_NAMES]
    if not names:
        return None
    added = lines[i][:names[-1].end()] + "_added" + lines[i][names[-1].end():]
    kind = "between" if i + 1 in imports and rng.random() < 0.5 else "below"
    top = max(i - rng.choice([0, 1, 2]), 0)
    while not lines[top].strip():
        top += 1
    above = [marker_like(lines[top], language) + "\n"] if any(line.strip() for line in lines[:top]) else []
    end = i + 2 if kind == "between" else i + 1
    gap = [marker_like("", language) + "\n"] if any(line.strip() for line in lines[end:header]) else lines[end:header]
    edited = lines[:i + 1] + [added] + lines[i + 1:changed] + [new] + lines[changed + 1:]
    snippet = above + lines[top:i + 1] + [added] + lines[i + 1:end] + gap + part
    return "".join(edited), "".join(snippet), f"import-{kind}"


def beside_edit(rng: random.Random, text: str, language: str) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind) for a code file: a line between lines of code at its indentation
    changed, and the snippet as a chat model writes it, the new line with a marker right after it and 1 to
    3 lines of the file above it (``-below``: the marker keeps what follows), or right before it and lines
    below (``-above``), markers around. ``store-*``: a one-line store's value changed (``name = 10`` ->
    ``name = 11``: a line of one name, with ``const``, ``let``, ``var``, ``=`` or ``:=`` and a value);
    ``line-*``: a line that stores nothing, its last number or string changed (``print("a")`` ->
    ``print("a2")``); both
    meant in place of the line beside the marker. ``copy-*``: such a line's copy, changed, added before
    (``-below``) or after (``-above``) it, the line itself left to the marker: meant added. None where the
    file has no such line."""
    from fastapply.markers import indent_width
    from fastapply.snippet import marker_like

    lines = text.splitlines(keepends=True)
    code = [i for i, line in enumerate(lines) if line.strip()]
    kind = rng.choice(["store", "line", "copy"])
    found = [n for n in range(4, len(code) - 4) if lines[code[n]].endswith("\n")
             and all(indent_width(lines[code[m]]) == indent_width(lines[code[n]]) for m in (n - 1, n + 1))
             and (re.match(_STORE, lines[code[n]]) is not None if kind == "store" else
                  not _assigns(lines[code[n]]) and _literal_changed(lines[code[n]]) is not None)]
    if not found:
        return None
    n = rng.choice(found)
    i = code[n]
    if kind == "store":
        semicolon = ";" if lines[i].rstrip().endswith(";") else ""
        new = _new_value(lines[i].rstrip().removesuffix(";") + "\n").rstrip("\n") + semicolon + "\n"
    else:
        new = _literal_changed(lines[i])
    below, context = rng.random() < 0.5, rng.choice([1, 2, 3])
    if kind == "copy":  # the copy goes between the line and the lines the snippet shows
        edited = lines[:i] + [new] + lines[i:] if below else lines[:i + 1] + [new] + lines[i + 1:]
        shown = code[n - context:n] if below else code[n + 1:n + 1 + context]
        part = lines[shown[0]:i] + [new] if below else [new] + lines[i + 1:shown[-1] + 1]
        top, bottom = (code[n - context - 1], i) if below else (i, code[n + context + 1])
    else:
        edited = lines[:i] + [new] + lines[i + 1:]
        shown = code[n - context:n + 1] if below else code[n:n + 1 + context]
        part = [new if j == i else lines[j] for j in range(shown[0], shown[-1] + 1)]
        top = code[n - context - 1] if below else code[n - 1]
        bottom = code[n + 1] if below else code[n + context + 1]
    before = [marker_like(lines[top], language) + "\n"] if min(shown) > code[0] else []
    after = [marker_like(lines[bottom], language) + "\n"]
    return "".join(edited), "".join(before + part + after), f"{kind}-{'below' if below else 'above'}"


def definition_edit(rng: random.Random, text: str, language: str, nested: bool = False
                    ) -> tuple[str, str, str] | None:
    """(edited text, snippet, kind) for a code file: a top-level definition added, made as an agent makes
    one like its neighbour (a copy of it, renamed ``NAME_added``, one line of its body another of the file's
    with a word changed; its decorators and the comments above it copied too), and the snippet as an agent
    writes it: a marker, the last 1 to 3 lines of the definition above, the new one. ``between``: added
    between two definitions, a copy of the next, whose lines up to its header the snippet shows after the
    new one, then a marker (``between-decorated`` where the next has decorators or comments above its
    header, which the new one opens with too); ``end``: added after the last definition where the file has
    code below it (``module.exports``, ``if __name__``), a copy of that definition, no marker after it: the
    expected file keeps that code. None where the file has no such place (definitions of 3 to 40 lines,
    blank lines alone between them, the name on the header's line).

    ``nested``: a method (a definition inside another) added so among its siblings instead, ``method-``
    before the kind; ``method-last`` after the last one in its class, a marker at column 0 after it (the
    class's closing line and the rest kept), spaced from it as it is from the one before."""
    from fastapply.defs import definitions
    from fastapply.snippet import marker_like

    lines = text.splitlines(keepends=True)
    groups: dict[tuple[str, ...], list] = {}
    for d in definitions(text, language):
        groups.setdefault(d.scope, []).append(d)
    fit = [d for group in groups.values() for d in group if 3 <= d.end - d.header and d.end - d.start <= 40
           and d.name in lines[d.header] and any(lines[j].strip() for j in range(d.header + 1, d.end - 1))]
    pairs, ends = [], []
    for scope, group in groups.items():
        if bool(scope) != nested:
            continue
        pairs += [(a, b) for a, b in zip(group, group[1:]) if a in fit and b in fit and b.start > a.end
                  and not "".join(lines[a.end:b.start]).strip()]
        last = group[-1]
        below = next((j for j in range(last.end, len(lines)) if lines[j].strip()), None)
        if last in fit and below is not None and (nested or below > last.end):
            ends.append(last)
    kind = rng.choice(["between", "end"])
    if not (pairs if kind == "between" else ends):
        kind = "end" if ends else "between"
        if not (pairs or ends):
            return None
    a, b = rng.choice(pairs) if kind == "between" else (rng.choice(ends) if len(ends) > 1 else ends[0],) * 2
    copy = lines[b.start:b.end]
    copy[b.header - b.start] = lines[b.header].replace(b.name, b.name + "_added", 1)
    body = [k for k in range(b.header - b.start + 1, len(copy) - 1) if copy[k].strip()]
    k = rng.choice(body)
    copy[k] = _new_line(rng, copy[k], None, lines)
    code = [j for j in range(a.header, a.end) if lines[j].strip()]
    shown = code[-min(rng.choice([1, 2, 3]), len(code))]
    above = [marker_like(lines[shown], language) + "\n"]
    prefix = "method-" if nested else ""
    if kind == "between":
        gap = lines[a.end:b.start]
        edited = lines[:b.start] + copy + gap + lines[b.start:]
        after = lines[b.start:b.header + 1] + [marker_like(lines[b.header + 1], language) + "\n"]
        snippet = above + lines[shown:a.end] + gap + copy + gap + after
        return "".join(edited), "".join(snippet), prefix + ("between-decorated" if b.start < b.header else "between")
    if nested:  # spaced as from the sibling before; the class's closing line and the rest kept by a marker
        before = [d for d in groups[a.scope] if d.end <= a.start]
        gap = lines[before[-1].end:a.start] if before and not "".join(lines[before[-1].end:a.start]).strip() \
            else ["\n"]
        edited = lines[:a.end] + gap + copy + lines[a.end:]
        return "".join(edited), "".join(above + lines[shown:a.end] + gap + copy + [marker_like("", language) + "\n"]), \
            "method-last"
    gap = lines[a.end:next(j for j in range(a.end, len(lines)) if lines[j].strip())]
    edited = lines[:a.end] + gap + copy + lines[a.end:]
    return "".join(edited), "".join(above + lines[shown:a.end] + gap + copy), "end"


def _literal_changed(line: str) -> str | None:
    """The line with its last number one more, or a character added before its last string's closing
    quote; None where it has neither, or is no whole statement (brackets left open, a comma ending it)."""
    body = line.rstrip("\n")
    if body.rstrip().endswith((",", "(", "[", "{", "\\")) or any(body.count(a) != body.count(b)
                                                             for a, b in ("()", "[]", "{}")):
        return None
    string = list(re.finditer(r"(\"[^\"\n]*)\"|('[^'\n]*)'", body))
    number = list(re.finditer(r"(?<![\w.])\d+(?![\w.])", body))
    if number and (not string or number[-1].start() > string[-1].end()):
        found = number[-1]
        return body[:found.start()] + str(int(found.group()) + 1) + body[found.end():] + "\n"
    if string:
        found = string[-1]
        return body[:found.end() - 1] + "2" + body[found.end() - 1:] + "\n"
    return None


def _assigns(line: str) -> bool:
    """Whether a line stores anything (an `=` or `:=` outside brackets and strings: a declaration with its
    type, `x = f(y)`): no line for ``line-*`` and ``copy-*``, whose copy would be a dead store."""
    text = re.sub(r"\"[^\"]*\"|'[^']*'", "", line)
    while re.search(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}", text):
        text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}", "", text)
    return re.search(r"(?<![=!<>+\-*/%&|^:~])=(?![=>~])|:=", text) is not None


_STORE = r"^\s*(?:(?:const|let|var) )?[A-Za-z_$][\w$.]* *(?:=|:=) *[^=\s(\[{][^(\[{]*?[^,(\[{\s\\]\n$"


def _key_leaves(lines: list[str], language: str) -> tuple[list[int], list[tuple[list[int], int]]]:
    """The lines of a file that are neither blank, nor brackets, nor comments; and its keys with one-line
    values, each with the lines of the headers above it (``_parents``; TOML's and INI's section header)."""
    from fastapply.markers import indent_width

    content = [i for i, line in enumerate(lines) if line.strip().strip("{}[],") and not line.lstrip().startswith("#")]
    leaves = []
    for n, i in enumerate(content):
        deeper = n + 1 < len(content) and indent_width(lines[content[n + 1]]) > indent_width(lines[i])
        if language in ("toml", OTHER):  # a file of no known language read as INI (a systemd unit, `.env`)
            key = re.match(_SECTION_LEAF[language], lines[i]) and not (language == OTHER and deeper)
            path = [h for h in content[:n] if lines[h].startswith("[")][-1:] if key else None
        else:
            key = re.match(_LEAF[language], lines[i].rstrip("\n"))
            path = (_parents(lines, content[:n], indent_width(lines[i]), _HEADER[language])
                    if key and not deeper else None)
        if path is not None:
            leaves.append((path, i))
    return content, leaves


def _key_snippet(rng: random.Random, lines: list[str], language: str, content: list[int], path: list[int], i: int,
                 shown: str, name: str) -> tuple[str, str]:
    """(snippet, kind) for a path to the key at line ``i``: the headers above it (JSON's root too), its lines
    as ``shown``, the braces closing them; ``-gap``, ``-run`` or, a third, ``-marked`` (a marker after
    ``shown``, one before the path where the file has lines above it)."""
    from fastapply.markers import indent_width

    root = next(j for j, line in enumerate(lines) if line.strip())
    if language == "json" and lines[root].strip() == "{":
        path = [root] + path
    places = path + [i]
    gap = any(j in content for a, b in zip(places, places[1:]) for j in range(a + 1, b))
    closing = "".join(lines[h][:indent_width(lines[h])] + "}\n" for h in reversed(path)) if language == "json" else ""
    if rng.random() < 1 / 3:  # a chat model's way: a lazy marker for what it leaves out around the path
        mark = "// ...\n" if language == "json" else "# ...\n"
        before = mark if places[0] > content[0] else ""
        after = lines[i][:indent_width(lines[i])] + mark
        return before + "".join(lines[h] for h in path) + shown + after + closing, f"{name}-marked"
    return "".join(lines[h] for h in path) + shown + closing, f"{name}-gap" if gap else f"{name}-run"


_SECTION_LEAF = {"toml": r"^[A-Za-z_][\w.-]* *= *([^\[{\s\"'][^\[{]*|\"[^\"]*\"|'[^']*')\s*$",
                 OTHER: r"^[A-Za-z_][\w.-]* *= *\S.*$"}
_LEAF = {"yaml": r"^( *)[A-Za-z_][\w.-]*: +([^\s|>#&*!][^#]*)$",
         "json": r'^( *)"[^"]*": *("[^"]*"|-?\d[\d.eE+-]*|true|false|null),?\s*$'}
_HEADER = {"yaml": r"^ *[A-Za-z_][\w.-]*:\s*$", "json": r'^ *"[^"]*": *\{\s*$'}


def _parents(lines: list[str], above: list[int], width: int, header: str) -> list[int] | None:
    """The lines of the keys a line at ``width`` is under (nearest shallower line above, each in turn),
    or None where one is not a plain header (``key:``, ``"key": {``: not a list item, a block of text)."""
    from fastapply.markers import indent_width

    parents: list[int] = []
    for j in reversed(above):
        if indent_width(lines[j]) < width:
            if not re.match(header, lines[j]):
                return None
            parents.insert(0, j)
            width = indent_width(lines[j])
    return parents


def _new_value(line: str) -> str:
    """The line with its value (after its key's ``:`` or ``=``) changed: a number one more, else a
    character added before its closing quote or at its end; its newline, or none, as it was."""
    key = re.match(r'^\s*(?:"[^"]*"\s*:|[^:=]*?(?::\s|=))\s*', line)
    head, body = line[:key.end()], line[key.end():].rstrip()
    comma = "," if body.endswith(",") else ""  # JSON's comma after the value stays
    body = body.removesuffix(",")
    number = re.search(r"(\d+)(?=\D*$)", body)
    if number and not body.endswith(("\"", "'")):
        body = body[:number.start()] + str(int(number.group(1)) + 1) + body[number.end():]
    elif body.endswith(("\"", "'")):
        body = body[:-1] + "2" + body[-1]
    else:
        body = body + "2"
    return head + body + comma + ("\n" if line.endswith("\n") else "")


def _edited_inside(rng: random.Random, lines: list[str], start: int, end: int, name: str) -> tuple[str, str, str]:
    """(edited text, the edited run ``lines[start:end]``, kind): one line strictly inside the run replaced,
    inserted after or deleted; the new line is another of the file's, a word changed."""
    run = lines[start:end]
    k = rng.randrange(1, len(run) - 1)
    kind = rng.choice(["replace", "insert", "delete"])
    new = [_new_line(rng, run[k], None, lines)]
    edited = run[:k] + (new if kind == "replace" else [run[k]] + new if kind == "insert" else []) + run[k + 1:]
    return "".join(lines[:start] + edited + lines[end:]), "".join(edited), f"{name}-{kind}"


def _new_line(rng: random.Random, like: str, language: str | None, lines: list[str]) -> str:
    indent = like[: len(like) - len(like.lstrip())] if like.strip() else ""
    if language is None:  # another line of the file, a word of it changed
        line = rng.choice([line for line in lines if line.strip()]).strip()
        found = list(re.finditer(r"[A-Za-z_]\w{2,}", line))
        if found:
            word = rng.choice(found)
            line = line[:word.end()] + f"{rng.randrange(100)}" + line[word.end():]
        return indent + line + "\n"
    pool = NEW_LINES if language == "python" else NEW_JS_LINES
    return indent + rng.choice(pool) + f"  {'#' if language == 'python' else '//'} edit {rng.randrange(1000)}\n"


def _code_line(rng: random.Random, lines: list[str]) -> int | None:
    candidates = [i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith(("#", "//", "*"))]
    return rng.choice(candidates) if candidates else None


def _insert(rng, lines, language):
    i = _code_line(rng, lines)
    if i is None:
        return None
    new = [_new_line(rng, lines[i], language, lines) for _ in range(rng.randint(1, 4))]
    return lines[: i + 1] + new + lines[i + 1:]


def _replace(rng, lines, language):
    i = _code_line(rng, lines)
    if i is None:
        return None
    n = rng.randint(1, 3)
    return lines[:i] + [_new_line(rng, lines[i], language, lines) for _ in range(n)] + lines[i + rng.randint(1, 3):]


def _delete(rng, lines, language):
    i = _code_line(rng, lines)
    if i is None:
        return None
    return lines[:i] + lines[i + rng.randint(1, 4):]


_DEF = {"python": re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)"),
        "javascript": re.compile(r"^(\s*)(?:async\s+)?function\s*\*?\s*(\w+)")}


def _functions(lines, language) -> list[tuple[int, int]]:
    """(start, end) line ranges of functions found by their header and indentation."""
    out = []
    for i, line in enumerate(lines):
        match = _DEF[language].match(line)
        if not match:
            continue
        width = len(match.group(1))
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > width):
            j += 1
        if language == "javascript" and j < len(lines) and lines[j].strip().startswith("}"):
            j += 1
        while j > i + 1 and not lines[j - 1].strip():
            j -= 1
        if j - i >= 3:
            out.append((i, j))
    return out


def _body(rng, lines, language):
    functions = _functions(lines, language)
    if not functions:
        return _replace(rng, lines, language)
    start, end = rng.choice(functions)
    i = rng.randrange(start + 1, end)
    like = lines[i] if lines[i].strip() else lines[start + 1]
    return lines[:i] + [_new_line(rng, like, language, lines) for _ in range(rng.randint(1, 3))] + lines[i + 1:]


def _add_function(rng, lines, language):
    functions = _functions(lines, language)
    if not functions:
        return _insert(rng, lines, language)
    start, end = rng.choice(functions)
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    name = f"helper_{rng.randrange(10000)}"
    if language == "python":
        new = ["\n", f"{indent}def {name}(value):\n", f"{indent}    return value * {rng.randint(2, 9)}\n"]
    else:
        new = ["\n", f"{indent}function {name}(value) {{\n", f"{indent}  return value * {rng.randint(2, 9)};\n",
               f"{indent}}}\n"]
    return lines[:end] + new + lines[end:]


def _delete_function(rng, lines, language):
    functions = _functions(lines, language)
    if not functions:
        return _delete(rng, lines, language)
    start, end = rng.choice(functions)
    while end < len(lines) and not lines[end].strip():
        end += 1
    return lines[:start] + lines[end:]


def _rename(rng, lines, language):
    functions = _functions(lines, language)
    if not functions:
        return _replace(rng, lines, language)
    start, _ = rng.choice(functions)
    name = _DEF[language].match(lines[start]).group(2)
    return lines[:start] + [lines[start].replace(name, name + "_v2", 1)] + lines[start + 1:]


_EDITS = {"insert": _insert, "replace": _replace, "delete": _delete, "body": _body,
          "add-function": _add_function, "delete-function": _delete_function, "rename": _rename}
