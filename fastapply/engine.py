"""How one edit is applied: the merge engine alone, the model, or the model drafting from the merge.

``resolve_edit`` picks by engine name (DESIGN.md §6): ``merge`` returns only a certain merge;
``auto`` returns a certain merge when no model is configured, or when ``merge_first`` (the default
model, fastapply-small, is less exact than a certain merge), unless an instruction asks for more than
the merge does (``unsettled``), and otherwise runs the model with the merge (certain or likely)
as its first draft source; ``model`` runs the model drafting from the original file. An edit that is an
instruction alone ("delete the function save": words, no marker, no line of the file, not code) is shown
to the model as its instruction with no snippet; where its words ask only for plain changes (a
definition deleted, a name renamed, an import added, a comment removed), ``instructed.py`` applies it
and its answer stands in for the merge's, as it is applied to a certain merge of a snippet beside
it (``merge_edit``). An edit written as a diff (read by ``diffs.py``) is placed line for line where
it places itself (``patch.py``), and otherwise read, merged and shown to the model as the snippet it
amounts to. The model
rewrites only the top-level statements around the lines the merge placed the update in (``focus.py``)
unless ``focus`` is off; its answer is put back into the file. Model output is
validated (``validate.py``) and refused unless ``force``; a refusal is an ``EditRefused`` that carries
what was refused (the merge's answer, the model's run, the problems), so a server or a batch can
report it. It reads and writes no files and prints nothing; the model run is
passed in, so this module imports no model code. Every path that writes model output goes through it:
``fastapply apply``, ``fastapply batch`` and the server's ``/v1/apply``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

from fastapply.answer import answer_edit, deletes_in_use, edge_marked
from fastapply.asks import read, undone
from fastapply.errors import RefusedError, UsageError
from fastapply.fileio import TextFormat, as_lf
from fastapply.focus import focus as focus_of
from fastapply.indentation import in_file_indentation, indented_as
from fastapply.instructed import apply as apply_instruction
from fastapply.lost import TAIL_WIRED
from fastapply.markers import only_markers
from fastapply.numbered import unnumbered
from fastapply.merge import CERTAIN, LIKELY, MergeResult, merge
from fastapply.diffs import Patch, read_patch
from fastapply.patch import apply_patch, as_update
from fastapply.syntax import count_errors
from fastapply.toolcall import call_edit
from fastapply.validate import Problem, RefusalWatch, reads_as_prose, validate

ENGINES = ("auto", "merge", "model")


@dataclass(frozen=True)
class ModelRun:
    """What a model run (local or on a server) gave: the new file, whether the answer ended, its stats."""

    text: str
    closed: bool
    stats: dict  # DecodeStats.as_dict(), or a server's usage figures
    stopped: Problem | None = None  # the problem its RefusalWatch found, for which it stopped early

    @classmethod
    def of(cls, result) -> ModelRun:
        """The run of a local model: ``apply.apply_edit``'s ApplyResult."""
        return cls(result.text, result.closed, result.stats.as_dict(), result.stopped)


@dataclass(frozen=True)
class EditOutcome:
    text: str  # the new file, LF text
    engine: str  # what produced it: "merge" or "model"
    merge: MergeResult | None  # the merge engine's answer, when it was asked
    problems: tuple[Problem, ...] = ()  # validation problems written anyway (only with force)
    model_run: ModelRun | None = None  # the model's run; None for a merge alone
    final_newline: bool | None = None  # what a diff says of the new file's last line ("\ No newline at end of
    # file"); None where the edit says nothing

    def format(self, fmt: TextFormat | None) -> TextFormat:
        """The format to write the new file in: the original's (``fmt``) with the final newline a diff
        gives it; a file created (``fmt`` None) as its text ends."""
        if fmt is None:
            return TextFormat(final_newline=self.text.endswith("\n") or not self.text)
        return fmt if self.final_newline is None else replace(fmt, final_newline=self.final_newline)


class EditRefused(RefusedError):
    """An edit refused as unsafe, with what was refused: an uncertain merge, or model output that failed
    validation (its ``problems``, and the ``model_run`` whose output it was)."""

    def __init__(self, message: str, reasons: tuple[str, ...], merge: MergeResult | None,
                 problems: tuple[Problem, ...] = (), model_run: ModelRun | None = None):
        super().__init__(message, reasons)
        self.merge = merge
        self.problems = problems
        self.model_run = model_run


RunModel = Callable[[str, str, str, str | None, RefusalWatch | None], ModelRun]


def resolve_edit(original: str, update: str, language: str | None, engine: str = "auto",
                 run_model: RunModel | None = None, force: bool = False, instruction: str = "",
                 merge_first: bool = False, focus: bool = True, path: str | None = None) -> EditOutcome:
    """Apply ``update`` to ``original`` with ``engine``; ``run_model(shown, update, instruction, merged,
    watch)`` runs the model on ``shown`` (the file, or the window of it that ``focus`` cuts) and the edit
    as the model is to read it (an edit that ``reads_as_instruction`` is its instruction, with no update),
    with an optional merged candidate of it as its draft and an optional ``RefusalWatch`` (None when no
    model is configured). With ``merge_first``, ``auto`` returns a certain merge without running the
    model. ``path``: the file's, which a chat model's answer may name among others (``answer.py``)."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    if not update.strip() and not instruction.strip():
        raise UsageError("the edit is empty: give an update snippet, an instruction, or both")
    reading = read_edit(original, update, language, instruction, path)
    update, instruction, patch = reading.update, reading.instruction, reading.patch
    if patch is None and not instruction.strip() and only_markers(update, language):
        literal = " (it holds a literal \\n: give the edit real line breaks, e.g. with --edit-file)" \
            if "\\n" in update else ""
        raise UsageError(f"the edit is lazy markers alone ('... existing code ...'), with no code to apply{literal}")
    watch = None if force else RefusalWatch(original, update, language, instruction)  # force writes what it finds
    newline = None if patch is None else patch.final_newline  # what a diff says of the file's last line
    if engine == "model":
        if run_model is None:
            raise UsageError("no model for --engine model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        placed = merge(original, update, language) if focus else None  # where the model is shown the file
        run = _run(run_model, original, update, None, placed, language, instruction, watch)
        return replace(_checked(original, update, language, run, None, force, instruction), final_newline=newline)
    if engine == "merge" and instruction and update.strip() and not read(instruction, original, language).only:
        raise UsageError("the merge engine applies an update snippet, and an instruction only where it plainly asks "
                         "for a deletion, a rename, an import or a comment removal; this instruction beside a snippet "
                         "needs a model")
    merged = merge_reading(original, reading, language)
    why = unsettled(merged, original, instruction, language)
    if engine == "merge" or run_model is None or (merge_first and why is None):
        if why is not None:
            hint = "" if engine == "merge" else " and no model is configured (--model)"
            frame = "is not certain" if merged.confidence != CERTAIN else "alone does not make this edit"
            raise EditRefused(f"the merge {frame}{hint}: {why}; nothing was written", ("uncertain-merge",), merged)
        return EditOutcome(merged.text, "merge", merged, final_newline=newline)
    run = _run(run_model, original, update, merged.text, merged if focus else None, language, instruction, watch)
    return replace(_checked(original, update, language, run, merged, force, instruction), final_newline=newline)


class EditReading(NamedTuple):
    """An edit as each part reads it."""

    edit: str  # the merge engine's (``merge_edit``): a diff as the diff, an instruction alone as no snippet
    update: str  # the model's and its answer's checks: a diff as the snippet it amounts to (``as_update``)
    instruction: str  # an edit that reads as an instruction alone, its words on one line
    patch: Patch | None  # the diff the edit is, if it is one
    unsaid: str | None = None  # a chat model's answer leaving code around its blocks unsaid: the edit read as
    # deleting it (``edit`` keeps it, lazy markers added at its edges; ``answer.answer_edit``)
    kept: str | None = None  # a snippet with markers starting (ending) on a line inside the file: the snippet with
    # a marker added there, the code beyond kept (``answer.edge_marked``), where ``merge_reading`` takes it
    unturned: str | None = None  # the snippet as written, where its indentation was turned to the file's
    # (``indentation.in_file_indentation``): ``merge_reading`` doubts a merge that it, merged as written, re-indents


def read_edit(original: str, update: str, language: str | None, instruction: str = "",
              path: str | None = None) -> EditReading:
    """How ``update`` (with ``instruction``) is read: a coding agent's tool calls are the diff they amount
    to (``toolcall.call_edit``); a chat model's whole answer is the code its blocks
    hold for the file at ``path`` (``answer.answer_edit``); that, or the edit, is a diff
    (``diffs.read_patch``), an instruction alone (``reads_as_instruction``), or the update snippet it
    is, indented with the file's kind of whitespace (``indentation.in_file_indentation``: tabs where the
    file has tabs and the snippet spaces), the line numbers of a view it was copied from cut
    (``numbered.unnumbered``). Its line ends are read as a file's (``fileio.as_lf``).
    ``resolve_edit``, ``fastapply eval`` and ``fastapply bench`` read every edit so, so that a model is
    shown the same prompt by each.

    >>> read_edit("x = 1\\n", "@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", "python").update
    'x = 2\\n'
    >>> read_edit("x = 1\\n", "delete the variable x", "python")[:3]
    ('', '', 'delete the variable x')
    """
    update, instruction = as_lf(update), as_lf(instruction)  # CRLF from an agent's JSON, as a file's are read
    update = call_edit(update, original, path) or update
    answered = answer_edit(update, original, language, path)
    update, unsaid = (unnumbered(text, original, language) for text in answered or (update, update))  # `12→` cut
    patch = read_patch(update, original)
    if patch is not None:
        return EditReading(update, as_update(patch, original, language), instruction, patch)
    if reads_as_instruction(original, update, language, instruction):
        return EditReading("", "", " ".join(update.split()), None)
    turned, unsaid = (in_file_indentation(text, original, language) for text in (update, unsaid))  # tabs, spaces
    update, unturned = turned, None if turned == update else update
    if answered is None:
        kept = edge_marked(update, language, original, wide=True)
        return EditReading(update, update, instruction, None, kept=None if kept == update else kept, unturned=unturned)
    return EditReading(update, update, instruction, None, None if unsaid == update else unsaid, unturned=unturned)


def merge_reading(original: str, reading: EditReading, language: str | None) -> MergeResult:
    """The merge engine's answer for an edit as read (``read_edit``, ``_merged``). Where the snippet's
    indentation was turned to the file's and the snippet, merged as written, gives another file indented
    throughout as the snippet is (``indentation.indented_as``), likely at best: the snippet may mean to
    re-indent the file (brotli's `compress_test.py` in the training set, four spaces a level made two, the
    markers keeping only lines at column 0); not where, merged as written, it mixes the two (a chat model
    writing four spaces a level for the part of a file of two that it shows)."""
    merged = _merged(original, reading, language)
    if reading.unturned is None or merged.confidence != CERTAIN:
        return merged
    as_written = merge_edit(original, reading.unturned, language, reading.instruction).text
    if as_written is None or as_written == merged.text or not indented_as(as_written, reading.unturned):
        return merged
    return replace(merged, confidence=LIKELY, reasons=(
        "the snippet is indented unlike the file: it may re-indent the file (merged as written) or not (as merged, "
        "in the file's indentation)",))


def _merged(original: str, reading: EditReading, language: str | None) -> MergeResult:
    """``merge_reading`` but for re-indenting: ``merge_edit`` of the edit as read; where it is a
    chat model's answer leaving code around its blocks unsaid (``EditReading.unsaid``) and the two
    readings, that code kept or deleted, merge to different files, likely at best: the answer may mean
    either; unless deleting it would leave a name in use that only it binds (``answer.deletes_in_use``).
    A snippet that starts (ends) inside the file with no marker there deletes the code beyond it, as
    written (the suite's snippets delete an import or a file's last tests so); but not where deleting the
    code beyond one edge would leave a name in use that only it binds, or break the file (``_kept_edges``):
    an agent's snippet of a class or function, markers inside it, that leaves out the imports above it."""
    merged = merge_edit(original, reading.edit, language, reading.instruction)
    if reading.kept is not None:
        return _kept_edges(original, reading, language, merged)
    if reading.unsaid is None or merged.confidence != CERTAIN:
        return merged
    deleting = merge_edit(original, reading.unsaid, language, reading.instruction).text
    if deleting is None or deleting == merged.text or deletes_in_use(deleting, merged.text, language):
        return merged
    return replace(merged, confidence=LIKELY, reasons=(
        "the answer's code starts or ends inside the file with no lazy marker there: the code beyond it may be "
        "meant kept (as merged) or deleted",))


def _kept_edges(original: str, reading: EditReading, language: str | None, merged: MergeResult) -> MergeResult:
    """The merge of a snippet with markers that starts (ends) inside the file with none there: with the code
    beyond both edges kept (``EditReading.kept``) where deleting that beyond either edge alone would leave a
    name in use that only it binds, or the file with more syntax errors (the `}` closing the function
    shown): its writer marks no edge, so it leaves the code beyond the other one unsaid too (a class shown
    from its line down to a new last method, the imports above it and `main` below it kept). Where keeping
    both is not certain, the code beyond one edge kept alone, so; else, likely, the merge keeping both (a
    better draft for the model than one deleting the imports). Where the snippet ends by adding a definition
    and deletes the file's last lines so (``lost.TAIL_WIRED``), the merge keeping both, likely: a better
    draft, not a file written unasked (a new function after a lone `}` may be the last one renamed). The
    snippet as written (``merged``) otherwise; certain only where the merge keeping what it must is."""
    def keeping(head: bool, tail: bool) -> MergeResult:
        return merge_edit(original, edge_marked(reading.edit, language, original, head, tail, wide=True), language,
                          reading.instruction)

    def breaks(deleting: str | None, kept: str) -> bool:
        return deleting is not None and (deletes_in_use(deleting, kept, language) or language is not None
                                         and count_errors(deleting, language) > count_errors(kept, language))

    both = merge_edit(original, reading.kept, language, reading.instruction)
    must = both.text is not None and both.text != merged.text and any(  # the code beyond one edge deleted alone
        breaks(keeping(not head, head).text, both.text) for head in (True, False))
    wired = [reason for reason in merged.reasons if reason.startswith(TAIL_WIRED)]  # a new definition ends it
    if both.confidence == CERTAIN and both.text != merged.text:
        if wired and not must:  # meant kept, most likely, but a doubt: the model's draft, not written unasked
            return replace(both, confidence=LIKELY, reasons=tuple(wired))
        return both if must else merged
    for head in (True, False):  # keeping both is no certain merge: one edge's code kept alone
        alone = keeping(head, not head)
        if alone.confidence == CERTAIN and alone.text != merged.text and breaks(merged.text, alone.text):
            return alone
    return both if (must or wired) and merged.confidence != CERTAIN else merged  # likely: the model's draft


def _run(run_model: RunModel, original: str, update: str, merged: str | None, placed: MergeResult | None,
         language: str | None, instruction: str, watch: RefusalWatch | None) -> ModelRun:
    """The model's run on the file, or on the window ``focus`` cuts around where the merge ``placed`` the
    update, put back into the file; a focused run's stats say which lines it was shown (``window``: first
    and last, 1-based)."""
    window = focus_of(original, update, placed, language, instruction)
    if window is None:
        return run_model(original, update, instruction, merged, watch)
    run = run_model(window.cut(original), update, instruction, window.cut_draft(merged), watch)
    return replace(run, text=window.splice(original, run.text), stats={**run.stats, "window": window.shown})


def merge_edit(original: str, update: str, language: str | None, instruction: str = "") -> MergeResult:
    """The merge engine's answer for an edit: the update snippet merged, then the instruction beside it
    applied where its words are plain (``instructed.apply``: "Delete the function `sequence`." beside a
    snippet of context and markers, which the snippet cannot show), where the merge leaves it undone
    (``asks.undone``, read on the original: a snippet that already made the change is not made again);
    with no snippet, the instruction alone applied. An update that is a diff is applied as one
    (``patch.apply_patch``), and read as the snippet it amounts to beside an instruction. Where the
    merge is likely (the snippet placed, with a doubt), a plain instruction applied alone settles the
    edit if the snippet, merged into its answer, changes nothing there: the snippet shows that answer's
    lines and no change of its own (a function deleted at the file's end, the snippet showing the code
    above it with no marker after). A snippet placed nowhere in the original says nothing of where the
    instruction's change goes. Either way the answer is one the snippet merged into it leaves as it is.

    >>> text = "def a():\\n    return 1\\n\\n\\ndef b():\\n    return 2\\n"
    >>> print(merge_edit(text, "def a():\\n    return 3\\n# ...", "python", "Delete the function `b`.").text)
    def a():
        return 3
    <BLANKLINE>
    """
    if not update.strip():
        return apply_instruction(original, instruction, language)
    patch = read_patch(update, original)
    merged = merge(original, update, language) if patch is None else apply_patch(original, patch, language)
    if not instruction.strip():
        return merged
    snippet = update if patch is None else as_update(patch, original, language)
    if merged.confidence == LIKELY:
        alone = apply_instruction(original, instruction, language)
        if _shows(snippet, alone, language):
            return alone
    elif merged.confidence == CERTAIN:
        if undone(original, merged.text, read(instruction, original, language), language):
            applied = apply_instruction(merged.text, instruction, language)
            if _shows(snippet, applied, language):
                return replace(merged, text=applied.text)
    return merged


def _shows(update: str, answer: MergeResult, language: str | None) -> bool:
    """Whether ``answer`` is certain and the snippet, merged into it, changes nothing: the snippet shows
    the answer's lines and asks nothing against it (not "Delete the function `a`." beside a snippet
    showing `a`)."""
    return answer.confidence == CERTAIN and merge(answer.text, update, language).text == answer.text


def unsettled(merged: MergeResult, original: str, instruction: str = "", language: str | None = None) -> str | None:
    """Why the merge alone does not settle the edit, or None where it does: it is not certain; or an
    instruction came with the update and the merge leaves the file unchanged (a snippet merged into a
    file that already holds it gives the file unchanged, and rightly, but an instruction beside it asks
    for a change the snippet does not show, "Delete the function `sequence`." with a snippet of markers
    and context) or leaves undone what the instruction plainly asks (``asks.undone``: "Delete `b`. Keep
    it fast." beside a snippet that changes `a` alone); only a model can make those.

    >>> from fastapply.merge import merge
    >>> merged = merge("a = 1\\nb = 2\\n", "# ...\\nb = 2\\n", "python")
    >>> merged.confidence, unsettled(merged, "a = 1\\nb = 2\\n"), unsettled(merged, "a = 1\\nb = 2\\n", "Drop a.")
    ('certain', None, 'the update changes nothing in the file, and the instruction asks for a change')
    """
    if merged.confidence != CERTAIN:
        return "; ".join(merged.reasons)
    if not instruction.strip():
        return None
    if merged.text == original:
        return "the update changes nothing in the file, and the instruction asks for a change"
    return undone(original, merged.text, read(instruction, original, language), language)


def _checked(original: str, update: str, language: str | None, result: ModelRun, merged: MergeResult | None,
             force: bool, instruction: str = "") -> EditOutcome:
    if result.stopped is not None:
        raise EditRefused(f"{result.stopped.message}; the model was stopped there and nothing was written "
                          "(--force writes its whole answer)",
                          (result.stopped.name,), merged, (result.stopped,), result)
    problems = validate(original, result.text, update, language, result.closed, instruction, merged)
    if problems and not force:
        raise EditRefused("; ".join(p.message for p in problems) + "; nothing was written (--force writes it)",
                          tuple(p.name for p in problems), merged, problems, result)
    return EditOutcome(result.text, "model", merged, problems, result)


def reads_as_instruction(original: str, update: str, language: str | None, instruction: str = "") -> bool:
    """Whether an edit is an instruction, not a snippet ("delete the function save"): no instruction
    beside it, no lazy marker, no line of the file, words rather than code, and not code in the file's
    (known) language. ``resolve_edit`` shows the model such an edit as its instruction with no snippet,
    as the training data puts one (``data.mix --instruction-only-share``); shown as a snippet, it was
    written back as the file.

    >>> reads_as_instruction("x = 1\\n", "add a docstring to load", "python")
    True
    >>> reads_as_instruction("x = 1\\n", "y = compute(x) + 2", "python")  # code
    False
    >>> reads_as_instruction("x = 1\\n", "return the sum", "python", "Do it.")  # an instruction beside it
    False
    >>> reads_as_instruction("# Title\\n", "Some words of a new paragraph", "markdown")  # prose is the code
    False
    """
    text = " ".join(update.split())
    wordy = len(text.split()) >= 3 and sum(c.isalpha() or c == " " for c in text) >= 0.85 * len(text)
    return (not instruction.strip() and wordy and language is not None
            and reads_as_prose(update, {line.strip() for line in original.split("\n")}, language)
            and count_errors(update, language) > 0)  # words that parse ("import os") are code
