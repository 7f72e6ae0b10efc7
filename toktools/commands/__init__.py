"""The ``toktools`` commands, one module each; ``toktools.cli`` gathers them into one group."""
