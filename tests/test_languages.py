"""The languages beyond the suite's: each is known by its extension, parsed by its grammar, and an
update snippet in its comment syntax merges into a file of it, certain and exact, through the CLI.

Each case is (file name, original, update snippet, expected): one change in the middle of the file,
the rest elided by markers, as a chat model writes them.
"""

import subprocess
import sys

import pytest

from fastapply.merge import merge
from fastapply.syntax import LANGUAGES, SOURCE_LANGUAGES, count_errors, language_for_path

CASES = {
    "csharp": ("Counter.cs", """\
using System;

namespace Tools
{
    public class Counter
    {
        private int count;

        public void Add(int n)
        {
            count += n;
        }

        public int Total()
        {
            return count;
        }
    }
}
""", """\
// ... existing code ...
        public void Add(int n)
        {
            if (n < 0) throw new ArgumentException("negative");
            count += n;
        }
// ... existing code ...
""", "            count += n;\n",
        "            if (n < 0) throw new ArgumentException(\"negative\");\n            count += n;\n"),
    "kotlin": ("Counter.kt", """\
package tools

class Counter {
    private var count = 0

    fun add(n: Int) {
        count += n
    }

    fun total(): Int {
        return count
    }
}
""", """\
// ... existing code ...
    fun add(n: Int) {
        require(n >= 0) { "negative" }
        count += n
    }
// ... existing code ...
""", "        count += n\n", "        require(n >= 0) { \"negative\" }\n        count += n\n"),
    "swift": ("Counter.swift", """\
import Foundation

final class Counter {
    private var count = 0

    func add(_ n: Int) {
        count += n
    }

    func total() -> Int {
        return count
    }
}
""", """\
// ... existing code ...
    func add(_ n: Int) {
        precondition(n >= 0, "negative")
        count += n
    }
// ... existing code ...
""", "        count += n\n", "        precondition(n >= 0, \"negative\")\n        count += n\n"),
    "scala": ("Counter.scala", """\
package tools

class Counter {
  private var count = 0

  def add(n: Int): Unit = {
    count += n
  }

  def total: Int = count
}
""", """\
// ... existing code ...
  def add(n: Int): Unit = {
    require(n >= 0, "negative")
    count += n
  }
// ... existing code ...
""", "    count += n\n", "    require(n >= 0, \"negative\")\n    count += n\n"),
    "php": ("Counter.php", """\
<?php

namespace Tools;

class Counter
{
    private int $count = 0;

    public function add(int $n): void
    {
        $this->count += $n;
    }

    public function total(): int
    {
        return $this->count;
    }
}
""", """\
// ... existing code ...
    public function add(int $n): void
    {
        if ($n < 0) {
            throw new \\InvalidArgumentException('negative');
        }
        $this->count += $n;
    }
// ... existing code ...
""", "        $this->count += $n;\n",
        "        if ($n < 0) {\n            throw new \\InvalidArgumentException('negative');\n        }\n"
        "        $this->count += $n;\n"),
    "lua": ("counter.lua", """\
local Counter = {}
Counter.__index = Counter

function Counter.new()
  return setmetatable({ count = 0 }, Counter)
end

function Counter:add(n)
  self.count = self.count + n
end

function Counter:total()
  return self.count
end

return Counter
""", """\
-- ... existing code ...
function Counter:add(n)
  assert(n >= 0, "negative")
  self.count = self.count + n
end
-- ... existing code ...
""", "  self.count = self.count + n\n", "  assert(n >= 0, \"negative\")\n  self.count = self.count + n\n"),
    "bash": ("deploy.sh", """\
#!/bin/sh
set -eu

build() {
  make all
}

publish() {
  scp dist/app.tar.gz "$HOST:/srv/app/"
}

build
publish
""", """\
# ... existing code ...
publish() {
  test -n "$HOST" || { echo "HOST is not set" >&2; exit 1; }
  scp dist/app.tar.gz "$HOST:/srv/app/"
}
# ... existing code ...
""", "  scp dist", "  test -n \"$HOST\" || { echo \"HOST is not set\" >&2; exit 1; }\n  scp dist"),
    "css": ("site.css", """\
body {
  margin: 0;
  font-family: sans-serif;
}

.header {
  color: #222;
  padding: 1rem;
}

.footer {
  color: #666;
}
""", """\
/* ... existing code ... */
.header {
  color: #222;
  padding: 1rem;
  border-bottom: 1px solid #ddd;
}
/* ... existing code ... */
""", "  padding: 1rem;\n", "  padding: 1rem;\n  border-bottom: 1px solid #ddd;\n"),
    "html": ("index.html", """\
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Tools</title>
</head>
<body>
  <h1>Tools</h1>
  <ul>
    <li><a href="counter.html">Counter</a></li>
  </ul>
  <footer>Made by hand.</footer>
</body>
</html>
""", """\
<!-- ... existing code ... -->
  <ul>
    <li><a href="counter.html">Counter</a></li>
    <li><a href="timer.html">Timer</a></li>
  </ul>
<!-- ... existing code ... -->
""", "    <li><a href=\"counter.html\">Counter</a></li>\n",
        "    <li><a href=\"counter.html\">Counter</a></li>\n    <li><a href=\"timer.html\">Timer</a></li>\n"),
    "markdown": ("README.md", """\
# Tools

Small tools for the command line.

## Install

    pip install tools

## Usage

Run `tools --help` for the commands.

## License

MIT
""", """\
<!-- ... existing content ... -->
## Usage

Run `tools --help` for the commands, or `tools COMMAND --help` for one.

<!-- ... existing content ... -->
""", "Run `tools --help` for the commands.\n",
        "Run `tools --help` for the commands, or `tools COMMAND --help` for one.\n"),
    "json": ("package.json", """\
{
  "name": "tools",
  "version": "1.2.0",
  "scripts": {
    "build": "tsc",
    "test": "node --test"
  },
  "dependencies": {
    "commander": "^12.0.0"
  },
  "license": "MIT"
}
""", """\
{
  // ... existing code ...
  "scripts": {
    "build": "tsc",
    "lint": "eslint src",
    "test": "node --test"
  },
  // ... existing code ...
}
""", "    \"build\": \"tsc\",\n", "    \"build\": \"tsc\",\n    \"lint\": \"eslint src\",\n"),
    "yaml": ("ci.yml", """\
name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: pip install -e .
      - run: pytest -q
""", """\
# ... existing code ...
      - run: pip install -e .
      - run: ruff check .
      - run: pytest -q
""", "      - run: pip install -e .\n", "      - run: pip install -e .\n      - run: ruff check .\n"),
    "toml": ("pyproject.toml", """\
[project]
name = "tools"
version = "1.2.0"
dependencies = [
    "click>=8",
]

[project.scripts]
tools = "tools.cli:main"

[tool.pytest.ini_options]
addopts = "-q"
""", """\
# ... existing code ...
dependencies = [
    "click>=8",
    "rich>=13",
]
# ... existing code ...
""", "    \"click>=8\",\n", "    \"click>=8\",\n    \"rich>=13\",\n"),
}


def _case(language):
    name, original, update, old, new = CASES[language]
    assert original.count(old) == 1, language
    return name, original, update, original.replace(old, new)


def test_every_language_beyond_the_suites_has_a_case():
    assert set(CASES) == set(LANGUAGES) - set(SOURCE_LANGUAGES)


@pytest.mark.parametrize("language", sorted(CASES))
def test_an_update_snippet_merges_certain_and_exact(language):
    name, original, update, expected = _case(language)
    assert language_for_path(f"src/{name}") == language
    assert language_for_path(f"src/{name}", SOURCE_LANGUAGES) is None  # data/ builds tasks of the suite's
    assert count_errors(original, language) == 0 and count_errors(expected, language) == 0
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", expected), merged.reasons


@pytest.mark.parametrize("language", ["csharp", "css", "json", "yaml"])
def test_the_grammar_finds_a_broken_file(language):
    """The check a certain merge rests on: a merged file with more syntax errors than the original."""
    _, original, _, _ = _case(language)
    assert count_errors(original[: len(original) // 2] + "\n}}} ]] ::: \"\n", language) > 0


def test_the_cli_applies_a_snippet_to_a_file_of_a_new_language(tmp_path):
    name, original, update, expected = _case("yaml")
    path, edit = tmp_path / name, tmp_path / "update.txt"
    path.write_text(original)
    edit.write_text(update)
    out = subprocess.run([sys.executable, "-m", "fastapply", str(path), "--engine", "merge", "--edit-file", str(edit),
                          "--in-place"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert path.read_text() == expected


def test_a_snippet_opening_with_the_files_first_bracket_keeps_it_only_with_a_marker_inside_it():
    """``[`` then a marker inside it: the file's own ``[``. With the marker outside it (not indented), the
    ``[`` may be any block's, and the marker may stand for nothing: a doubt. (An object's keys are found by
    name, wherever the marker is: ``keyed.py``.)"""
    original = '[\n  "a",\n  "b",\n  "c"\n]\n'
    inside = merge(original, '[\n  // ... existing code ...\n  "b",\n  "d",\n  "c"\n]\n', "json")
    assert (inside.confidence, inside.text) == ("certain", '[\n  "a",\n  "b",\n  "d",\n  "c"\n]\n')
    outside = merge(original, '[\n// ... existing code ...\n  "b",\n  "d",\n  "c"\n]\n', "json")
    assert outside.text == inside.text and outside.reasons == ("segment 1 only repeats opening lines",)
