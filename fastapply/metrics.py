"""How good and how fast one apply result is: accuracy against the reference file, speed against baselines.

Accuracy, from the strictest: exact match; match ignoring trailing whitespace (at line ends and at the
end of the file); the same syntax tree (tree-sitter, comments kept: node types, and the text of every
leaf, in order). A result that matches none of these is put in one or more error categories (see
``ERROR_CATEGORIES``). Speed: ``speedups`` compares the policies run on one task. This module scores
results it is given; it does not run engines, judge with a model or write reports.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from fastapply.markers import count_markers
from fastapply.syntax import LANGUAGES, count_errors, parse

NO_OUTPUT = "no output"  # nothing came back: the engine refused, failed, or wrote an empty answer
TRUNCATED = "truncated"  # the answer was cut off before its closing tag
MARKERS_LEFT = "markers left"  # more lazy-marker comments than the reference file has
SYNTAX_ERROR = "syntax error"  # more tree-sitter errors than the reference file has
OUTSIDE_EDIT = "change outside the edit"  # lines changed where the reference changes nothing
NOT_APPLIED = "edit not applied"  # the original written back, or none of the lines the reference adds
WRONG_EDIT = "wrong edit"  # none of the above, yet not the reference: the edited region itself differs
ERROR_CATEGORIES = (NO_OUTPUT, TRUNCATED, MARKERS_LEFT, SYNTAX_ERROR, OUTSIDE_EDIT, NOT_APPLIED, WRONG_EDIT)


@dataclass(frozen=True)
class Accuracy:
    exact: bool
    exact_ws: bool  # equal once trailing whitespace is ignored
    tree_equal: bool | None  # None when tree-sitter does not know the language
    errors: tuple[str, ...]  # from ERROR_CATEGORIES; empty when one of the three matches holds

    @property
    def correct(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict:
        return asdict(self) | {"errors": list(self.errors)}


def score(output: str | None, expected: str, original: str, language: str | None, closed: bool = True) -> Accuracy:
    """Score ``output`` (None when the engine gave nothing) against ``expected``, the edit of ``original``.

    >>> score("x = 1\\n", "x = 1\\n", "x = 0\\n", "python").exact
    True
    >>> score("x  =  1\\n", "x = 1\\n", "x = 0\\n", "python").tree_equal
    True
    """
    known = language in LANGUAGES
    if output is None or (not output and expected):
        return Accuracy(False, False, False if known else None, (NO_OUTPUT,))
    exact = output == expected
    exact_ws = exact or _strip_trailing(output) == _strip_trailing(expected)
    tree_equal = (exact_ws or same_tree(output, expected, language)) if known else None
    if exact_ws or tree_equal:
        return Accuracy(exact, exact_ws, tree_equal, ())
    errors = []
    if not closed:
        errors.append(TRUNCATED)
    if count_markers(output, language) > count_markers(expected, language):
        errors.append(MARKERS_LEFT)
    if known and count_errors(output, language) > count_errors(expected, language):
        errors.append(SYNTAX_ERROR)
    if changes_outside_edit(original, output, expected):
        errors.append(OUTSIDE_EDIT)
    if not_applied(original, output, expected):
        errors.append(NOT_APPLIED)
    return Accuracy(exact, exact_ws, tree_equal, tuple(errors) or (WRONG_EDIT,))


def _strip_trailing(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def tree_signature(text: str, language: str) -> list[tuple[str, str | int]]:
    """The tree in preorder: (type, number of children) for inner nodes, (type, text) for leaves.

    Whitespace between tokens is not in it; comments are (they are leaves), and so is every literal.
    """
    cursor = parse(text, language).walk()
    signature: list[tuple[str, str | int]] = []
    while True:
        node = cursor.node
        if node.child_count:
            signature.append((node.type, node.child_count))
            cursor.goto_first_child()
            continue
        signature.append((node.type, node.text.decode("utf-8", "replace")))
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return signature


def same_tree(a: str, b: str, language: str) -> bool:
    return tree_signature(a, language) == tree_signature(b, language)


def changed_ranges(original: str, other: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of ``original`` that ``other`` replaces or deletes; an insertion is an
    empty range at the line it goes before.

    >>> changed_ranges("a\\nb\\nc\\n", "a\\nB\\nc\\nd\\n")
    [(1, 2), (3, 3)]
    """
    matcher = difflib.SequenceMatcher(a=original.splitlines(), b=other.splitlines(), autojunk=False)
    return [(i1, i2) for tag, i1, i2, _j1, _j2 in matcher.get_opcodes() if tag != "equal"]


def not_applied(original: str, output: str, expected: str) -> bool:
    """Whether ``output`` leaves the edit out: it is the original although the reference differs, or the
    reference adds lines, the output has none of them and changes nothing where the reference does.

    >>> not_applied("a\\n", "a\\n", "a\\nb\\n"), not_applied("a\\n", "a\\nb\\n", "a\\nb\\nc\\n")
    (True, False)
    """
    if output == original:
        return expected != original
    old = {line.strip() for line in original.splitlines()}
    added = {line.strip() for line in expected.splitlines() if line.strip() and line.strip() not in old}
    if not added or added & {line.strip() for line in output.splitlines()}:
        return False
    reference = changed_ranges(original, expected)
    return not any(start <= ref_end and ref_start <= end for ref_start, ref_end in reference
                   for start, end in changed_ranges(original, output))


def changes_outside_edit(original: str, output: str, expected: str) -> bool:
    """Whether ``output`` changes ``original`` anywhere that ``expected`` leaves alone: a changed range
    of the output that neither overlaps nor touches any changed range of the reference."""
    reference = changed_ranges(original, expected)
    return any(not any(start <= ref_end and ref_start <= end for ref_start, ref_end in reference)
               for start, end in changed_ranges(original, output))


# -- speed ------------------------------------------------------------------------------------------

PLAIN_BASELINES = ("plain", "none")  # plain decoding: model.generate, else fastapply's loop drafting nothing
LOOKUP_BASELINES = ("prompt-lookup", "pld")  # prompt lookup: transformers' generate, else its rule in the loop


def speedups(speed_by_policy: Mapping[str, Mapping[str, float]], unit: str = "seconds") -> dict[str, dict]:
    """For each policy run on one task, how many times fewer ``unit`` (seconds, or passes with the
    replay target) it took than plain decoding and than prompt lookup, when those ran; else None.

    >>> speedups({"none": {"passes": 100}, "pld": {"passes": 50}, "fastapply": {"passes": 10}}, "passes")["fastapply"]
    {'plain': 10.0, 'prompt_lookup': 5.0}
    """
    def base(names: Iterable[str]) -> float | None:
        for name in names:
            if name in speed_by_policy and speed_by_policy[name].get(unit):
                return float(speed_by_policy[name][unit])
        return None

    plain, lookup = base(PLAIN_BASELINES), base(LOOKUP_BASELINES)
    out = {}
    for policy, speed in speed_by_policy.items():
        mine = speed.get(unit)
        out[policy] = {
            "plain": round(plain / mine, 4) if plain and mine else None,
            "prompt_lookup": round(lookup / mine, 4) if lookup and mine else None,
        }
    return out


def geomean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def median(values: Iterable[float]) -> float | None:
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
