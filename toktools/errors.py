"""The one exception type the CLI turns into a readable one-line message (and a non-zero exit)."""


class ToktoolsError(Exception):
    """A user-facing error: bad input, a corrupt file, an impossible setting. The message says
    what is wrong and where, in one line, without a traceback."""
