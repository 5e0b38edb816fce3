"""Named definitions in a source file (functions, methods, classes...) found with tree-sitter.

The merge engine anchors snippet code on them when lines alone do not: ``def foo`` in the snippet
replaces the one ``def foo`` of the same kind in the same place of the original. A definition is
known by its kind (the tree-sitter node type, e.g. ``function_definition``), its name and the names of
the definitions around it (``("A",)`` for a method of class ``A``). Its line range includes decorators,
``export`` and the comments directly above it. This module only finds definitions; it edits nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapply.syntax import parse

# Node types that define something named, per grammar (the union is harmless: names are per grammar).
_DEFINITIONS = {
    "function_definition", "class_definition",  # python, c, cpp
    "function_declaration", "generator_function_declaration", "class_declaration",
    "abstract_class_declaration", "method_definition", "interface_declaration", "type_alias_declaration",
    "enum_declaration",  # javascript / typescript (+ java, go)
    "method_declaration", "type_declaration",  # go, java
    "constructor_declaration", "record_declaration", "annotation_type_declaration",  # java
    "function_item", "struct_item", "enum_item", "impl_item", "trait_item", "mod_item",  # rust
    "struct_specifier", "class_specifier", "namespace_definition", "union_specifier",  # c, cpp
    "method", "singleton_method", "class", "module",  # ruby
}
# Definitions that hold other definitions (classes, modules...), as opposed to functions.
CONTAINERS = {
    "class_definition", "class_declaration", "abstract_class_declaration", "interface_declaration",
    "enum_declaration", "record_declaration", "impl_item", "trait_item", "mod_item", "struct_specifier",
    "class_specifier", "namespace_definition", "union_specifier", "class", "module", "type_declaration",
    "struct_item", "enum_item",
}
# Wrappers whose range belongs to the definition inside them.
_WRAPPERS = {"decorated_definition", "export_statement", "template_declaration"}
_COMMENTS = {"comment", "line_comment", "block_comment"}
_NAME_LEAVES = {"identifier", "field_identifier", "qualified_identifier", "operator_name", "destructor_name",
                "type_identifier"}


@dataclass(frozen=True)
class Definition:
    kind: str  # tree-sitter node type of the definition itself (not of its wrapper)
    name: str
    scope: tuple[str, ...]  # names of the enclosing definitions, outermost first
    start: int  # first line (0-based), decorators and the comments directly above included
    end: int  # one past the last line
    header: int  # the line where the definition itself starts (after decorators and comments)
    signed: int  # one past its signature's last line (the line of its body's `{` included)


def definitions(text: str, language: str) -> list[Definition]:
    """Every named definition in ``text``, in file order, nested ones included."""
    root = parse(text, language).root_node
    found: list[Definition] = []
    _collect(root, (), found)
    found.sort(key=lambda d: (d.start, -d.end))
    return found


def _collect(node, scope: tuple[str, ...], found: list[Definition]) -> None:
    children = node.named_children
    for index, child in enumerate(children):
        inner = _unwrap(child)
        name = _name(inner) if inner is not None else None
        if inner is None or name is None:
            _collect(child, scope, found)
            continue
        start = child.start_point.row
        before = index - 1
        while before >= 0 and children[before].type in _COMMENTS and children[before].end_point.row == start - 1:
            start = children[before].start_point.row
            before -= 1
        end = child.end_point.row + (1 if child.end_point.column > 0 or child.end_point.row == child.start_point.row
                                     else 0)
        found.append(Definition(inner.type, name, scope, start, max(end, start + 1), inner.start_point.row,
                                _signed(inner)))
        _collect(inner, scope + (name,), found)


def _signed(node) -> int:
    """One past the last line of a definition's signature: up to its body's `{`, or the line above a body
    that starts with its first statement (Python's)."""
    body = node.child_by_field_name("body")
    if body is None:
        return node.start_point.row + 1
    first = body.named_children[0] if body.named_children else None
    starts_with_it = first is not None and first.start_point == body.start_point
    return max(body.start_point.row + (0 if starts_with_it else 1), node.start_point.row + 1)


def _unwrap(node):
    while node.type in _WRAPPERS:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            inner = next((c for c in node.named_children if c.type in _DEFINITIONS or c.type in _WRAPPERS), None)
        if inner is None:
            return None
        node = inner
    if node.type in _DEFINITIONS:
        return node
    if node.type in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) == 1:
            value = declarators[0].child_by_field_name("value")
            if value is not None and value.type in ("arrow_function", "function_expression", "function",
                                                     "class", "class_expression"):
                return node
    return None


def _name(node) -> str | None:
    if node.type in ("lexical_declaration", "variable_declaration"):
        declarator = next(c for c in node.named_children if c.type == "variable_declarator")
        return _text(declarator.child_by_field_name("name"))
    if node.type == "impl_item":
        kind, trait = node.child_by_field_name("type"), node.child_by_field_name("trait")
        return f"impl {_text(trait)} for {_text(kind)}" if trait is not None else f"impl {_text(kind)}"
    if node.type == "type_declaration":
        spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
        return _text(spec.child_by_field_name("name")) if spec is not None else None
    if node.type == "method_declaration" and node.child_by_field_name("receiver") is not None:
        receiver = node.child_by_field_name("receiver")
        kind = receiver.named_children[0].child_by_field_name("type") if receiver.named_children else None
        return f"({_text(kind).lstrip('*')}).{_text(node.child_by_field_name('name'))}"
    if node.type == "singleton_method":
        return f"self.{_text(node.child_by_field_name('name'))}"
    if node.type in ("struct_specifier", "union_specifier", "class_specifier") and node.child_by_field_name(
            "body") is None:
        return None  # a use of the type, not its definition
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in _NAME_LEAVES:
        declarator = declarator.child_by_field_name("declarator")
    return _text(declarator) if declarator is not None else None


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else "?"
