"""A snippet of a YAML, TOML or JSON file that shows the path to the keys it changes (``keyed.py``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from fastapply.keyed import set_keys
from fastapply.merge import merge, split_lines

CI = ("name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
      "      - uses: actions/checkout@v4\n      - run: pytest\n  lint:\n    runs-on: ubuntu-latest\n"
      "    # the linter only\n    steps:\n      - run: ruff check .\n")
COMPOSE = ('services:\n  web:\n    image: nginx\n    ports:\n      - "80:80"\n  db:\n    image: postgres\n    ports:\n'
           '      - "5432:5432"\n  cache:\n    image: redis\n')
PYPROJECT = ('[project]\nname = "demo"\nversion = "1.0"\ndependencies = [\n  "click",\n]\n\n[tool.ruff]\n'
             'line-length = 100\ntarget-version = "py311"\n\n[tool.pytest.ini_options]\naddopts = "-ra"\n')

PACKAGE = ('{\n  "name": "demo",\n  "version": "1.0.0",\n  "files": [\n    "lib"\n  ],\n  "scripts": {\n'
           '    "build": "tsc",\n    "test": "jest"\n  },\n  "engines": {\n    "node": ">=18"\n  }\n}\n')
SETUP_CFG = ("[metadata]\nname = demo\nversion = 1.0\n\n[options]\npackages = find:\npython_requires = >=3.8\n"
             "install_requires =\n    click\n\n[flake8]\nmax-line-length = 100\n")
DOTENV = "DEBUG=true\nDATABASE_URL=postgres://localhost/demo\nSECRET_KEY=abc\n"


@pytest.mark.parametrize("original, update, language, old, new", [
    (CI, "jobs:\n  lint:\n    runs-on: macos-latest\n", "yaml", "lint:\n    runs-on: ubuntu-latest",
     "lint:\n    runs-on: macos-latest"),
    (COMPOSE, "services:\n  db:\n    image: postgres:16\n", "yaml", "postgres\n", "postgres:16\n"),
    (COMPOSE, "services:\n  db:\n    image: postgres:16\n  cache:\n    image: redis:7\n", "yaml",
     "postgres\n    ports:\n      - \"5432:5432\"\n  cache:\n    image: redis\n",
     "postgres:16\n    ports:\n      - \"5432:5432\"\n  cache:\n    image: redis:7\n"),
    (PYPROJECT, '[project]\nversion = "2.0"\n', "toml", 'version = "1.0"', 'version = "2.0"'),
    (PYPROJECT, '[tool.ruff]\ntarget-version = "py312"\n', "toml", '"py311"', '"py312"'),
    (PACKAGE, '{\n  "scripts": {\n    "test": "jest --ci"\n  }\n}\n', "json", '"jest"', '"jest --ci"'),
    (PACKAGE, '  "scripts": {\n    "test": "jest --ci",\n  },\n', "json", '"jest"', '"jest --ci"'),  # none added
    (SETUP_CFG, "[options]\npython_requires = >=3.9\n", None, ">=3.8", ">=3.9"),
    (DOTENV, "DEBUG=false\nSECRET_KEY=xyz\n", None, "true\nDATABASE_URL=postgres://localhost/demo\nSECRET_KEY=abc",
     "false\nDATABASE_URL=postgres://localhost/demo\nSECRET_KEY=xyz"),
])
def test_keys_shown_under_their_headers_with_lines_left_out_between_replace_their_lines(original, update, language,
                                                                                          old, new):
    """Read as a part of the file, each snippet would add a second key beside the first (`runs-on:` twice
    under `lint:`); it leaves out lines between the lines it shows, so those after it are left out too."""
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", original.replace(old, new))


@pytest.mark.parametrize("original, update, language, old, new", [
    (PACKAGE, '  "engines": {\n    "node": ">=20"\n  }\n', "json", '">=18"', '">=20"'),
    (COMPOSE, "  cache:\n    image: redis:7\n", "yaml", "redis\n", "redis:7\n"),
    (SETUP_CFG, "[flake8]\nmax-line-length = 120\n", None, "100", "120"),
])
def test_a_run_that_shows_its_headers_blocks_to_their_ends_is_certain(original, update, language, old, new):
    """Read as the block as it should be, the snippet gives the same file: nothing under its headers
    follows its last line."""
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", original.replace(old, new))

@pytest.mark.parametrize("original, update, language, old, new", [
    (CI, "jobs:\n  test:\n    runs-on: macos-latest\n", "yaml", "test:\n    runs-on: ubuntu",
     "test:\n    runs-on: macos"),  # test's steps and the lint job after it: 8 lines
    (PYPROJECT, 'version = "2.0"\n', "toml", '"1.0"', '"2.0"'),  # no header: the whole file, a key it has once
    (PYPROJECT, 'line-length = 120\ntarget-version = "py312"\n', "toml", '100\ntarget-version = "py311"',
     '120\ntarget-version = "py312"'),
    (PACKAGE, '  "version": "1.1.0"\n', "json", '"1.0.0",', '"1.1.0",'),  # the file's comma kept
])
def test_a_run_of_keys_whose_blocks_as_they_should_be_would_lose_more_than_3_lines_leaves_them_out(
        original, update, language, old, new):
    """Read as `jobs:` and `test:` as they should be, the snippet would delete test's steps and the lint
    job: more than a snippet may delete with no marker, so they are left out, as for a part of a file."""
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", original.replace(old, new))


@pytest.mark.parametrize("original, update, language, old, new", [
    (CI, "  lint:\n    runs-on: macos-latest\n", "yaml", "lint:\n    runs-on: ubuntu", "lint:\n    runs-on: macos"),
    (COMPOSE, "  db:\n    image: postgres:16\n", "yaml", "postgres\n", "postgres:16\n"),
    (PYPROJECT, "[tool.ruff]\nline-length = 120\n", "toml", "100", "120"),
    (PACKAGE, '  "scripts": {\n    "build": "tsc -b"\n  },\n', "json", '"tsc",', '"tsc -b",'),
    (DOTENV, "DEBUG=false\n", None, "true", "false"),  # no header: the whole file's other two lines
])
def test_a_run_of_keys_whose_blocks_as_they_should_be_would_lose_1_to_3_lines_is_not_certain(
        original, update, language, old, new):
    """`steps:` and its item go on under `lint:` after the line shown: the snippet may be `lint:` as it
    should be, its steps deleted. The candidate keeps them, and replaces the key's line instead of adding
    a second."""
    merged = merge(original, update, language)
    assert merged.confidence == "likely" and "sets keys" in merged.reasons[0]
    assert merged.text == original.replace(old, new)


def test_keys_that_may_be_the_whole_new_file_are_not_certain_where_that_reading_gives_another_file():
    """A small file shown from its first line to its last, a line left out: the whole new file, that line
    deleted, or the key it sets, that line kept. The candidate keeps it; the model decides."""
    small = '{\n  "name": "demo",\n  "scripts": {\n    "test": "jest"\n  }\n}\n'
    merged = merge(small, '{\n  "scripts": {\n    "test": "jest --ci"\n  }\n}\n', "json")
    assert merged.confidence == "likely" and "whole new file" in merged.reasons[-1]
    assert merged.text == small.replace('"jest"', '"jest --ci"')
    yaml = "a: 1\nb:\n  c: 2\n  d: 4\n"
    assert merge(yaml, "a: 1\nb:\n  c: 3\n", "yaml").confidence == "likely"
    whole = merge(yaml, "a: 1\nb:\n  c: 3\n  d: 4\n", "yaml")  # both readings give the same file
    assert (whole.confidence, whole.text) == ("certain", yaml.replace("c: 2", "c: 3"))
    config = "version: 2\nupdates:\n  interval: weekly\n  limit: 5\nlabels:\n  team: core\n  kind: deps\n"
    merged = merge(config, config.replace("version: 2\n", "").replace("weekly", "daily"), "yaml")
    assert merged.confidence == "likely", "the whole file, its first line deleted (a whole file may delete 3 there)"
    assert merged.text == config.replace("weekly", "daily")


@pytest.mark.parametrize("original, update, language, why", [
    (CI, "    runs-on: macos-latest\n", "yaml", "the key twice in the file, and no header shown"),
    (CI, "jobs:\n  test:\n    steps: []\n", "yaml", "the file's value is a block, not one line"),
    (PACKAGE, '{\n  "jest": {\n    "verbose": true\n  }\n}\n', "json", "a JSON object the file does not have"),
    (CI, "timeout-minutes: 5\njobs:\n  test:\n    runs-on: macos-latest\n", "yaml",
     "a key the file does not have, with nothing shown above it: where it goes is a guess"),
    (PACKAGE, '  "files": [\n    "lib",\n    "bin"\n  ]\n', "json", "an array's items"),
    (PYPROJECT, '[tool.ruff]\nselect = [\n  "E",\n]\n', "toml", "a new value spanning lines"),
    (CI, "jobs:\n  test:\n    steps:\n      - run: pytest -x\n", "yaml", "a list item"),
    (CI, "jobs:\n  lint:\n    runs-on: ubuntu-latest\n", "yaml", "no value changed"),
    (CI, "jobs:\n  lint:\n    runs-on: macos-latest\n  test:\n    runs-on: macos-latest\n", "yaml",
     "shown out of the file's order"),
    (CI, "jobs:\n  lint:\n    # on a Mac\n    runs-on: macos-latest\n", "yaml", "a comment added"),
    (COMPOSE, "services:\n    image: postgres:16\n", "yaml", "a level skipped"),
    (PYPROJECT, '[project]\ndependencies = ["httpx"]\n', "toml", "the file's value spans lines"),
    (PYPROJECT, "[tool.black]\nline-length = 120\n[tool.black]\n", "toml", "a table twice"),
    (PACKAGE, '  "files": ["lib", "bin"]\n', "json", "the file's value spans lines"),
    ('{\n  "a": {\n    "v": 1\n  },\n  "b": {\n    "v": 2\n  }\n}\n', '    "v": 3\n', "json", "the key twice"),
    (SETUP_CFG, "[options]\ninstall_requires = httpx\n", None, "the file's value goes on on the lines after"),
    (DOTENV, "# the debug switch\nDEBUG=false\n", None, "a comment"),
    ("FROM python:3.11\nRUN make\n", "FROM python:3.12\n", None, "no key"),
    ("a = 1\n", "a = 2\n", "python", "not a configuration file"),
])
def test_what_is_not_a_path_of_keys(original, update, language, why):
    assert set_keys(split_lines(original), split_lines(update), language) is None, why


@pytest.mark.parametrize("original, update, language, old, new", [
    (CI, "# ...\njobs:\n  test:\n    runs-on: macos-latest\n    # ... existing steps ...\n", "yaml",
     "test:\n    runs-on: ubuntu", "test:\n    runs-on: macos"),
    (CI, "# ...\n  lint:\n    runs-on: macos-latest\n    # ...\n", "yaml", "lint:\n    runs-on: ubuntu",
     "lint:\n    runs-on: macos"),
    (PYPROJECT, "# ...\n[tool.ruff]\nline-length = 120\n# ...\n", "toml", "100", "120"),
    (PACKAGE, '// ...\n  "scripts": {\n    "test": "jest --ci"\n    // ...\n  },\n// ...\n', "json", '"jest"',
     '"jest --ci"'),
])
def test_a_key_shown_before_a_marker_takes_the_place_of_the_files_line_the_marker_keeps(original, update, language,
                                                                                      old, new):
    """The marker after `runs-on: macos-latest` keeps the job's lines, `runs-on: ubuntu-latest` among them:
    read as code, the new line is inserted above it, two `runs-on:` keys, and that was certain."""
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", original.replace(old, new))


@pytest.mark.parametrize("original, update, language, old, new", [
    (CI, "# ...\njobs:\n  lint:\n    runs-on: macos-latest\n    # ...\n", "yaml", "lint:\n    runs-on: ubuntu",
     "lint:\n    runs-on: macos"),  # read as code, the test job between `jobs:` and `lint:` was deleted, certain
    (PYPROJECT, '# ...\nversion = "2.0"\n# ...\n', "toml", '"1.0"', '"2.0"'),  # as code, it anchored nowhere
    (PACKAGE, '{\n  "name": "demo-app",\n  // ...\n}\n', "json", '"demo"', '"demo-app"'),
])
def test_a_path_of_keys_between_markers_keeps_what_the_markers_and_the_path_leave_out(original, update, language,
                                                                                    old, new):
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", original.replace(old, new))


def test_a_key_that_sets_in_place_keeps_its_line_where_the_snippet_is_no_path_of_keys():
    """`- run: pytest -x` is no key, so the snippet is merged as code: `runs-on: macos-latest`, the last line
    of its code, takes the place of the `runs-on:` the marker keeps, where inserted it would be a second."""
    update = ("# ...\n  test:\n    timeout-minutes: 5\n    runs-on: macos-latest\n    # ...\n      - run: pytest -x\n"
              "# ...\n")
    merged = merge(CI, update, "yaml")  # the list item added at the end of test's block: likely
    assert merged.text.startswith(CI.split("  test:")[0] + "  test:\n    timeout-minutes: 5\n"
                                  "    runs-on: macos-latest\n    steps:\n")


@pytest.mark.parametrize("original, update, language, old, new", [
    (CI, "jobs:\n  lint:\n    timeout-minutes: 5\n", "yaml", "  lint:\n", "  lint:\n    timeout-minutes: 5\n"),  # first
    (CI, "jobs:\n  test:\n    runs-on: ubuntu-latest\n    timeout-minutes: 5\n", "yaml", "latest\n    steps",
     "latest\n    timeout-minutes: 5\n    steps"),  # after the key shown above it
    (CI, "# ...\n  lint:\n    # ...\n    timeout-minutes: 5\n", "yaml", "ruff check .\n",
     "ruff check .\n    timeout-minutes: 5\n"),  # after a marker: at the end of lint's block
    (CI, "name: CI\nconcurrency: ci\n", "yaml", "name: CI\n", "name: CI\nconcurrency: ci\n"),
    (COMPOSE, "# ...\n  db:\n    image: postgres:16\n    restart: always\n    # ...\n", "yaml",
     "postgres\n", "postgres:16\n    restart: always\n"),
    (PYPROJECT, "# ...\n[tool.ruff]\n# ...\nfix = true\n# ...\n", "toml", '"py311"\n', '"py311"\nfix = true\n'),
    (SETUP_CFG, "[flake8]\nmax-line-length = 100\nextend-ignore = E203\n", None, "100\n",
     "100\nextend-ignore = E203\n"),
    (SETUP_CFG, "[metadata]\nversion = 1.1\ndescription = a demo\n", None, "version = 1.0\n",
     "version = 1.1\ndescription = a demo\n"),
    (PACKAGE, '{\n  "scripts": {\n    "test": "jest",\n    "lint": "eslint ."\n  }\n}\n', "json", '"jest"\n',
     '"jest",\n    "lint": "eslint ."\n'),  # the line above it gains a comma
    (PACKAGE, '  "scripts": {\n    "lint": "eslint .",\n    // ...\n  },\n', "json", '"scripts": {\n',
     '"scripts": {\n    "lint": "eslint .",\n'),  # first: a comma after it
    (PACKAGE, '{\n  "engines": {\n    "node": ">=18"\n  },\n  "private": true\n}\n', "json", '  }\n}',
     '  },\n  "private": true\n}'),  # after an object: a comma after its closing brace, none after the last key
])
def test_a_key_the_file_lacks_goes_in_where_the_path_shows_it(original, update, language, old, new):
    """Merged as code, `jobs:` / `  lint:` / `    timeout-minutes: 5` deleted the test job between the two
    headers (certain with markers around it); read as a part, it replaced the lines after `lint:`."""
    merged = merge(original, update, language)
    assert merged.text == original.replace(old, new, 1)
    assert merged.confidence == ("likely" if update.startswith('  "scripts"') else "certain"), merged.reasons


@pytest.mark.parametrize("update, language", [
    ("a: 1\nrenamed: 2\nc: 3\n", "yaml"),  # a run of the file's lines, `b:` renamed
    ("# ...\na: 1\nrenamed: 2\nc: 3\n# ...\n", "yaml"),
    ('{\n  "a": 1,\n  "renamed": 2,\n  "c": 3,\n  // ...\n}\n', "json"),
    ("[tool]\na = 1\nrenamed = 2\nc = 3\n", "toml"),
])
def test_a_new_key_shown_where_the_file_has_lines_the_snippet_leaves_out_replaces_them(update, language):
    """Read as keys, `renamed:` would be added after `a:` and `b:` kept; on the merge bench's runs of lines
    with one line replaced, that turned 55 of 2,067 certain and exact merges of parts into doubts with the
    wrong candidate. Such a snippet is no path of keys: a part, or code, where the new line replaces `b:`."""
    original = {"yaml": "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\n",
                "json": '{\n  "a": 1,\n  "b": 2,\n  "c": 3,\n  "d": 4\n}\n',
                "toml": "[tool]\na = 1\nb = 2\nc = 3\nd = 4\n"}[language]
    assert set_keys(split_lines(original), split_lines(update), language) is None
    b = original.splitlines(keepends=True)[1 if language == "yaml" else 2]
    assert merge(original, update, language).text == original.replace(b, b.replace("b", "renamed"), 1)


@pytest.mark.parametrize("update", ["jobs:\n  lint:\n    runner: ubuntu-latest\n",  # the value of `runs-on:`
                                    "jobs:\n  lint:\n    runs_on: ubuntu-22.04\n"])  # a key spelt alike
def test_a_new_key_that_may_rename_one_the_snippet_does_not_show_is_not_certain(update):
    merged = merge(CI, update, "yaml")
    assert merged.confidence == "likely" and "may rename" in merged.reasons[0], merged.reasons
    assert merged.text == CI.replace("  lint:\n", "  lint:\n" + update.splitlines(keepends=True)[-1])


def test_a_css_declaration_set_above_a_marker_takes_the_place_of_the_one_the_marker_keeps():
    """Merged as code, `color: red;` went in above the `color: blue;` the marker keeps, which wins over it:
    the edit did nothing, certain. Set after the one kept above it, it wins, and may be its fallback: left."""
    css = ".btn {\n  color: blue;\n  padding: 4px 8px;\n  border: 1px solid #ccc;\n}\n\n.link {\n  color: gray;\n}\n"
    merged = merge(css, "/* ... */\n.btn {\n  color: red;\n  /* ... */\n}\n/* ... */\n", "css")
    assert (merged.confidence, merged.text) == ("certain", css.replace("blue", "red"))
    after = merge(css, "/* ... */\n.btn {\n  /* ... */\n  color: red;\n}\n/* ... */\n", "css")
    assert after.text == css.replace("#ccc;\n}", "#ccc;\n  color: red;\n}")


def test_a_configuration_snippet_with_markers_that_starts_below_the_files_first_keys_is_not_certain():
    """No marker above `jobs:`: by the rule for code the few lines above it are deleted (an import the
    snippet's first lines replace); a configuration's `name:` and `on:` are more likely left unsaid."""
    merged = merge(CI, "jobs:\n  test:\n    runs-on: macos-latest\n    # ...\n", "yaml")
    assert merged.confidence == "likely" and "no marker above" in merged.reasons[0]
    shown = merge(CI, CI.split("jobs:")[0] + "jobs:\n  test:\n    runs-on: macos-latest\n    # ...\n", "yaml")
    expected = CI.replace("test:\n    runs-on: ubuntu", "test:\n    runs-on: macos")
    assert (shown.confidence, shown.text) == ("certain", expected)  # the lines above shown: nothing deleted


def _in_place(path, update: str):
    """``fastapply PATH --edit-file EDIT --engine merge --in-place``, the edit written beside the file."""
    edit = path.with_name("edit" + path.suffix)
    edit.write_text(update)
    return CliRunner().invoke(app, [str(path), "--edit-file", str(edit), "--engine", "merge", "--in-place"])


def test_a_ci_workflows_runner_changed_from_the_command_line(tmp_path):
    """End to end: a key path with the lines between left out is written, certain, with no model; a run of
    keys that may be `test:`'s block as it should be is refused under `--engine merge`, the file as it was."""
    workflow = tmp_path / "ci.yml"
    workflow.write_text(CI)
    result = _in_place(workflow, "jobs:\n  lint:\n    runs-on: macos-latest\n")
    assert result.exit_code == 0, result.output
    assert workflow.read_text() == CI.replace("lint:\n    runs-on: ubuntu-latest", "lint:\n    runs-on: macos-latest")
    before = workflow.read_text()  # test as it should be, its steps deleted, or two keys set with them kept
    result = _in_place(workflow, "  test:\n    timeout-minutes: 5\n    runs-on: macos-latest\n")
    assert result.exit_code == 3 and "not certain" in result.stderr and workflow.read_text() == before


def test_a_script_added_to_a_package_json_from_the_command_line(tmp_path):
    """End to end: a new script shown under `"scripts": {` after the last one is written with no model, the
    line above it given the comma it now needs; before, the part was refused (more syntax errors)."""
    package = tmp_path / "package.json"
    package.write_text(PACKAGE)
    result = _in_place(package, '{\n  "scripts": {\n    "test": "jest",\n    "lint": "eslint ."\n  }\n}\n')
    assert result.exit_code == 0, result.output
    assert package.read_text() == PACKAGE.replace('"jest"\n', '"jest",\n    "lint": "eslint ."\n')


@pytest.mark.parametrize("update, old, new", [
    ("jobs:\n  lint:\n    env:\n      CI: true\n", "  lint:\n", "  lint:\n    env:\n      CI: true\n"),  # first
    ("# ...\njobs:\n  # ...\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make\n",
     "ruff check .\n", "ruff check .\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make\n"),  # last
    ("# ...\njobs:\n  test:\n    # ...\n  build:\n    steps:\n      - run: make\n  lint:\n    # ...\n",
     "- run: pytest\n", "- run: pytest\n  build:\n    steps:\n      - run: make\n"),  # between the two it shows
])
def test_a_yaml_block_the_file_lacks_goes_in_where_the_path_shows_it(update, old, new):
    """Merged as code, a new job's `runs-on:` and `steps:` anchored on the test job's and the new job was
    written into it (likely); read as keys, its lines go in as they are, under the header shown above it.
    `test:` / `    # ...` shows a header whose block the marker keeps."""
    merged = merge(CI, update, "yaml")
    assert (merged.confidence, merged.text) == ("certain", CI.replace(old, new, 1)), merged.reasons


def test_a_new_yaml_block_like_the_one_beside_it_may_rename_it():
    """`tests:` over test's lines, one changed: renamed, or a job added; both kept, the model decides. The
    same lines as test's, none changed, are no new block at all (the file's lines with a header taken out
    above them, as the regions bench showed): read as a part."""
    update = ("jobs:\n  tests:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
              "      - run: pytest -x\n")
    merged = merge(CI, update, "yaml")
    assert merged.confidence == "likely" and "may rename" in merged.reasons[0]
    assert set_keys(split_lines(CI), split_lines(update.replace(" -x", "")), "yaml") is None


@pytest.mark.parametrize("original, update, language, expected", [
    (PYPROJECT, "[tool.mypy]\nstrict = true\n", "toml", PYPROJECT + "\n[tool.mypy]\nstrict = true\n"),  # at the end
    (PYPROJECT, "# ...\n[tool.mypy]\nstrict = true\n\n[tool.pytest.ini_options]\n# ...\n", "toml",
     PYPROJECT.replace("\n[tool.pytest", "\n[tool.mypy]\nstrict = true\n\n[tool.pytest")),  # before the next shown
    (SETUP_CFG, "[tool:pytest]\naddopts = -ra\n", None, SETUP_CFG + "\n[tool:pytest]\naddopts = -ra\n"),
    (PYPROJECT, '[tool.ruff]\ntarget-version = "py311"\n[tool.mypy]\nstrict = true\n', "toml",
     PYPROJECT.replace('"py311"\n', '"py311"\n[tool.mypy]\nstrict = true\n')),  # right after its section's last key
    (PYPROJECT, "[tool.ruff]\nline-length = 100\n[tool.mypy]\nstrict = true\n", "toml",
     PYPROJECT + "\n[tool.mypy]\nstrict = true\n"),  # not its last: the table would take `target-version`
])
def test_a_section_the_file_lacks_goes_in_at_the_end_or_before_the_next_one_shown(original, update, language,
                                                                                 expected):
    """In TOML, read as a part, `[tool.mypy]` / `strict = true` matched nothing: no candidate at all (none)."""
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", expected), merged.reasons


def test_a_section_added_to_an_empty_or_small_file():
    """The blank line that sets a new section apart from the file's last line: none in an empty file (an
    index past the file's start, once). A two-line file: the new table alone is not the file as it should
    be (the run rule made it likely, as a snippet that may delete 1 to 3 lines)."""
    assert merge("", "[tool.mypy]\nstrict = true\n", "toml").text == "[tool.mypy]\nstrict = true\n"
    small = '[project]\nname = "demo"\n'
    merged = merge(small, "[tool.mypy]\nstrict = true\n", "toml")
    assert (merged.confidence, merged.text) == ("certain", small + "\n[tool.mypy]\nstrict = true\n")
