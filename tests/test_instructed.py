"""An instruction alone applied with no model (``fastapply.instructed``): certain only where it is plain."""

import random

import pytest

from fastapply.instructed import apply
from fastapply.tasks import load_tasks
from fastapply.validate import validate

STORE = '''"""Storage."""
import json
import os


# Where the data lives.
ROOT = os.getcwd()


class Store:
    def load(self):
        return json.loads(open(ROOT).read())

    # Writes the data back.
    @staticmethod
    def save(data):
        open(ROOT, "w").write(json.dumps(data))

    def reload(self):
        return self.load()


def load():
    return Store().load()
'''


def certain(original, instruction, language="python"):
    result = apply(original, instruction, language)
    assert result.confidence == "certain", result.reasons
    return result.text


def unsure(original, instruction, language="python"):
    result = apply(original, instruction, language)
    assert result.confidence == "none" and result.text is None
    return result.reasons[0]


def test_a_deleted_method_goes_with_its_decorator_comment_and_the_blank_line_above():
    assert certain(STORE, "drop Store.save") == STORE.replace('''
    # Writes the data back.
    @staticmethod
    def save(data):
        open(ROOT, "w").write(json.dumps(data))
''', "")


def test_a_deleted_function_and_a_brace_language_method():
    assert certain(STORE, "Remove the reload method from Store.") == STORE.replace('''
    def reload(self):
        return self.load()
''', "")
    js = "class A {\n  a() {\n    return 1;\n  }\n\n  b() {\n    return 2;\n  }\n}\n"
    assert certain(js, "Delete the method `b` from `A`.", "javascript") == "class A {\n  a() {\n    return 1;\n  }\n}\n"


def test_a_deletion_that_could_mean_two_definitions_or_empties_a_class_is_left_to_a_model():
    assert "defined 2 times" in unsure(STORE, "Remove load.")  # the method and the function
    assert "would not parse" in unsure("class A:\n    def f(self):\n        pass\n", "Delete f from A.")


def test_a_rename_changes_every_identifier_of_the_definition_and_its_own_members():
    text = STORE.replace("def reload(self):", "def refresh(self):")
    assert certain(STORE, "rename reload -> refresh") == text
    assert "not one definition" in unsure(STORE, "Rename ROOT to DATA_ROOT.")  # a variable: which of its uses?
    # ``json.loads`` is json's: renaming a function ``loads`` of the file may not touch it
    loads = "import json\n\n\ndef loads(text):\n    return json.loads(text)\n\n\nprint(loads('1'))\n"
    assert "member of another object" in unsure(loads, "Rename loads to parse.")
    chained = "function load() {\n  return 1;\n}\n\nconst r = cache?.load();\nload();\n"  # `?.`: a member too
    assert "member of another object" in unsure(chained, "Rename load to read.", "javascript")
    quoted = "def f():\n    return 'f'\n\n\nf()\n"
    assert "no name" in unsure(quoted, "Rename f to g.")
    assert "strings or comments" in unsure(quoted.replace("'f'", "'call f'"), "Rename f to g.")
    assert "already a word" in unsure(loads, "Rename loads to json.")


def test_an_import_joins_its_group_in_order_and_is_left_to_a_model_where_its_place_is_a_choice():
    assert certain(STORE, "add `import sys`") == STORE.replace("import os\n", "import os\nimport sys\n")
    assert certain(STORE, "Add the import `import abc`.") == STORE.replace("import json\n", "import abc\nimport json\n")
    js = 'import a from "./a.js";\nimport z from "./z.js";\n\nimport React from "react";\n\nexport default a;\n'
    assert certain(js, 'add `import b from "./b.js";`', "javascript") == js.replace(
        'import z', 'import b from "./b.js";\nimport z')
    # a file with no import: after its head (comments, docstring), not between a doc comment and its code
    assert certain('#!/usr/bin/env python\n"""Tool."""\nx = 1\n', "add `import os`") == \
        '#!/usr/bin/env python\n"""Tool."""\n\nimport os\n\nx = 1\n'
    doc = "/**\n * The shape.\n */\nexport class Shape {}\n"
    assert certain(doc, "add `import { a } from './a.js';`", "typescript") == "import { a } from './a.js';\n\n" + doc
    assert "header guard" in unsure("int x;\n", "add `#include <stdio.h>`", "c")
    guarded = "try:\n    import ujson as json\nexcept ImportError:\n    import json\n\nimport os\n"
    assert "inside a block" in unsure(guarded, "add `import sys`")
    assert "already has" in unsure(STORE, "Add the import `import os`.")


def test_a_comment_goes_with_its_lines_unless_it_runs_on_into_others():
    assert certain(STORE, "Remove the comment that starts `# Writes the`.") == STORE.replace(
        "    # Writes the data back.\n", "")
    block = "/* Old:\n   gone. */\nint x;\n"
    assert certain(block, "Delete the comment beginning `/* Old:`.", "c") == "int x;\n"
    several = "x = 1\n# first line\n# second line\ny = 2\n"
    assert "runs on" in unsure(several, "Remove the comment that starts `# first line`.")


def test_an_instruction_that_asks_more_than_it_plainly_says_is_left_to_a_model():
    assert "asks for more" in unsure(STORE, "Delete reload. Then log each call to save.")
    assert "nothing that the file holds" in unsure(STORE, "Make saving atomic.")
    assert "nothing that the file holds" in unsure(STORE, "Remove the unused function missing")
    assert "language" in unsure(STORE, "drop Store.save", None)


def test_the_committed_held_out_edits_worded_alone_are_applied_exactly_or_left_to_a_model():
    """Every held-out training edit that an instruction can say alone: a certain answer passes
    validation, and is the known answer except where an import's place in its group is a choice."""
    from data.instructions import alone

    rng, counts = random.Random(0), {"certain": 0, "exact": 0}
    for task in load_tasks("data/train/valid.jsonl.gz"):
        worded = alone(task.instruction, rng) if task.instruction else ""
        if not worded:
            continue
        result = apply(task.original, worded, task.language)
        if result.confidence != "certain":
            continue
        counts["certain"] += 1
        counts["exact"] += result.text == task.expected
        assert validate(task.original, result.text, "", task.language, instruction=worded) == (), (task.id, worded)
        if "import" not in worded.lower():
            assert result.text == task.expected, (task.id, worded)
    assert counts["certain"] > 60 and counts["exact"] > 0.7 * counts["certain"], counts


@pytest.mark.parametrize("engine", ["merge", "auto"])
def test_the_cli_applies_a_plain_instruction_with_no_model(tmp_path, engine, monkeypatch):
    from typer.testing import CliRunner

    from fastapply.cli import app

    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)  # the shipped model: a plain instruction needs no run of it
    path = tmp_path / "store.py"
    path.write_text(STORE)
    result = CliRunner().invoke(app, [str(path), "--edit", "rename reload -> refresh", "--engine", engine,
                                      "--in-place"])
    assert result.exit_code == 0, result.output
    assert path.read_text() == STORE.replace("def reload(", "def refresh(")


def test_a_plain_instruction_beside_a_snippet_is_applied_to_the_certain_merge():
    """"Delete the function `b`." beside a snippet that changes `a`: the snippet cannot show the deletion.
    Before, a certain merge of the snippet settled the edit and the deletion was silently left undone."""
    from fastapply.engine import EditRefused, resolve_edit
    from fastapply.errors import UsageError

    text = "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"
    snippet = "def a():\n    return 10\n# ... existing code ...\ndef c():\n    return 3\n"
    outcome = resolve_edit(text, snippet, "python", "auto", instruction="Delete the function `b`.")
    outcome_of_both = ("merge", "def a():\n    return 10\n\n\ndef c():\n    return 3\n")
    assert (outcome.engine, outcome.text) == outcome_of_both
    # asked in words it does not all read: the merge leaves the deletion undone, so it does not settle the edit
    with pytest.raises(EditRefused, match="the merge alone does not make this edit .*: .* still defines it"):
        resolve_edit(text, snippet, "python", "auto", instruction="Delete the function `b`. Keep `c` fast.")
    merged = resolve_edit(text, snippet, "python", "merge", instruction="Delete the function `b`.")  # no model
    assert (merged.engine, merged.text) == outcome_of_both
    with pytest.raises(UsageError, match="needs a model"):
        resolve_edit(text, snippet, "python", "merge", instruction="Delete the function `b`. Keep `c` fast.")
    # a file that no longer has `b` (the edit made already): the instruction asks nothing of it
    done = "def a():\n    return 1\n\n\ndef c():\n    return 3\n"
    outcome = resolve_edit(done, snippet, "python", "auto", instruction="Delete the function `b`.")
    assert outcome.text == done.replace("return 1", "return 10")


def test_a_plain_instruction_settles_a_likely_merge_whose_snippet_shows_its_answer_and_no_change():
    """"Delete the function `b`." beside the code above `b`, with no marker after it: the merge alone is
    likely (it would delete the file's last lines, which a marker left out may have kept); the instruction
    applied alone gives the same file, and the snippet merged into that changes nothing, so it is certain.
    A snippet with a change of its own stays with the model."""
    from fastapply.engine import merge_edit, resolve_edit
    from fastapply.merge import merge

    text = "import os\n\n\ndef a():\n    return 1\n\n\n# Twice a.\ndef b():\n    x = a()\n    y = a()\n    return x + y\n"
    snippet = "# ... existing code ...\ndef a():\n    return 1\n"
    assert merge(text, snippet, "python").confidence == "likely"
    answer = "import os\n\n\ndef a():\n    return 1\n"
    outcome = resolve_edit(text, snippet, "python", "merge", instruction="Delete the function `b`.")  # no model
    assert (outcome.engine, outcome.text) == ("merge", answer)
    changed = merge_edit(text, snippet.replace("return 1", "return 10"), "python", "Delete the function `b`.")
    assert changed.confidence == "likely"
    # not every word read: the instruction may ask more than the deletion
    assert merge_edit(text, snippet, "python", "Delete the function `b`. Keep it fast.").confidence == "likely"
    # the instruction names another definition: its answer still holds `b`, which the snippet does not show
    assert merge_edit(text, snippet, "python", "Delete the function `a`.").confidence == "likely"


def test_an_instruction_against_what_the_snippet_shows_is_not_applied_to_the_merge():
    """"Delete the function `a`." beside a snippet showing `a` (and changing `b` after it, a certain
    merge): applying the instruction to that merge would leave no `a`; the snippet merged into such an
    answer would change it, so the two disagree and the merge engine refuses, writing nothing."""
    from fastapply.engine import EditRefused, resolve_edit

    text = "import os\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n"
    snippet = "# ... existing code ...\ndef a():\n    return 1\n\n\ndef b():\n    return 3\n"
    with pytest.raises(EditRefused, match="the merge alone does not make this edit: .* still defines it"):
        resolve_edit(text, snippet, "python", "merge", instruction="Delete the function `a`.")
