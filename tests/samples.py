"""A small Python file and an edit of it, shared by the tests."""

SAMPLE_PY = '''\
import os
import sys


def read_config(path):
    """Read a key=value config file."""
    config = {}
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            config[key.strip()] = value.strip()
    return config


def main(argv):
    if len(argv) < 2:
        print("usage: tool CONFIG")
        return 2
    config = read_config(argv[1])
    for key in sorted(config):
        print(key, config[key])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

SAMPLE_UPDATE = '''\
# ... existing code ...
def main(argv):
    if len(argv) < 2:
        print("usage: tool CONFIG", file=sys.stderr)
        return 2
    config = read_config(argv[1])
    verbose = os.environ.get("TOOL_VERBOSE") == "1"
    for key in sorted(config):
        if verbose:
            print("reading", key)
        print(key, config[key])
    return 0
# ... existing code ...
'''

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
