"""Property tests of the merge engine on real files (this Python's standard library sources).

A random edit of a real file is turned into an update snippet by ``make_snippet``; merging the snippet
back must give exactly the edited file whenever the engine says ``certain``. Random garbage snippets
must never make it raise anything but fastapply's own errors.

The examples are the same on every run (``derandomize``), so a failure is a change's doing, not the
draw's. To hunt for new counterexamples, draw fresh ones, as many as you like:
``FASTAPPLY_PROPERTY_EXAMPLES=5000 python -m pytest tests/test_merge_properties.py``. Such hunts
find a wrong certain merge in roughly one of 4,000 random edits (session 57: 9 in about 38,000, each
a snippet two readings fit); the ones found and why they stay are in ``evals/RESULTS.md`` (merge
section).
"""

import difflib
import os
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastapply.errors import FastapplyError
from fastapply.merge import merge
from fastapply.snippet import make_snippet

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["fractions.py", "textwrap.py", "shlex.py", "difflib.py", "argparse.py", "dataclasses.py",
           "statistics.py", "configparser.py", "json/encoder.py", "email/utils.py"]
FILES = [STDLIB / name for name in MODULES if (STDLIB / name).is_file()]
TEXTS = [path.read_text("utf-8").replace("\x0c", "") for path in FILES]
NEW_LINES = ["value = compute(value)", "return None", "self.count += 1", "raise ValueError(name)", "", "pass",
             "log.debug('x=%s', x)", "# note", "}", "else:"]

pytestmark = pytest.mark.skipif(len(TEXTS) < 3, reason="the standard library sources are not installed")
HUNT = os.environ.get("FASTAPPLY_PROPERTY_EXAMPLES")
SETTINGS = settings(max_examples=int(HUNT or 60), derandomize=not HUNT, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def edits(draw):
    """(original, edited): one to three line edits, or a whole function changed, inserted or removed."""
    text = draw(st.sampled_from(TEXTS))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())] if lines[i].strip() else ""
        new = [indent + line + "\n" for line in draw(st.lists(st.sampled_from(NEW_LINES), min_size=1, max_size=3))]
        kind = draw(st.sampled_from(["insert", "replace", "delete", "function"]))
        if kind == "insert":
            lines[i + 1:i + 1] = new
        elif kind == "replace":
            lines[i:i + draw(st.integers(1, 3))] = new
        elif kind == "delete":
            del lines[i:i + draw(st.integers(1, 6))]
        else:
            starts = [j for j, line in enumerate(lines) if line.lstrip().startswith("def ")]
            j = draw(st.sampled_from(starts))
            end = j + 1
            width = len(lines[j]) - len(lines[j].lstrip())
            while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > width):
                end += 1
            action = draw(st.sampled_from(["drop", "rename", "duplicate"]))
            if action == "drop":
                del lines[j:end]
            elif action == "rename":
                lines[j] = lines[j].replace("def ", "def renamed_", 1)
            else:
                lines[end:end] = [line.replace("def ", "def copy_of_", 1) for line in lines[j:end]]
        if not lines:
            lines = ["\n"]
    return text, "".join(lines)


def _explain(snippet: str, expected: str, got: str) -> str:
    diff = difflib.unified_diff(expected.splitlines(True), got.splitlines(True), "expected", "merged", n=2)
    return f"snippet:\n{snippet[:3000]}\ndiff:\n{''.join(diff)[:3000]}"


@SETTINGS
@given(edits(), st.integers(1, 4))
def test_certain_merge_is_the_edited_file(edit, context):
    original, edited = edit
    snippet = make_snippet(original, edited, "python", context=context)
    result = merge(original, snippet, "python")
    assert result.confidence in ("certain", "likely", "none")
    assert (result.text is None) == (result.confidence == "none")
    if result.confidence == "certain":
        assert result.text == edited, _explain(snippet, edited, result.text)
    else:
        assert result.reasons


@SETTINGS
@given(st.sampled_from(TEXTS), st.lists(st.one_of(
    st.text(max_size=40),
    st.sampled_from(["# ... existing code ...", "    # ...", "...", "// ... rest of code ...", "{/* ... */}"]),
    st.sampled_from(NEW_LINES)), max_size=12), st.sampled_from(["python", "javascript", "ruby", None]))
def test_garbage_snippets_never_crash(original, parts, language):
    lines = original.splitlines()
    update = "\n".join(part if i % 3 else (lines[len(part) % len(lines)] if lines else part)
                       for i, part in enumerate(parts))
    try:
        result = merge(original, update, language)
    except FastapplyError:
        return
    assert (result.text is None) == (result.confidence == "none")
    if result.confidence == "certain":
        assert not result.reasons
