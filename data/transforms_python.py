"""Synthetic edits of real Python files that need Python's own parser (``ast``, ``tokenize``).

- ``change_signature``: a function gains a keyword parameter and every call of it in the file passes
  it; "Add a parameter `strict=False` to `load` and pass `strict=True` where it is called."
- ``add_docstring``: the original lacks a function's or class's docstring; "Add a docstring to `load`."

Like ``transforms.py``, each returns a ``SyntheticEdit`` or None; neither makes snippets.
"""

from __future__ import annotations

import ast
import io
import random
import tokenize

from data.transforms import SyntheticEdit

# (name, default, value passed at the calls)
NEW_PARAMETERS = (("strict", "False", "True"), ("verbose", "False", "True"), ("timeout", "None", "30"),
                  ("retries", "3", "5"), ("dry_run", "False", "True"), ("encoding", '"utf-8"', '"latin-1"'))


def _offsets(text: str) -> list[int]:
    """Character offset of the start of each line (1-based rows, as ast and tokenize count them)."""
    starts, total = [0, 0], 0
    for line in text.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _char_offset(text_lines: list[str], starts: list[int], row: int, byte_col: int) -> int:
    """ast gives UTF-8 byte columns; string slicing needs characters."""
    return starts[row] + len(text_lines[row - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _closing_paren(tokens: list[tokenize.TokenInfo], starts: list[int], after: int) -> int | None:
    """Offset of the ``)`` closing the first ``(`` at or after character offset ``after``."""
    depth = 0
    for tok in tokens:
        offset = starts[tok.start[0]] + tok.start[1]
        if offset < after or tok.type != tokenize.OP:
            continue
        if tok.string in "([{":
            depth += 1
        elif tok.string in ")]}":
            depth -= 1
            if depth == 0:
                return offset
    return None


def _insertion(text: str, close: int, item: str) -> tuple[int, str]:
    """Where and what to insert to append ``item`` to the bracketed list that ``close`` ends."""
    before = text[:close].rstrip()
    if before.endswith("("):
        return close, item
    if before.endswith(","):
        line_start = text.rfind("\n", 0, close) + 1
        if not text[line_start:close].strip():  # one item a line, closing bracket on its own line
            previous = text.rfind("\n", 0, line_start - 1) + 1
            indent = text[previous:line_start][: len(text[previous:line_start]) - len(text[previous:line_start].lstrip())]
            return line_start, f"{indent}{item},\n"
        return len(before), f" {item}"
    return len(before), f", {item}"


def change_signature(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    if language != "python":
        return None
    try:
        module = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return None
    names_in_file = {tok.string for tok in tokens if tok.type == tokenize.NAME}
    lines, starts = text.splitlines(keepends=True), _offsets(text)
    functions = [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.args.kwarg is None and not n.name.startswith("__")]
    rng.shuffle(functions)
    for function in functions[:5]:
        calls = [c for c in ast.walk(module) if isinstance(c, ast.Call) and (
            (isinstance(c.func, ast.Name) and c.func.id == function.name)
            or (isinstance(c.func, ast.Attribute) and c.func.attr == function.name))]
        unused = [p for p in NEW_PARAMETERS if p[0] not in names_in_file]
        if not calls or not unused:
            continue
        name, default, value = rng.choice(unused)
        def_start = _char_offset(lines, starts, function.lineno, function.col_offset)
        name_at = text.find(function.name + "(", def_start)
        close = _closing_paren(tokens, starts, name_at + len(function.name)) if name_at >= 0 else None
        if close is None:
            continue
        edits = [_insertion(text, close, f"{name}={default}")]
        for call in calls:
            end = _char_offset(lines, starts, call.end_lineno, call.end_col_offset) - 1
            edits.append(_insertion(text, end, f"{name}={value}"))
        edited = text
        for offset, piece in sorted(edits, reverse=True):
            edited = edited[:offset] + piece + edited[offset:]
        try:
            ast.parse(edited)
        except SyntaxError:
            continue
        return SyntheticEdit("change_signature", text, edited,
                             f"Add a parameter `{name}={default}` to `{function.name}` and pass "
                             f"`{name}={value}` where it is called.")
    return None


def add_docstring(text: str, language: str, rng: random.Random) -> SyntheticEdit | None:
    if language != "python":
        return None
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    sites = [n for n in ast.walk(module)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(n.body) >= 2
             and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
             and isinstance(n.body[0].value.value, str) and n.body[0].lineno > n.lineno]
    rng.shuffle(sites)
    for node in sites[:5]:
        doc = node.body[0]
        if node.body[1].lineno <= doc.end_lineno:  # another statement on the docstring's line
            continue
        lines = text.splitlines(keepends=True)
        first, last = doc.lineno - 1, doc.end_lineno - 1
        stop = last + 1
        while stop < len(lines) and not lines[stop].strip() and stop < node.body[1].lineno - 1:
            stop += 1  # the blank line after a docstring goes with it
        without = "".join(lines[:first] + lines[stop:])
        try:
            ast.parse(without)
        except SyntaxError:
            continue
        return SyntheticEdit("add_docstring", without, text, f"Add a docstring to `{node.name}`.")
    return None


TRANSFORMS = {"change_signature": change_signature, "add_docstring": add_docstring}
