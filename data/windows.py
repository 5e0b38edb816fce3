"""Short windows of long real edits: the same change, in a file cut down to the top-level statements
around it, so that a CPU-sized training run (files of at most ~80 lines) still sees real release edits.

``window(record, max_lines, rng)`` cuts the original and the expected file at the same top-level
boundaries (lines at indentation 0 that start a statement, or the file's ends) around every changed
line (``fastapply.focus.around``, where fastapply cuts a long file for the model), keeps both windows
only when they parse cleanly, and writes a new update snippet for them in a style drawn from ``rng``
(``data.styles``). It returns None when the changes spread wider than
``max_lines`` or the windows do not parse. It does not choose which records to cut (``data.mix`` does).
"""

from __future__ import annotations

import difflib
import random
import re

from data.styles import snippet_for
from fastapply.focus import around
from fastapply.syntax import count_errors


def whole_id(record_id: str) -> str:
    """The id of the edit a window was cut from (the id itself for any other record)."""
    return re.sub(r"-window-\d+$", "", record_id)


def window(record: dict, max_lines: int, rng: random.Random) -> dict | None:
    """``record`` (eval-task fields) cut to at most ``max_lines`` lines around its changes, or None."""
    old, new = record["original"].split("\n"), record["expected"].split("\n")
    changes = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not changes:
        return None
    first, last = changes[0][1], changes[-1][2]  # the changed span of the original, [first, last)
    shift = sum((j2 - j1) - (i2 - i1) for _, i1, i2, j1, j2 in changes)  # lines the edit adds (net)
    start, end = around(old, first, last)  # the tightest boundaries around the change, as fastapply cuts them
    if max(end - start, end + shift - start) > max_lines:
        return None
    original = "\n".join(old[start:end]).rstrip("\n") + "\n"
    expected = "\n".join(new[start:end + shift]).rstrip("\n") + "\n"
    language = record["language"]
    if original == expected or count_errors(original, language) or count_errors(expected, language):
        return None
    snippet = snippet_for(original, expected, language, rng)
    if snippet is None:
        return None
    return {**record, "id": record["id"] + f"-window-{start + 1}", "original": original, "expected": expected,
            "update": snippet.text}
