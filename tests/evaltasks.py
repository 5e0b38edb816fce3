"""Five small edit tasks for the eval tests: real-looking files, edits made by hand, update snippets made
by ``make_snippet`` as the suite builder makes them; and any task of the committed suite by its id."""

from __future__ import annotations

import json
from pathlib import Path

from fastapply.snippet import make_snippet
from fastapply.tasks import Task, load_tasks
from tests.samples import SAMPLE_EXPECTED, SAMPLE_PY

STACK_PY = '''\
class Stack:
    """A last-in, first-out stack."""

    def __init__(self):
        self._items = []

    def push(self, item):
        self._items.append(item)

    def pop(self):
        if not self._items:
            raise IndexError("pop from an empty stack")
        return self._items.pop()

    def __len__(self):
        return len(self._items)
'''
STACK_EXPECTED = STACK_PY.replace('''    def __len__(self):''', '''    def peek(self):
        """The top item, left on the stack."""
        if not self._items:
            raise IndexError("peek at an empty stack")
        return self._items[-1]

    def __len__(self):''')

SLUG_JS = '''\
'use strict';

const DEFAULT_SEPARATOR = '-';

function slugify(text, options = {}) {
  const separator = options.separator || DEFAULT_SEPARATOR;
  return text
    .toString()
    .normalize('NFKD')
    .toLowerCase()
    .trim()
    .replace(/[^a-z0-9]+/g, separator)
    .replace(new RegExp(`^${separator}|${separator}$`, 'g'), '');
}

function unique(slugs) {
  return Array.from(new Set(slugs));
}

module.exports = { slugify, unique };
'''
SLUG_EXPECTED = SLUG_JS.replace('''    .normalize('NFKD')
''', '''    .normalize('NFKD')
    .replace(/[\\u0300-\\u036f]/g, '')
''').replace("  const separator = options.separator || DEFAULT_SEPARATOR;",
             "  const separator = options.separator ?? DEFAULT_SEPARATOR;")

SERVER_GO = '''\
package server

import (
	"net/http"
	"time"
)

// Config holds the server's settings.
type Config struct {
	Addr         string
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
}

// New returns an http.Server for cfg.
func New(cfg Config, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:         cfg.Addr,
		Handler:      handler,
		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout,
	}
}
'''
SERVER_EXPECTED = SERVER_GO.replace('''	WriteTimeout time.Duration
}''', '''	WriteTimeout time.Duration
	IdleTimeout  time.Duration
}''').replace('''		WriteTimeout: cfg.WriteTimeout,
	}''', '''		WriteTimeout: cfg.WriteTimeout,
		IdleTimeout:  cfg.IdleTimeout,
	}''')

UTIL_PY = '''\
import re


def normalize_space(text):
    """Collapse runs of whitespace to one space."""
    return re.sub(r"\\s+", " ", text).strip()


def legacy_split(text):
    """Split on commas (kept for old callers)."""
    return [part for part in text.split(",")]


def split_words(text):
    """The words of text, lower-cased."""
    return normalize_space(text).lower().split(" ")


def count_words(text):
    return len(split_words(text))
'''
UTIL_EXPECTED = UTIL_PY.replace('''def legacy_split(text):
    """Split on commas (kept for old callers)."""
    return [part for part in text.split(",")]


''', '')

CASES = [
    ("tool/config.py", "python", SAMPLE_PY, SAMPLE_EXPECTED),
    ("pkg/stack.py", "python", STACK_PY, STACK_EXPECTED),
    ("lib/slug.js", "javascript", SLUG_JS, SLUG_EXPECTED),
    ("server/server.go", "go", SERVER_GO, SERVER_EXPECTED),
    ("pkg/util.py", "python", UTIL_PY, UTIL_EXPECTED),
]


def make_tasks() -> list[Task]:
    return [Task(id=f"t{i}-{Path(path).stem}", language=language, path=path, original=original,
                 update=make_snippet(original, expected, language, context=2), instruction="", expected=expected,
                 source={"package": "example", "from": "1.0", "to": "1.1", "license": "MIT"})
            for i, (path, language, original, expected) in enumerate(CASES)]


def write_tasks(path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for task in make_tasks():
            record = {name: getattr(task, name) for name in
                      ("id", "language", "path", "original", "update", "instruction", "expected")}
            handle.write(json.dumps(record | {"source": dict(task.source)}) + "\n")
    return path


SUITE = Path(__file__).resolve().parent.parent / "evals" / "tasks" / "suite.jsonl.gz"


def suite_task(task_id: str) -> Task:
    """The committed suite's task ``task_id``."""
    return next(t for t in load_tasks(SUITE) if t.id == task_id)
