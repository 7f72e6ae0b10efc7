"""The version of toktools, in one place: the package, the CLI and every cache key read it here."""

__version__ = "0.2.0"
