"""A snippet indented with the other kind of whitespace than its file (``fastapply/indentation.py``): read
in the file's kind, so that it anchors and its new lines go in as the file writes them."""

from typer.testing import CliRunner

from fastapply.cli import app
from fastapply.engine import merge_reading, read_edit
from fastapply.indentation import in_file_indentation

GO = ("package store\n\nimport \"os\"\n\n// Load reads the file.\nfunc Load(path string) ([]byte, error) {\n"
      "\tdata, err := os.ReadFile(path)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\treturn data, nil\n}\n")
GO_UPDATE = ("// ... existing code ...\nfunc Load(path string) ([]byte, error) {\n    data, err := os.ReadFile(path)\n"
             "    if err != nil {\n        return nil, fmt.Errorf(\"load %s: %w\", path, err)\n    }\n"
             "// ... existing code ...\n")
GO_EXPECTED = GO.replace("\t\treturn nil, err\n", "\t\treturn nil, fmt.Errorf(\"load %s: %w\", path, err)\n")


def test_a_snippet_indented_with_spaces_merges_into_a_file_of_tabs_with_tabs(tmp_path):
    """Typed at a terminal with four spaces a level, the snippet anchored only where whitespace is ignored
    and its changed line went in with spaces; read with tabs it is certain and exact, on disk too."""
    merged = merge_reading(GO, read_edit(GO, GO_UPDATE, "go"), "go")
    assert (merged.text, merged.confidence) == (GO_EXPECTED, "certain")
    path = tmp_path / "store.go"
    path.write_text(GO)
    result = CliRunner().invoke(app, [str(path), "--engine", "merge", "--in-place", "--edit", GO_UPDATE])
    assert result.exit_code == 0, result.output
    assert path.read_text() == GO_EXPECTED


def test_the_width_of_a_tab_is_read_from_the_lines_the_snippet_shares_with_the_file():
    """Two spaces a level: the lines the file has too say a tab is two of them (both 2 and 4 would divide
    every line's indentation had the snippet only even levels)."""
    update = GO_UPDATE.replace("    ", "  ")
    assert in_file_indentation(update, GO, "go") == GO_UPDATE.replace("    ", "\t")


JS = ("import { join } from 'path';\n\nexport function load(name) {\n  const file = join('data', name);\n"
      "  if (!name) {\n    throw new Error('no name');\n  }\n  return file;\n}\n\nexport const ROOT = 'data';\n")


def test_a_snippet_of_four_spaces_a_level_merges_into_a_file_of_two_with_two():
    """A chat model writing four spaces a level for a file of two: the lines it shares with the file, at
    twice their indentation, say so; read with two, the snippet is certain and exact."""
    update = ("// ... existing code ...\nexport function load(name) {\n    const file = join('data', name);\n"
              "    if (!name) {\n        throw new TypeError('no name');\n    }\n// ... existing code ...\n")
    merged = merge_reading(JS, read_edit(JS, update, "javascript"), "javascript")
    assert (merged.text, merged.confidence) == (JS.replace("new Error", "new TypeError"), "certain")


def test_a_snippet_that_moves_lines_into_a_new_block_keeps_its_indentation():
    """Lines one level deeper under a new `try {`: the snippet's own step is the file's two, so nothing is
    scaled (its shared lines sit two spaces deeper, which is no scale)."""
    update = ("// ... existing code ...\nexport function load(name) {\n  try {\n    const file = join('data', name);\n"
              "  } finally {\n    done();\n  }\n// ... existing code ...\n")
    assert in_file_indentation(update, JS, "javascript") == update


def test_tabs_in_a_snippet_become_the_spaces_of_a_file_indented_with_spaces():
    original = ("import math\n\n\ndef area(w, h):\n  if w < 0:\n    raise ValueError(w)\n  return w * h\n\n\n"
                "def perimeter(w, h):\n  return 2 * (w + h)\n")
    update = "# ... existing code ...\ndef area(w, h):\n\tif w < 0:\n\t\traise ValueError(\"negative\")\n" \
             "\treturn w * h\n# ... existing code ...\n"
    merged = merge_reading(original, read_edit(original, update, "python"), "python")
    assert merged.text == original.replace("ValueError(w)", "ValueError(\"negative\")")
    assert merged.confidence == "certain"


def test_a_snippet_showing_a_part_of_the_file_indented_like_itself_is_left_as_it_is():
    """A file of tabs whose one class is indented with spaces (C++ sources that mix them): a snippet of
    that class, with spaces, shows lines the file holds as they are, so it is not turned into tabs."""
    original = "".join(f"int f{i}(int a)\n{{\n\tif (a)\n\t\treturn {i};\n\treturn 0;\n}}\n\n" for i in range(14)) \
        + "class A\n{\n    int x()\n    {\n        return 4;\n    }\n};\n"
    assert in_file_indentation("int f0(int a)\n{\n    if (a)\n// ...\n", original, "cpp") == \
        "int f0(int a)\n{\n\tif (a)\n// ...\n"
    update = "// ... existing code ...\n    int x()\n    {\n        return 5;\n    }\n// ... existing code ...\n"
    assert in_file_indentation(update, original, "cpp") == update


def test_a_snippet_or_a_file_of_both_kinds_and_a_snippet_with_no_marker_are_left_as_they_are():
    """A snippet with no lazy marker may be the whole new file, indented anew (minimist's
    `test/default_bool.js` in the suite: its spaces made tabs)."""
    mixed = "if x:\n\ty = 1\n    z = 2\n# ...\n"
    assert in_file_indentation(mixed, "if x:\n\ty = 0\n", "python") == mixed
    assert in_file_indentation("if x:\n    y = 1\n# ...\n", "if x:\n\ty = 0\n    z = 2\n", "python") == \
        "if x:\n    y = 1\n# ...\n"
    whole = GO.replace("\t", "    ")
    assert in_file_indentation(whole, GO, "go") == whole
    assert merge_reading(GO, read_edit(GO, whole, "go"), "go").text == whole


def test_a_snippet_that_shows_every_indented_line_in_another_step_may_re_indent_the_file():
    """The markers keep only lines at column 0, and the snippet shows all the rest two spaces a level in a
    file of four: it may re-indent the file (brotli's `compress_test.py`) as well as be written two a
    level: likely, where either reading alone would be certain."""
    original = "import os\n\n\nclass Store:\n    def load(self):\n        return os.getcwd()\n\n\nSTORE = Store()\n"
    update = "# ... existing code ...\nclass Store:\n  def load(self):\n    return os.getcwd() + '/'\n\n\n# ...\n"
    merged = merge_reading(original, read_edit(original, update, "python"), "python")
    assert merged.text == original.replace("os.getcwd()", "os.getcwd() + '/'")
    assert merged.confidence == "likely" and "re-indent" in merged.reasons[0]
