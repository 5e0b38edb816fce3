"""Languages fastapply knows: detection by file extension, comment syntax, tree-sitter parsing.

Grammars come from the per-language packages (``tree-sitter-python`` ...) and are loaded on first use,
so importing this module is cheap. It does not merge, validate or judge edits; it only parses.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePath

from fastapply.errors import UsageError


@dataclass(frozen=True)
class Language:
    name: str
    extensions: tuple[str, ...]
    line_comment: str | None  # "#", "//" ...; None when the language only has block comments
    block_comment: tuple[str, str] | None  # ("/*", "*/") ...
    grammar_module: str  # the tree-sitter grammar package's module
    grammar_function: str = "language"  # the function in it that returns the grammar


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in [
        Language("python", (".py", ".pyi"), "#", None, "tree_sitter_python"),
        Language("javascript", (".js", ".mjs", ".cjs", ".jsx"), "//", ("/*", "*/"), "tree_sitter_javascript"),
        Language("typescript", (".ts", ".mts", ".cts"), "//", ("/*", "*/"), "tree_sitter_typescript",
                 "language_typescript"),
        Language("tsx", (".tsx",), "//", ("/*", "*/"), "tree_sitter_typescript", "language_tsx"),
        Language("go", (".go",), "//", ("/*", "*/"), "tree_sitter_go"),
        Language("rust", (".rs",), "//", ("/*", "*/"), "tree_sitter_rust"),
        Language("java", (".java",), "//", ("/*", "*/"), "tree_sitter_java"),
        Language("c", (".c", ".h"), "//", ("/*", "*/"), "tree_sitter_c"),
        Language("cpp", (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"), "//", ("/*", "*/"), "tree_sitter_cpp"),
        Language("ruby", (".rb",), "#", None, "tree_sitter_ruby"),
        Language("csharp", (".cs",), "//", ("/*", "*/"), "tree_sitter_c_sharp"),
        Language("kotlin", (".kt", ".kts"), "//", ("/*", "*/"), "tree_sitter_kotlin"),
        Language("swift", (".swift",), "//", ("/*", "*/"), "tree_sitter_swift"),
        Language("scala", (".scala", ".sc"), "//", ("/*", "*/"), "tree_sitter_scala"),
        Language("php", (".php",), "//", ("/*", "*/"), "tree_sitter_php", "language_php"),
        Language("lua", (".lua",), "--", ("--[[", "]]"), "tree_sitter_lua"),
        Language("bash", (".sh", ".bash"), "#", None, "tree_sitter_bash"),
        Language("css", (".css",), None, ("/*", "*/"), "tree_sitter_css"),
        Language("html", (".html", ".htm"), None, ("<!--", "-->"), "tree_sitter_html"),
        Language("markdown", (".md", ".markdown"), None, ("<!--", "-->"), "tree_sitter_markdown"),
        # JSON has no comments, but snippets of it carry ``// ...`` markers, which the grammar accepts
        Language("json", (".json",), "//", ("/*", "*/"), "tree_sitter_json"),
        Language("yaml", (".yaml", ".yml"), "#", None, "tree_sitter_yaml"),
        Language("toml", (".toml",), "#", None, "tree_sitter_toml"),
    ]
}
# The languages of the eval suite and the training data: what ``data/`` builds its tasks from.
SOURCE_LANGUAGES = ("python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby")


def language_for_path(path: str | PurePath, among: Collection[str] | None = None) -> str | None:
    """The language name for a file name by its extension, or None when fastapply does not know it (or
    it is not one of ``among``).

    >>> language_for_path("src/app.tsx"), language_for_path("ci.yml"), language_for_path("ci.yml", SOURCE_LANGUAGES)
    ('tsx', 'yaml', None)
    """
    suffix = PurePath(path).suffix.lower()
    for lang in LANGUAGES.values():
        if suffix in lang.extensions and (among is None or lang.name in among):
            return lang.name
    return None


def get_language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise UsageError(f"unknown language {name!r}; known: {', '.join(sorted(LANGUAGES))}") from None


def comment(language: str | None, text: str) -> str:
    """``text`` as a one-line comment in ``language`` (``#`` style when the language is unknown)."""
    if language is None:
        return f"# {text}"
    lang = get_language(language)
    if lang.line_comment:
        return f"{lang.line_comment} {text}"
    assert lang.block_comment is not None
    return f"{lang.block_comment[0]} {text} {lang.block_comment[1]}"


@lru_cache(maxsize=None)
def _parser(name: str):
    import tree_sitter

    lang = get_language(name)
    module = importlib.import_module(lang.grammar_module)
    grammar = tree_sitter.Language(getattr(module, lang.grammar_function)())
    return tree_sitter.Parser(grammar)


def parse(text: str, language: str):
    """The tree-sitter tree of ``text``."""
    return _parser(language).parse(text.encode("utf-8"))


def count_errors(text: str, language: str) -> int:
    """Number of ERROR and MISSING nodes tree-sitter finds in ``text``: 0 for a file that parses cleanly."""
    tree = parse(text, language)
    if not tree.root_node.has_error:
        return 0
    errors = 0
    cursor = tree.walk()
    visited_children = False
    while True:
        node = cursor.node
        if not visited_children:
            if node.is_error or node.is_missing:
                errors += 1
            if node.has_error and cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited_children = False
        elif cursor.goto_parent():
            visited_children = True
        else:
            return errors


def python_parses(text: str) -> bool:
    """Whether Python's own parser takes ``text``: stricter than tree-sitter, which allows an empty class
    body (``class A:`` with nothing under it).

    >>> python_parses("class A:\\n    pass\\n"), python_parses("class A:\\n")
    (True, False)
    """
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True
