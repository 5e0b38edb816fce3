"""Synthetic edits of real files, by program transformation over tree-sitter trees (every language).

Each transformation takes a real file that parses cleanly and returns a ``SyntheticEdit`` (original,
expected, instruction) or None when the file offers no site for it. Where possible the *expected*
file is the real one and the transformation builds the original from it (removing the function,
import or statement the edit then adds back), so the model learns to write real code:

- ``add_function``: the original lacks one function or method; "Add the function `f`."
- ``delete_function``: the expected file lacks one; "Delete the function `f`."
- ``modify_function``: the original lacks one statement inside a function body; no instruction
  (none would be both short and faithful).
- ``rename_symbol``: a function or class defined in the file is renamed at every identifier that names
  it; "Rename `f` to `f_impl`." Files that mention the name in strings or comments are skipped.
- ``add_import``: the original lacks one import line; "Add the import `import os`."
- ``remove_comment``: the expected file lacks one whole-line comment block; "Remove the comment ...".
- ``change_line``: the original differs from the real file inside one to three lines: a name, a
  number or a string's text is another one, or a trailing comment is missing; no instruction. Small
  in-line changes are the commonest real edit, and the one a small model most often copies back
  unchanged from the original.

Python-only transformations written with ``ast`` (signatures, docstrings) are in ``transforms_python``.
This module does not make snippets or choose which transformations a file gets.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from fastapply.instructed import IMPORT_TYPES, mentions, remove_rows
from fastapply.syntax import count_errors, parse, python_parses

FUNCTION_TYPES = {
    "python": ("function_definition",),
    "javascript": ("function_declaration", "generator_function_declaration", "method_definition"),
    "typescript": ("function_declaration", "generator_function_declaration", "method_definition"),
    "tsx": ("function_declaration", "generator_function_declaration", "method_definition"),
    "go": ("function_declaration", "method_declaration"),
    "rust": ("function_item",),
    "java": ("method_declaration",),
    "c": ("function_definition",),
    "cpp": ("function_definition",),
    "ruby": ("method", "singleton_method"),
}
ALL_FUNCTION_TYPES = frozenset(t for types in FUNCTION_TYPES.values() for t in types)
WRAPPER_TYPES = ("decorated_definition", "export_statement")  # a function's whole-line unit when it wraps one
CLASS_TYPES = ("class_definition", "class_declaration", "class", "impl_item", "struct_item", "interface_declaration")
COMMENT_TYPES = ("comment", "line_comment", "block_comment")
IDENTIFIER_TYPES = ("identifier", "property_identifier", "field_identifier", "type_identifier", "constant",
                    "shorthand_property_identifier", "shorthand_property_identifier_pattern")
NUMBER_TYPES = ("integer", "float", "number", "number_literal", "integer_literal", "float_literal", "int_literal")
STRING_TYPES = ("string_content", "string_fragment", "interpreted_string_literal_content")
PRECEDING_TYPES = COMMENT_TYPES + ("attribute_item", "decorator", "marker_annotation", "annotation")


@dataclass(frozen=True)
class SyntheticEdit:
    transform: str
    original: str
    expected: str
    instruction: str  # "" when no templated instruction is faithful to the change


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def function_name(node) -> str | None:
    """The name a function node declares; C and C++ keep it at the bottom of a declarator chain."""
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in ("identifier", "field_identifier"):
        declarator = declarator.child_by_field_name("declarator")
    return _text(declarator) if declarator is not None else None


def _owner(node) -> str | None:
    """The class (or Rust impl type) a method belongs to, or None for a free function."""
    parent = node.parent
    while parent is not None:
        if parent.type in CLASS_TYPES:
            name = parent.child_by_field_name("name") or parent.child_by_field_name("type")
            return _text(name) if name is not None else None
        if parent.type in ALL_FUNCTION_TYPES:  # a function nested in a function is not a method
            return None
        parent = parent.parent
    return None


def _whole_lines(node, lines: list[bytes]) -> tuple[int, int] | None:
    """(first row, last row) when ``node`` alone occupies its lines (a trailing ``;`` allowed)."""
    start, end = node.start_point, node.end_point
    last = end.row - 1 if end.column == 0 and end.row > start.row else end.row
    if last >= len(lines) or lines[start.row][: start.column].strip():
        return None
    tail = lines[last][end.column:] if last == end.row else b""
    if tail.strip() not in (b"", b";", b","):
        return None
    return start.row, last


def _unit(node, lines: list[bytes]) -> tuple[int, int] | None:
    """Whole-line span of a definition with its wrapper, and the comments and attributes just above it."""
    while node.parent is not None and node.parent.type in WRAPPER_TYPES:
        node = node.parent
    span = _whole_lines(node, lines)
    if span is None:
        return None
    first, last = span
    previous = node.prev_named_sibling
    while previous is not None and previous.type in PRECEDING_TYPES:
        above = _whole_lines(previous, lines)
        if above is None or above[1] != first - 1:
            break
        first = above[0]
        previous = previous.prev_named_sibling
    return first, last


def _clean(text: str, language: str) -> bool:
    """No tree-sitter errors; for Python also accepted by ``ast`` (tree-sitter allows an empty class body)."""
    return not count_errors(text, language) and (language != "python" or python_parses(text))


def _functions(tree, language: str) -> list:
    kinds = FUNCTION_TYPES.get(language, ())
    return [n for n in _walk(tree.root_node) if n.type in kinds and function_name(n)]


def _describe(node, add: bool) -> str:
    owner, name = _owner(node), function_name(node)
    if owner:
        return f"the method `{name}` {'to' if add else 'from'} `{owner}`"
    return f"the function `{name}`"


def _function_edit(text: str, language: str, rng: random.Random, add: bool) -> SyntheticEdit | None:
    tree = parse(text, language)
    lines = text.encode("utf-8").splitlines(keepends=True)
    sites = [(n, span) for n in _functions(tree, language) if (span := _unit(n, lines))]
    rng.shuffle(sites)
    for node, (first, last) in sites[:5]:
        without = remove_rows(text, first, last)
        if without == text or not _clean(without, language):
            continue
        what = _describe(node, add)
        if add:
            return SyntheticEdit("add_function", without, text, f"Add {what}.")
        return SyntheticEdit("delete_function", text, without, f"Delete {what}.")
    return None


def add_function(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    return _function_edit(text, language, rng, add=True)


def delete_function(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    return _function_edit(text, language, rng, add=False)


def _body_statements(node) -> list:
    body = node.child_by_field_name("body")
    if body is None:
        return []
    statements = [c for c in body.named_children if c.type not in COMMENT_TYPES]
    if len(statements) == 1 and statements[0].type == "statement_list":  # Go wraps a body's statements
        statements = [c for c in statements[0].named_children if c.type not in COMMENT_TYPES]
    return statements


def modify_function(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    tree = parse(text, language)
    lines = text.encode("utf-8").splitlines(keepends=True)
    sites = []
    for node in _functions(tree, language):
        statements = _body_statements(node)
        if len(statements) >= 3:
            # never the last statement: it is often the function's value (Rust, Ruby) or its return
            sites.extend(s for s in statements[:-1] if _whole_lines(s, lines))
    rng.shuffle(sites)
    for statement in sites[:5]:
        first, last = _whole_lines(statement, lines)
        chunk = "".join(line.decode("utf-8") for line in lines[first:last + 1])
        without = "".join(line.decode("utf-8") for line in lines[:first] + lines[last + 1:])
        if len(chunk.strip()) < 8 or not _clean(without, language):
            continue
        return SyntheticEdit("modify_function", without, text, "")
    return None


def _new_name(name: str, rng: random.Random) -> str:
    if re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
        return rng.choice([f"{name}Impl", f"Base{name}", f"{name}V2", f"Default{name}"])
    if re.fullmatch(r"_*[a-z][a-z0-9_]*", name):
        return rng.choice([f"{name}_impl", f"{name}_v2", f"do_{name.lstrip('_')}", f"{name}_inner"])
    return rng.choice([f"{name}Impl", f"{name}V2", f"{name}Inner"])


def rename_symbol(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    tree = parse(text, language)
    occurrences: dict[str, list] = {}
    for node in _walk(tree.root_node):
        if node.type in IDENTIFIER_TYPES and node.child_count == 0:
            occurrences.setdefault(_text(node), []).append(node)
    defined = [function_name(n) for n in _functions(tree, language)]
    defined += [_text(n.child_by_field_name("name")) for n in _walk(tree.root_node)
                if n.type in CLASS_TYPES and n.child_by_field_name("name") is not None]
    names = sorted({d for d in defined if d and len(d) >= 3 and not d.startswith("__")
                    and len(occurrences.get(d, ())) >= 2})
    rng.shuffle(names)
    data = text.encode("utf-8")
    for name in names[:5]:
        # every textual mention must be an identifier node: no strings, comments or macros to miss
        if mentions(text, name) != len(occurrences[name]):
            continue
        new = _new_name(name, rng)
        if mentions(text, new):
            continue
        out = data
        for node in sorted(occurrences[name], key=lambda n: n.start_byte, reverse=True):
            out = out[: node.start_byte] + new.encode() + out[node.end_byte:]
        renamed = out.decode("utf-8")
        if _clean(renamed, language):
            return SyntheticEdit("rename_symbol", text, renamed, f"Rename `{name}` to `{new}`.")
    return None


def add_import(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    kinds = IMPORT_TYPES.get(language)
    if not kinds:
        return None
    tree = parse(text, language)
    lines = text.encode("utf-8").splitlines(keepends=True)
    sites = [n for n in _walk(tree.root_node) if n.type in kinds and n.start_point.row == n.end_point.row
             and _whole_lines(n, lines) and "__future__" not in _text(n)]
    rng.shuffle(sites)
    for node in sites[:5]:
        row = node.start_point.row
        without = "".join(line.decode("utf-8") for line in lines[:row] + lines[row + 1:])
        if _clean(without, language):
            statement = lines[row].decode("utf-8").strip()
            return SyntheticEdit("add_import", without, text, f"Add the import `{statement}`.")
    return None


def remove_comment(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    tree = parse(text, language)
    lines = text.encode("utf-8").splitlines(keepends=True)
    sites = []
    for node in _walk(tree.root_node):
        span = _whole_lines(node, lines) if node.type in COMMENT_TYPES else None
        # not the file's header (licence, shebang) and not tool directives
        if span and span[0] > 2 and not re.search(r"noqa|type:|pragma|eslint|prettier|nolint|clippy|TODO|FIXME",
                                                  _text(node)):
            sites.append((node, span))
    rng.shuffle(sites)
    for node, (first, last) in sites[:5]:
        words = _text(node).splitlines()[0].strip()
        if len(words) < 8:
            continue
        without = "".join(line.decode("utf-8") for line in lines[:first] + lines[last + 1:])
        if _clean(without, language):
            return SyntheticEdit("remove_comment", text, without, f"Remove the comment that starts `{words}`.")
    return None


def _other_number(value: str, rng: random.Random) -> str:
    if re.fullmatch(r"[0-9]+", value):
        return str(rng.choice([int(value) + 1, max(0, int(value) - 1), int(value) * 2 + 1, 10 * int(value) or 2]))
    return rng.choice(["0", "1", "2", "10"]) if re.fullmatch(r"[0-9.]+", value) else ""


def _fewer_words(value: str) -> str:
    words = value.split(" ")
    return " ".join(words[:-1]) if len(words) > 1 and words[-2] else ""


def _line_changes(tree, lines: list[bytes], rng: random.Random) -> dict[int, tuple[int, int, str]]:
    """For each row that has one: (start byte, end byte, text) of one change that would turn the real
    file's leaf into what an older version of it might have said."""
    leaves = [n for n in _walk(tree.root_node) if n.child_count == 0 and n.start_point.row == n.end_point.row
              and n.start_point.row > 1]
    by_type: dict[str, set[str]] = {}
    for node in leaves:
        by_type.setdefault(node.type, set()).add(_text(node))
    distinct = {kind: sorted(values) for kind, values in by_type.items()}
    changes: dict[int, list[tuple[int, int, str]]] = {}
    for node in leaves:
        value, row = _text(node), node.start_point.row
        if node.type in COMMENT_TYPES:
            before = lines[row][: node.start_point.column]
            if not before.strip() or lines[row][node.end_point.column:].strip():
                continue  # a whole-line comment, or code after it
            start = node.start_byte - (len(before) - len(before.rstrip()))
            changes.setdefault(row, []).append((start, node.end_byte, ""))
            continue
        if node.type in IDENTIFIER_TYPES:
            others = [o for o in distinct[node.type] if o != value and len(o) > 1]
            new = rng.choice(others) if others else ""
        elif node.type in NUMBER_TYPES:
            new = _other_number(value, rng)
        elif node.type in STRING_TYPES and len(value) >= 3:
            others = [o for o in distinct[node.type] if o != value and "\\" not in o]
            new = rng.choice(others) if others and rng.random() < 0.5 else _fewer_words(value)
        else:
            continue
        if new and new != value:
            changes.setdefault(row, []).append((node.start_byte, node.end_byte, new))
    return {row: rng.choice(options) for row, options in changes.items()}


def change_line(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    tree = parse(text, language)
    lines = text.encode("utf-8").splitlines(keepends=True)
    changes = _line_changes(tree, lines, rng)
    rows = sorted(changes)
    rng.shuffle(rows)
    for _ in range(5):
        chosen = sorted((changes[row] for row in rows[: rng.choice((1, 1, 2, 3))]), reverse=True)
        if not chosen:
            return None
        data = text.encode("utf-8")
        for start, end, new in chosen:  # from the end of the file, so earlier offsets hold
            data = data[:start] + new.encode("utf-8") + data[end:]
        original = data.decode("utf-8")
        if original != text and _clean(original, language):
            return SyntheticEdit("change_line", original, text, "")
        rng.shuffle(rows)
    return None


TRANSFORMS = {
    "add_function": add_function,
    "delete_function": delete_function,
    "modify_function": modify_function,
    "rename_symbol": rename_symbol,
    "add_import": add_import,
    "remove_comment": remove_comment,
    "change_line": change_line,
}
