"""The one exception type the CLI turns into a readable one-line message (and a non-zero exit),
and the one warning type it prints as one line (``toktools: warning: ...``) unless ``--quiet``."""

from __future__ import annotations

import warnings


class ToktoolsError(Exception):
    """A user-facing error: bad input, a corrupt file, an impossible setting. The message says
    what is wrong and where, in one line, without a traceback."""


class ToktoolsWarning(UserWarning):
    """Something a run did that the user would not expect and should know, but that is no error
    (the file's own truncation applied, many unknown tokens): one line, and the run goes on.
    Library users get it through :mod:`warnings`; the CLI prints it, and ``--quiet`` drops it."""


def warn(message: str) -> None:
    """Issue ``message`` as a :class:`ToktoolsWarning` (one line, no trailing period needed)."""
    warnings.warn(message, ToktoolsWarning, stacklevel=2)
