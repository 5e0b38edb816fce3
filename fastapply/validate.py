"""Checks on a rewritten file before anything is written (DESIGN.md §8).

``validate(original, output, update, language, closed, instruction)`` names every problem it finds: lazy
markers left in the output that the original did not have, a truncated answer (no closing tag, or a file
that ends in the middle of a construct), more syntax errors than the original, deletions that the edit
(its snippet or instruction) did not ask for (far from every place the edit touches, or of lines a lazy
marker of the snippet keeps: ``deletions.py`` finds them; lines an instruction alone does not ask to
delete: ``asks.py``), an edit not applied (the original written back unchanged, new lines of the update left
out: a small model's commonest failure, or what an instruction plainly asks left undone), and changes the
update does not show (lines written that the snippet has nowhere, though the original may have them
elsewhere, or original lines kept beside an update with no marker that matches no part of the file: the
whole new file). It judges; it does not fix, write or decide what the caller does with the problems (the
CLI refuses to write unless ``--force``).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

from fastapply.asks import read, unasked_deletions, undone
from fastapply.deletions import marker_deletions, part_taken_whole, unrelated_deletions
from fastapply.markers import count_markers, has_inline_marker, is_marker_text, marker_lines
from fastapply.merge import MergeResult, merge
from fastapply.segments import is_trivial
from fastapply.syntax import count_errors, parse

# A sentence, not code: a capitalised word, two more words, a full stop; no code punctuation.
_PROSE = re.compile(r"[A-Z][a-z]+(?: +[^\s=;{}]+){2,}[.!?]")


@dataclass(frozen=True)
class Problem:
    # "markers-left" | "truncated" | "syntax-errors" | "unrelated-deletion" | "edit-not-applied" | "unasked-change"
    name: str
    message: str  # one line for the user


def validate(original: str, output: str, update: str, language: str | None, closed: bool = True,
             instruction: str = "", merged: MergeResult | None = None) -> tuple[Problem, ...]:
    """The problems with ``output`` as the new version of ``original`` after ``update`` (all LF text).

    ``closed`` is False when the model's answer stopped before its closing tag (or EOS); ``instruction``
    is the edit's instruction, which may ask for a deletion the snippet does not show; ``merged`` is the
    merge engine's answer for this edit when the caller has it already (it is merged here otherwise).
    """
    problems: list[Problem] = []
    left = count_markers(output, language) - count_markers(original, language)
    if left > 0:
        problems.append(Problem("markers-left", f"the output still has {left} lazy marker(s) such as "
                                                f"'... existing code ...' that the original did not have"))
    if not closed:
        problems.append(Problem("truncated", "the model's answer was cut off: it stopped before its end (no closing tag)"))
    elif language is not None and _ends_mid_construct(output, language) and not _ends_mid_construct(original,
                                                                                                       language):
        problems.append(Problem("truncated", "the output ends in the middle of a construct; it looks cut off"))
    if language is not None:
        before, after = count_errors(original, language), count_errors(output, language)
        if after > before:
            problems.append(Problem("syntax-errors", f"the output has {after} syntax error(s), the original {before}"))
    # A certain merge equal to the output asked for each of its deletions. A 'likely' one vouches for
    # nothing: a model drafting from a wrong one may write it as it is (celery ``couchdb.py``: two
    # functions joined, 21 lines between them deleted).
    merged = merged or merge(original, update, language)
    if not (merged.confidence == "certain" and merged.text == output):
        far = unrelated_deletions(original, output, update, language, instruction)
        kept = [] if far else marker_deletions(original, output, update, language, instruction)
        alone = [] if far or kept else part_taken_whole(original, output, update, language, instruction)
        if alone:
            span = f"lines {alone[0] + 1}-{alone[-1] + 1}"
            problems.append(Problem("unrelated-deletion", f"the update has no lazy markers but is a part of the file "
                                                          f"(it starts indented, or lines of the file it does not "
                                                          f"show lie before or after it), and the output is the "
                                                          f"update alone: it deletes {len(alone)} original line(s) "
                                                          f"the update does not show ({span})"))
        if far or kept:
            lines, where = far or kept, "far from the edit" if far else "that a lazy marker of the update keeps"
            problems.append(Problem("unrelated-deletion", f"the output deletes {len(lines)} original line(s) {where} "
                                                          f"(lines {lines[0] + 1}-{lines[-1] + 1})"))
    not_applied = edit_not_applied(original, output, update, language, instruction)
    if instruction.strip():
        asks = read(instruction, original, language)
        not_applied = not_applied or undone(original, output, asks, language)
        if language is not None and not snippet_code(update, language):
            lines, names = unasked_deletions(original, output, instruction, asks, language)
            if lines:
                problems.append(Problem("unrelated-deletion", f"the output deletes {len(lines)} original line(s) the "
                                                              f"instruction does not ask to delete (lines {lines[0] + 1}-"
                                                              f"{lines[-1] + 1})"))
            elif names:
                problems.append(Problem("unrelated-deletion", f"the output deletes {', '.join(f'`{n}`' for n in names[:3])}"
                                                              f"{' and more' if len(names) > 3 else ''}, which the "
                                                              f"instruction does not name"))
    if not_applied:
        problems.append(Problem("edit-not-applied", not_applied))
    unasked = None if instruction.strip() else unasked_change(original, output, update, language, merged)
    if unasked:
        problems.append(Problem("unasked-change", unasked))
    return tuple(problems)


def unasked_change(original: str, output: str, update: str, language: str | None, merged: MergeResult) -> str | None:
    """What ``output`` writes that an edit with no instruction did not ask for, or None: lines the update
    does not show, original lines kept beside an update that is the whole new file, or lines copied."""
    if unshown := unshown_lines(original, output, update, language):
        return (f"the output writes {len(unshown)} line(s) the update does not show, such as {unshown[0][:60]!r}: "
                f"a change the edit did not ask for")
    if kept := kept_beside_whole_file(original, output, update, language, merged):
        return (f"the update has no lazy markers and matches no part of the original, so it reads as the whole "
                f"new file, but the output keeps {len(kept)} original line(s) it does not show, such as "
                f"{kept[0][:60]!r}")
    if repeated := written_too_often(original, output, update, language):
        return (f"the output writes {len(repeated)} line(s) more often than the original and the update hold "
                f"them, such as {repeated[0][:60]!r}: a copy the edit did not ask for")
    return None


def snippet_code(update: str, language: str | None) -> list[str]:
    """The update's lines of code, stripped: blank lines, lazy markers, lines carrying an inline marker
    and sentences of prose ("Remove the save function.") are left out.

    >>> snippet_code("# ... existing code ...\\nb = 2\\n\\nc = 3\\n", "python")
    ['b = 2', 'c = 3']
    """
    lines = update.split("\n")
    return [line.strip() for line, marker in zip(lines, marker_lines(lines, language))
            if line.strip() and not marker and not has_inline_marker(line) and not _PROSE.fullmatch(line.strip())]


def edit_not_applied(original: str, output: str, update: str, language: str | None,
                     instruction: str = "") -> str | None:
    """Why ``output`` does not apply ``update``, or None: it is the original unchanged although the
    update adds code or an ``instruction`` asks for a change (as ``engine.unsettled`` has it for a
    merge), it leaves out lines the update adds, or it leaves out lines of the original that the update
    shows as kept (its context: a snippet's lines are the new file's lines). An update that shares no
    line with the original or the output and has no marker reads as prose (an instruction): only the
    first check applies to it.

    >>> edit_not_applied("a = 1\\n", "a = 1\\n", "a = 1\\nb = 2\\n", "python")
    'the output is the original unchanged, but the update adds code'
    >>> edit_not_applied("a = 1\\n", "a = 1\\n", "# ...\\n", "python", "Delete a.")
    'the output is the original unchanged, but the instruction asks for a change'
    >>> edit_not_applied("a = 1\\nb = 2\\n", "c = 3\\n", "# ...\\nb = 2\\nc = 3\\n", "python")[:54]
    'the output leaves out 1 line(s) the update keeps, such'
    """
    code = snippet_code(update, language)
    old = {line.strip() for line in original.split("\n") if line.strip()}
    added = [line for line in code if line not in old]  # the code the edit adds
    if added and output == original:
        return "the output is the original unchanged, but the update adds code"
    if instruction.strip() and output == original:
        return "the output is the original unchanged, but the instruction asks for a change"
    written = {line.strip() for line in output.split("\n")}
    if reads_as_prose(update, old | written, language):
        return None
    missing = [line for line in added if line not in written]
    if missing:
        return (f"the output leaves out {len(missing)} new line(s) of the update, "
                f"such as {missing[0][:60]!r}: the edit is not applied")
    dropped = [line for line in code if line in old and line not in written]
    if dropped:
        return (f"the output leaves out {len(dropped)} line(s) the update keeps, "
                f"such as {dropped[0][:60]!r}: the edit is not applied as shown")
    return None


def unshown_lines(original: str, output: str, update: str, language: str | None) -> list[str]:
    """The lines ``output`` writes in place of (or between) original lines that the update does not show
    anywhere, stripped, blank lines and lazy markers aside. A snippet's lines are the new file's lines,
    so such a line is a change nobody asked for, even when the original has it elsewhere (redis
    ``test_data_structure.py``: an assert 20 lines below the edit rewritten into a list built from other
    tests' lines). No known answer of the suite or ``data/train`` writes one. An update that reads as
    prose shows no lines: none.

    >>> unshown_lines("a = 1\\nb = 2\\n", "a = 1\\nb = 3\\n", "# ...\\nb = 3\\n", "python")
    []
    >>> unshown_lines("a = 1\\nb = 2\\n", "a = 5\\nb = 3\\n", "# ...\\nb = 3\\n", "python")
    ['a = 5']
    """
    old, new = original.split("\n"), output.split("\n")
    if reads_as_prose(update, {line.strip() for line in old + new}, language):
        return []
    shown = {line.strip() for line in update.split("\n")} | {""}
    marker = marker_lines(new, language)  # a marker left is markers-left's problem
    written = (j for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
               if tag in ("replace", "insert") for j in range(j1, j2) if not marker[j])
    return [line for line in (new[j].strip() for j in written) if line not in shown]


def kept_beside_whole_file(original: str, output: str, update: str, language: str | None,
                           merged: MergeResult) -> list[str]:
    """The original lines ``output`` keeps, stripped, that an update with no lazy marker does not show,
    when the merge engine (``merged``) places that update nowhere in the original. Such an update reads
    as the whole new file: the snippet builder writes one only when it shows every line of the edited
    file, and each of the suite's eight is its expected answer (d3-selection ``sourceEvent.js``: a model
    kept the import that the new file drops). An update the merge engine places (new versions of some
    definitions) keeps the rest of the file; one that reads as prose shows no lines: none.

    >>> from fastapply.merge import merge
    >>> old = 'import {e} from "./on";\\n\\nexport default function() {\\n  return e;\\n}\\n'
    >>> update = "export default function(e) {\\n  return e.x;\\n}\\n"
    >>> merged = merge(old, update, "javascript")
    >>> kept_beside_whole_file(old, 'import {e} from "./on";\\n\\n' + update, update, "javascript", merged)
    ['import {e} from "./on";']
    """
    if count_markers(update, language) or merged.confidence != "none":
        return []
    old, new = original.split("\n"), output.split("\n")
    if reads_as_prose(update, {line.strip() for line in old + new}, language):
        return []
    shown = {line.strip() for line in update.split("\n")} | {""}
    original_lines = {line.strip() for line in old}
    return [line for line in (line.strip() for line in new) if line not in shown and line in original_lines]


def written_too_often(original: str, output: str, update: str, language: str | None) -> list[str]:
    """The lines of ``output``, stripped, written more times than the original and the update hold them
    together (lines too common to count, such as lone brackets, and lazy markers, markers-left's
    problem, aside): a copy nothing asked for. An edit writes each new line as often as the snippet
    shows it and keeps each original line at most once, so no known answer of the suite, ``data/train``
    or 16,270 real release edits does this (with no instruction, which may ask for a line in many
    places). A small model does: jiter ``tests/python.rs``
    wrote the snippet's new block twice and dropped the four tests a marker kept between the copies'
    closing brace (a line too common to pin a marker down) and the next test.

    >>> written_too_often("a = 1\\nb = 2\\n", "a = 1\\nc = 3\\nc = 3\\nb = 2\\n", "a = 1\\nc = 3\\n# ...\\n", "python")
    ['c = 3']
    """
    held = held_lines(original, update)
    new = output.split("\n")
    written = Counter(line.strip() for line, marker in zip(new, marker_lines(new, language)) if not marker)
    return [line for line, n in written.items() if n > held[line] and not is_trivial(line)]


def held_lines(original: str, update: str) -> Counter[str]:
    """How many times the original and the update together hold each line, stripped."""
    held = Counter(line.strip() for line in original.split("\n"))
    held.update(line.strip() for line in update.split("\n"))
    return held


class RefusalWatch:
    """Watches a model's output while it is written for a problem the finished output is sure to have,
    so that an answer which will be refused is stopped at once, not written to the end of its budget (a
    small model that loops writes thousands of tokens first: tabulate ``test_internal.py``, 47 lines,
    5,161 tokens). ``lines(...)`` takes the output's complete lines in order and returns that problem, or
    None while there is none.

    Two of ``unasked_change``'s reasons only grow with the output, so a line that shows one now shows it
    in any output that goes on from here: a line that is in neither the original nor the update
    (``unshown_lines``: a line the original lacks can only be written in place of, or between, original
    lines; once the update is known not to read as prose), and a line written more often than the
    original and the update hold it (``written_too_often``). Lines that may be lazy markers are left to
    the finished output's check (a Python ``...`` is one or not by the line after it), as are lines
    holding a character the decoder could not read. An edit with an instruction may ask for any line
    (``unasked_change`` does not apply to it): such a watch never finds one.

    >>> watch = RefusalWatch("a = 1\\nb = 2\\n", "# ...\\nb = 3\\n", "python")
    >>> watch.lines(["a = 1"]) is None, watch.lines(["b = 4"]).name
    (True, 'unasked-change')
    """

    def __init__(self, original: str, update: str, language: str | None, instruction: str = ""):
        self.problem: Problem | None = None
        self._active = not instruction.strip()
        old = original.split("\n")
        self._old = set(old)
        shown = {line.strip() for line in update.split("\n")}
        self._shown = shown | {""}
        self._held = held_lines(original, update)
        self._written: Counter[str] = Counter()
        # the update reads as prose when it has no marker and shares no line with the original or the output
        self._code = bool(count_markers(update, language)) or bool((shown - {""}) & {line.strip() for line in old})
        self._unshown: str | None = None  # the first unshown line, held until the update is known to be code

    def lines(self, lines: list[str]) -> Problem | None:
        if self.problem is not None or not self._active:
            return self.problem
        for line in lines:
            stripped = line.strip()
            self._code = self._code or (stripped in self._shown and stripped != "")
            if not stripped or is_marker_text(stripped) or "\ufffd" in line:
                continue
            if self._unshown is None and line not in self._old and stripped not in self._shown:
                self._unshown = stripped
            self._written[stripped] += 1
            if self._written[stripped] > self._held[stripped] and not is_trivial(stripped):
                self.problem = Problem("unasked-change", f"the output writes {stripped[:60]!r} more often than the "
                                                         f"original and the update hold it: a copy the edit did not ask for")
                return self.problem
        if self._unshown is not None and self._code:
            self.problem = Problem("unasked-change", f"the output writes {self._unshown[:60]!r}, a line the update "
                                                     f"does not show: a change the edit did not ask for")
        return self.problem


def reads_as_prose(update: str, file_lines: set[str], language: str | None) -> bool:
    """Whether ``update`` is prose, not a snippet: it has no lazy marker and shares no line with the file
    (``file_lines``: the stripped lines of the original and the output)."""
    shown = {line.strip() for line in update.split("\n") if line.strip()}
    return not (shown & file_lines) and not count_markers(update, language)


def _ends_mid_construct(text: str, language: str) -> bool:
    """Whether tree-sitter finds an error or a missing token in the text's last non-blank line."""
    if not text.strip():
        return False
    if language == "python" and text.rstrip().split("\n")[-1].split("#")[0].rstrip().endswith((":", ",", "(", "[",
                                                                                                  "{", "\\")):
        return True  # tree-sitter accepts an empty block; Python does not
    tree = parse(text, language)
    if not tree.root_node.has_error:
        return False
    last_row = len(text.rstrip().split("\n")) - 1
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if (node.is_error or node.is_missing) and node.end_point.row >= last_row:
            return True
        stack.extend(child for child in node.children if child.has_error or child.is_missing)
    return False
