"""What a batch applies: its items, each a file and its edit, read from the JSONL records of
``fastapply batch EDITS.jsonl`` (``{"file": PATH, "edit": TEXT, "instruction"?: TEXT}``, paths relative to
the current directory), from a diff of several files (each file's part its edit, or what creates, deletes,
moves or copies it), from a chat model's answer (each file its code blocks name) or from a coding agent's
edit tool calls. An input line that cannot be used is an item with a problem, reported in its turn.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from fastapply.answer import answer_edit, split_answer
from fastapply.fileparts import FilePart, split_files
from fastapply.markers import count_markers
from fastapply.syntax import language_for_path
from fastapply.toolcall import as_patch, creates, files_named


@dataclass(frozen=True)
class BatchItem:
    line: int  # 1-based line number in the input
    file: str
    edit: str
    instruction: str = ""
    problem: str = ""  # why the line cannot be used, if it cannot
    part: FilePart | None = None  # the diff's part the edit is (``patch_items``): may create, delete, move or copy
    new: bool = False  # a chat answer's blocks for a file that is not there, whole: they create it

    @property
    def action(self) -> str:
        """What the item does to its file: edit, create, delete, move or copy (``fileparts.FilePart.action``)."""
        return self.part.action if self.part is not None else "create" if self.new else "edit"

    @property
    def source(self) -> str:
        """The path the file is read from: a moved file's old one, a copy's original, else its own."""
        return self.part.source if self.part is not None and self.part.source else self.file


def read_items(text: str) -> list[BatchItem]:
    """The records of a JSONL text; blank lines are skipped, a bad line becomes an item with a problem."""
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            items.append(BatchItem(number, "", "", problem=f"line {number} is not JSON: {exc}"))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("file"), str) or not isinstance(
                record.get("edit"), str) or not isinstance(record.get("instruction", ""), str):
            items.append(BatchItem(number, str(record.get("file", "")) if isinstance(record, dict) else "", "",
                                   problem=f'line {number} needs {{"file": str, "edit": str, "instruction"?: str}}'))
            continue
        items.append(BatchItem(number, record["file"], record["edit"], record.get("instruction", "")))
    return items


def patch_items(diff: str, strip: int | None = None) -> list[BatchItem]:
    """The items of a diff of one or more files (``fileparts.split_files``, its paths' first ``strip`` folders
    taken off, ``-p``): each file's part is its edit, its line the one the part starts on. A part for a
    path beyond a symbolic link the diff makes (``link/x``) is not applied, as ``git apply`` refuses it:
    written after the link, it would be written wherever the link points."""
    parts = split_files(diff, strip)
    links = [Path(part.path) for part in parts if part.link and part.action != "delete"]
    items = []
    for part in parts:
        beyond = next((link for link in links if Path(part.path) != link and Path(part.path).is_relative_to(link)),
                      None)
        problem = (f"the diff's part for {part.path} is {part.problem}; nothing was done" if part.problem else
                   f"{part.path} is beyond the symbolic link {beyond} the diff makes; nothing was done" if beyond
                   else "")
        items.append(BatchItem(part.line, part.path, part.text, problem=problem, part=part))
    return items


def answer_items(text: str) -> list[BatchItem]:
    """The items of a chat model's answer (``answer.split_answer``): each file its code blocks name is one
    item, its edit the answer (of which ``engine.read_edit`` takes that file's blocks), its line the one
    its first block opens on. A file that is not there is created where its blocks are whole (no lazy
    marker leaves code unsaid)."""
    return [BatchItem(line, path, text, new=_new_file(text, path)) for line, path in split_answer(text)]


def call_items(text: str) -> list[BatchItem]:
    """The items of a coding agent's tool calls (``toolcall.files_named``): each file they name is one
    item, its edit the calls (of which ``engine.read_edit`` takes that file's), its line the number of its
    first call. A file that is not there is created where its first call makes it (``toolcall.creates``).
    ``apply_patch`` calls are the items of the diff they hold (``patch_items``; each line that diff's)."""
    if (patch := as_patch(text)) is not None:
        return patch_items(patch)
    return [BatchItem(n, path, text, new=not os.path.lexists(path) and creates(text, path))
            for n, path in files_named(text)]


def _new_file(answer: str, path: str) -> bool:
    """Whether the answer's blocks for ``path``, a file that is not there, are a whole file to create."""
    if os.path.lexists(path):
        return False
    language = language_for_path(path)
    return count_markers(answer_edit(answer, "", language, path)[1], language) == 0
