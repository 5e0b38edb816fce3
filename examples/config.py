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
