"""models: see toktools.parts.base."""
