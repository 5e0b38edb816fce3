"""The exceptions fastapply shows to its users.

Library code raises these; only ``cli.py`` turns them into a one-line message and an exit status.
Anything else escaping the library is a bug, not a user error.
"""


class FastapplyError(Exception):
    """A domain error shown to the user as one line; exit status 1."""

    exit_code = 1


class UsageError(FastapplyError):
    """The command line or its inputs are wrong (bad option, empty edit, missing file); exit status 2."""

    exit_code = 2


class RefusedError(FastapplyError):
    """fastapply will not write a result because it would not be safe; exit status 3.

    ``reasons`` names each failed check (e.g. ``"markers-left"``) so tools can act on them.
    """

    exit_code = 3

    def __init__(self, message: str, reasons: tuple[str, ...] = ()):
        super().__init__(message)
        self.reasons = reasons
