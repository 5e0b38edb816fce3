"""How an instruction is worded beside a training snippet: as users and agents word it, or not at all.

The synthetic transforms (``data.transforms``) write one template per kind of edit ("Add the method
`peek` to `Stack`."). A model trained only on those learns the template, and a user's "Add a peek
method." then reads as something else (fastapply-small copied the snippet back as the file). The
eval suite's tasks carry no instruction at all. ``vary`` rewords a templated instruction the way people
write it, keeps it, or drops it, so that the snippet, not the instruction's wording, says what to write.
It changes nothing else of an example.

``alone`` words an instruction that is the whole edit, with no snippet beside it ("Delete the function
save."): only for the kinds of edit an instruction can say in full (a deletion, a rename, an import, a
comment removed), never for code the instruction does not spell out (a new function, a docstring).
"""

from __future__ import annotations

import random
import re

DROP = 0.4  # share of instructions left out (the suite has none; agents often send the snippet alone)
KEEP = 0.2  # share kept in the template's wording; the rest are reworded

# The templates of data.transforms that both tables below reword; groups are the template's names, in order.
DELETE_METHOD = r"Delete the method `([^`]+)` from `([^`]+)`\."
DELETE_FUNCTION = r"Delete the function `([^`]+)`\."
RENAME = r"Rename `([^`]+)` to `([^`]+)`\."
ADD_IMPORT = r"Add the import `([^`]+)`\."
REMOVE_COMMENT = r"Remove the comment that starts `([^`]+)`\."

# (template as data.transforms writes it, rewordings); groups are the template's names, in order.
REWORDINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"Add the method `([^`]+)` to `([^`]+)`\.", (
        "Add a {0} method.", "Add a `{0}` method to `{1}`.", "add {0} to {1}", "Give {1} a {0} method.",
        "Add the {0} method.", "{1}: add {0}")),
    (r"Add the function `([^`]+)`\.", (
        "Add a {0} function.", "Add a function `{0}`.", "add {0}()", "Write {0}.", "Add the helper {0}.")),
    (DELETE_METHOD, (
        "Remove the {0} method.", "Delete {0} from {1}.", "drop {1}.{0}", "{1} no longer needs {0}.")),
    (DELETE_FUNCTION, (
        "Remove {0}.", "Delete the {0} function.", "remove the unused function {0}", "{0} is not needed any more.")),
    (RENAME, (
        "Rename {0} to {1}.", "rename {0} -> {1}", "Call {0} {1} instead, everywhere.")),
    (ADD_IMPORT, (
        "Add the missing import.", "Import what is needed.", "add `{0}`")),
    (REMOVE_COMMENT, (
        "Remove that comment.", "Delete the comment.", "drop the stale comment")),
    (r"Add a docstring to `([^`]+)`\.", (
        "Document {0}.", "Add a docstring.", "add a docstring to {0}")),
)

# (template, wordings that say the whole change with no snippet beside it); the kinds missing here (new
# functions, methods, docstrings) need the code itself.
ALONE: tuple[tuple[str, tuple[str, ...]], ...] = (
    (DELETE_METHOD, (
        "Delete the method `{0}` from `{1}`.", "Remove the {0} method from {1}.", "Delete {0} from {1}.",
        "drop {1}.{0}", "{1} no longer needs {0}.")),
    (DELETE_FUNCTION, (
        "Delete the function `{0}`.", "Remove {0}.", "Delete the {0} function.", "remove the unused function {0}",
        "{0} is not needed any more.")),
    (RENAME, (
        "Rename `{0}` to `{1}`.", "Rename {0} to {1}.", "rename {0} -> {1}", "Call {0} {1} instead, everywhere.")),
    (ADD_IMPORT, (
        "Add the import `{0}`.", "add `{0}`", "Import it: `{0}`")),
    (REMOVE_COMMENT, (
        "Remove the comment that starts `{0}`.", "Delete the comment beginning `{0}`.")),
)


def alone(instruction: str, rng: random.Random) -> str:
    """A wording of a templated ``instruction`` that says its whole change with no snippet, or "" where the
    kind of edit needs code the instruction does not give.

    >>> alone("Delete the function `save`.", random.Random(1))
    'Remove save.'
    >>> alone("Add the function `save`.", random.Random(1))
    ''
    """
    for template, forms in ALONE:
        match = re.fullmatch(template, instruction)
        if match:
            return rng.choice(forms).format(*match.groups())
    return ""


def vary(instruction: str, rng: random.Random) -> str:
    """``instruction`` dropped (``DROP``), kept (``KEEP``) or reworded; an empty or unknown one as it is.

    >>> vary("Add the method `peek` to `Stack`.", random.Random(2))
    'Add a peek method.'
    >>> vary("", random.Random(0))
    ''
    """
    if not instruction.strip():
        return instruction
    draw = rng.random()
    if draw < DROP:
        return ""
    if draw < DROP + KEEP:
        return instruction
    for template, forms in REWORDINGS:
        match = re.fullmatch(template, instruction)
        if match:
            return rng.choice(forms).format(*match.groups())
    return instruction
