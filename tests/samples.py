"""A small Python file and an edit of it, shared by the tests: the README's example in ``examples/``."""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SAMPLE_PY = (EXAMPLES / "config.py").read_text(encoding="utf-8")
SAMPLE_UPDATE = (EXAMPLES / "config.edit").read_text(encoding="utf-8")

SAMPLE_EXPECTED = SAMPLE_PY.replace('''        print("usage: tool CONFIG")
''', '''        print("usage: tool CONFIG", file=sys.stderr)
''').replace('''    config = read_config(argv[1])
    for key in sorted(config):
''', '''    config = read_config(argv[1])
    verbose = os.environ.get("TOOL_VERBOSE") == "1"
    for key in sorted(config):
        if verbose:
            print("reading", key)
''')

# The first function alone: short enough that a tiny model learns to copy it in seconds.
SMALL_PY = "".join(SAMPLE_PY.splitlines(keepends=True)[:16])
