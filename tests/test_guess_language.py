"""Telling a file's language from its text alone (``syntax.guess_language``): right, or no guess at all."""

import pytest

from fastapply import syntax
from fastapply.syntax import count_errors, guess_language
from tests.test_languages import CASES, _case

FILES = {  # one small file of each of the suite's languages but Ruby
"go": '''package store

import (
\t"errors"
\t"sync"
)

var ErrMissing = errors.New("missing")

type Store struct {
\tmu   sync.Mutex
\tdata map[string]string
}

func (s *Store) Get(key string) (string, error) {
\ts.mu.Lock()
\tdefer s.mu.Unlock()
\tv, ok := s.data[key]
\tif !ok {
\t\treturn "", ErrMissing
\t}
\treturn v, nil
}
''',
"rust": '''use std::collections::HashMap;

pub struct Cache {
    items: HashMap<String, u64>,
}

impl Cache {
    pub fn new() -> Self {
        Cache { items: HashMap::new() }
    }

    pub fn get(&self, key: &str) -> Option<&u64> {
        self.items.get(key)
    }
}
''',
"java": '''package tools;

import java.util.ArrayList;
import java.util.List;

public class Counter {
    private final List<Integer> seen = new ArrayList<>();

    public void add(int n) {
        seen.add(n);
    }

    public int total() {
        return seen.stream().mapToInt(Integer::intValue).sum();
    }
}
''',
"cpp": '''#include <string>
#include <vector>

namespace tools {

class Counter {
 public:
  void Add(const std::string& name) { names_.push_back(name); }
  size_t Size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

}  // namespace tools
''',
"c": '''#include <stdio.h>
#include <stdlib.h>

static int count = 0;

int add(int n) {
    count += n;
    return count;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        add(atoi(argv[i]));
    }
    printf("%d\\n", count);
    return 0;
}
''',
"javascript": '''const express = require("express");

const app = express();
const port = process.env.PORT || 3000;

app.get("/", (req, res) => {
  res.send("hello");
});

app.listen(port, () => {
  console.log(`listening on ${port}`);
});
''',
"typescript": '''import { readFile } from "node:fs/promises";

export interface Config {
  name: string;
  retries: number;
}

export async function load(path: string): Promise<Config> {
  const text = await readFile(path, "utf8");
  const data = JSON.parse(text) as Partial<Config>;
  return { name: data.name ?? "app", retries: data.retries ?? 3 };
}
''',
}


@pytest.mark.parametrize("language", sorted(FILES))
def test_a_file_of_the_suites_languages_is_told(language):
    assert guess_language(FILES[language]) == language
    assert guess_language(FILES[language] + "\n# a line from somewhere else: x\n") in (language, None)


def test_this_module_is_python():
    assert guess_language(open(syntax.__file__, encoding="utf-8").read()) == "python"


@pytest.mark.parametrize("language", sorted(CASES))
def test_a_file_of_the_other_languages_is_told_or_not_guessed(language):
    """Grammars that take much text of others (HTML, Markdown, YAML, Kotlin, Scala, Bash, PHP) are never
    guessed; the stricter ones are told."""
    name, original, update, expected = _case(language)
    told = {guess_language(original), guess_language(expected)}
    assert told == ({language} if language in ("csharp", "css", "json", "lua", "swift", "toml") else {None})


@pytest.mark.parametrize("text", [
    "",
    "name: demo\nversion: 2\n",  # YAML, and Python's annotations, JavaScript's labels
    "<div>{items.length}</div>\n",  # markup, or JSX
    "let x: number = 1;\n",  # TypeScript, Rust and Swift alike
    "requests==2.31.0\nflask>=2\n",  # a Swift expression, with none of its words
    'syntax = "proto3";\n\nmessage User {\n  string name = 1;\n}\n',  # protobuf: C to its grammar
    "DEBUG=1\nDATABASE_URL=postgres://localhost/db\n",  # .env
    "[server]\nport = 8080\nhost = localhost\n",  # INI
    "all: build\n\nbuild:\n\tgo build ./...\n",  # a Makefile
    "FROM python:3.11\nRUN pip install -r requirements.txt\n",  # a Dockerfile
    "This project applies edits.\nIt is fast.\n",
])
def test_text_that_is_not_code_of_one_language_is_not_guessed(text):
    assert guess_language(text) is None


def test_a_grammar_out_of_time_counts_as_failing_and_is_reset(monkeypatch):
    monkeypatch.setattr(syntax, "_GRAMMAR_BUDGET_S", 0.0)
    assert guess_language(FILES["go"]) is None
    monkeypatch.undo()
    assert count_errors(FILES["go"], "go") == 0 and count_errors(FILES["rust"], "go") > 0  # parsed afresh
    assert guess_language(FILES["go"]) == "go"
