"""A snippet copied with its view's line numbers (``fastapply/numbered.py``): the numbers cut, so that it
anchors as the lines it shows."""

from typer.testing import CliRunner

from fastapply.cli import app
from fastapply.numbered import unnumbered

ORIGINAL = "import os\n\n\ndef root():\n    return os.getcwd()\n\n\ndef name():\n    return 'store'\n"


def test_a_snippet_with_an_agents_line_numbers_is_applied_as_the_lines_it_shows(tmp_path):
    """`     4→def root():` as a coding agent's file viewer shows the file, markers written unnumbered:
    anchored nowhere with its numbers, it is certain and exact with them cut, on disk too."""
    path = tmp_path / "store.py"
    path.write_text(ORIGINAL)
    edit = "# ... existing code ...\n     4\u2192def root():\n     5\u2192    return os.path.abspath(os.getcwd())\n" \
           "# ... existing code ...\n"
    result = CliRunner().invoke(app, [str(path), "--engine", "merge", "--in-place", "--edit", edit])
    assert result.exit_code == 0, result.output
    assert path.read_text() == ORIGINAL.replace("return os.getcwd()", "return os.path.abspath(os.getcwd())")


def test_cat_n_numbers_are_cut_blank_lines_too():
    snippet = "     7\t\n     8\tdef name():\n     9\t    return 'shop'\n"
    assert unnumbered(snippet, ORIGINAL, "python") == "\ndef name():\n    return 'shop'\n"


def test_numbers_are_kept_where_they_fall_or_some_line_has_none_or_the_file_is_a_listing():
    falling = "     9\u2192def name():\n     8\u2192    return 'shop'\n"
    partly = "     8\u2192def name():\n    return 'shop'\n"
    assert unnumbered(falling, ORIGINAL, "python") == falling
    assert unnumbered(partly, ORIGINAL, "python") == partly
    listing = "".join(f"{n:>6}\tline {n}\n" for n in range(1, 6))
    assert unnumbered("     2\tline two\n     3\tline 3\n", listing, None) == "     2\tline two\n     3\tline 3\n"
