"""Languages fastapply knows: detection by file extension, comment syntax, tree-sitter parsing.

Grammars come from the per-language packages (``tree-sitter-python`` ...) and are loaded on first use,
so importing this module is cheap. It does not merge, validate or judge edits; it only parses.
"""

from __future__ import annotations

import importlib
import re
import threading
import time
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
def _grammar(name: str):
    import tree_sitter

    lang = get_language(name)
    module = importlib.import_module(lang.grammar_module)
    return tree_sitter.Language(getattr(module, lang.grammar_function)())


_threads = threading.local()


def _parser(name: str):
    """This thread's parser of ``name``: one parser is never used by two threads at once (the server
    merges and guesses languages off its model thread)."""
    import tree_sitter

    parsers = _threads.__dict__.setdefault("parsers", {})
    if name not in parsers:
        parsers[name] = tree_sitter.Parser(_grammar(name))
    return parsers[name]


@lru_cache(maxsize=16)
def parse(text: str, language: str):
    """The tree-sitter tree of ``text`` (read only: a merge asks of one text several times, the merged file's
    definitions, names and errors, and gets the one tree)."""
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


# Languages a file's text can be told by (their grammars reject most text of the others), each with what a
# file of it holds: only those whose words a text holds are parsed (a requirements file is a Swift
# expression, a .proto file C to its grammar). Looser grammars take much code of other languages with no
# error (HTML, Markdown and PHP any text; YAML `key: value` lines, which are Python too; Scala, Kotlin, Ruby
# and Bash many) and are not guessed.
_WORDS = {
    "python": r"^[ \t]*(?:import|from|def|class|async|if|for|while|with|try|return|print)\b",
    "javascript": r"\b(?:function|const|let|var|import|export|require|class|return)\b|=>",
    "typescript": r"\b(?:function|const|let|var|import|export|class|interface|type|return)\b|=>",
    "go": r"^package\s+\w+",
    "rust": r"\b(?:fn|let|use|impl|struct|enum|mod|pub|trait|macro_rules)\b",
    "java": r"\b(?:class|interface|enum|record|package|import)\s+[\w.]+",
    "c": r"^[ \t]*#[ \t]*(?:include|define|if)\b|\b(?:int|void|char|static|struct|typedef|unsigned|return|const)\b",
    "csharp": r"\b(?:using|namespace|class|public|private|internal|static|void)\b",
    "swift": r"\b(?:func|import|let|var|struct|class|enum|protocol|extension)\b",
    "lua": r"\b(?:local|function|end|require|return)\b",
    "json": r"\A\s*[\[{]",
    "toml": r"^[ \t]*(?:\[[^\]\n]+\]|[\w.\"'-]+[ \t]*=)",
    "css": r"[{}]",
}
_WORDS["tsx"] = _WORDS["typescript"]
_WORDS["cpp"] = _WORDS["c"] + r"|\b(?:namespace|template|class|std::)"
# where both parse a text it is the narrower language: C is C++ too, JSON is a JavaScript and a Python value,
# TOML's `[table]` and `key = "value"` lines are Python, JavaScript and Swift
_NARROWER = {"c": ("cpp",), "javascript": ("typescript", "tsx"), "typescript": ("tsx",),
             "json": ("python", "javascript", "typescript", "tsx"),
             "toml": ("python", "javascript", "typescript", "tsx", "swift")}
# languages in which YAML's `key: value` lines are code too (annotations, labels): a text YAML reads as keys
# or items is not told
_YAML_ALIKE = ("python", "javascript", "typescript", "tsx")
GUESS_BUDGET_S = 2.0  # the most that guessing one text's language may take
_GRAMMAR_BUDGET_S = 0.2  # one grammar's parse; longer is error recovery, not a text in that language


def file_language(path: str | PurePath | None, text: str) -> str | None:
    """The language of a file: the one its name's extension names (None for one fastapply does not know);
    a file with no name (``path`` None: stdin, an edit sent over HTTP without one) the one its text tells."""
    return language_for_path(path) if path is not None else guess_language(text)


def guess_language(text: str) -> str | None:
    """The language of ``text``, a file with no name (an edit sent as a chat message), where exactly one of
    the languages that can be told apart, among those whose words it holds (``_WORDS``: ``def``,
    ``package``, ``#include`` ...), parses it with no error once narrower ones are preferred; else None.
    Text opening with ``<`` (markup, JSX alike) is not guessed, nor Python or JavaScript that YAML reads as
    keys or items too (short texts do).

    >>> guess_language("import os\\n\\n\\ndef f():\\n    return os.sep\\n"), guess_language("int main(void) {}\\n")
    ('python', 'c')
    >>> guess_language("name: demo\\nversion: 2\\n"), guess_language("let x: number = 1;\\n")  # YAML; also Rust, Swift
    (None, None)
    """
    if not text.strip() or text.lstrip().startswith("<"):
        return None
    deadline = time.perf_counter() + GUESS_BUDGET_S
    worded = [name for name, words in _WORDS.items() if re.search(words, text, re.MULTILINE)]  # cheaper than a parse
    clean = {name for name in worded if _clean_tree(text, name, deadline) is not None}
    if time.perf_counter() > deadline:
        return None  # a grammar may not have been tried
    for narrow, wider in _NARROWER.items():
        if narrow in clean:
            clean -= set(wider)
    if len(clean) != 1:
        return None
    found = clean.pop()
    if found in _YAML_ALIKE and _yaml_alike(text, deadline):
        return None
    return found


def _clean_tree(text: str, language: str, deadline: float):
    """``language``'s tree of ``text`` where it has no error and was parsed within its share of the time
    left, else None: a grammar still recovering from errors when the time is up does not parse it."""
    data = text.encode("utf-8")
    stop = min(deadline, time.perf_counter() + _GRAMMAR_BUDGET_S)
    parser = _parser(language)
    try:
        tree = parser.parse(lambda byte, point: data[byte:byte + 65536],
                            progress_callback=lambda *state: time.perf_counter() > stop)
    except ValueError:  # cancelled: the next parse must not resume this one
        parser.reset()
        return None
    return None if tree.root_node.has_error else tree


def _yaml_alike(text: str, deadline: float) -> bool:
    """Whether YAML reads ``text`` as keys or items (not as one long plain string, which most code is)."""
    tree = _clean_tree(text, "yaml", deadline)
    return tree is not None and any(node.type == "block_node" for document in tree.root_node.children
                                    for node in document.children)


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
