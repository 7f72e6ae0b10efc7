"""Where the work runs: the ``--cluster`` settings as one value the library takes.

Kept apart from :mod:`toktools.cluster.blocks` so that naming a cluster (and parsing ``64MB``)
imports nothing heavy: Dask is only needed once work is sent to the cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toktools.errors import ToktoolsError

#: Default block: big enough that the scheduler's ~1 ms per task is noise next to seconds of
#: work, small enough that a worker holds a few in memory (see README, "Running on a cluster").
DEFAULT_BLOCK_BYTES = 64 << 20
DEFAULT_TIMEOUT = 30.0

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 1 << 10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 1 << 20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 1 << 30,
}


@dataclass(frozen=True)
class Cluster:
    """A Dask scheduler (``tcp://host:8786``) or ``local`` / ``local:N`` (a LocalCluster of N
    worker processes on the loopback), how long to wait for it, and the bytes per task."""

    address: str
    timeout: float = DEFAULT_TIMEOUT
    block_bytes: int = DEFAULT_BLOCK_BYTES

    def __post_init__(self) -> None:
        if not self.address:
            raise ToktoolsError("--cluster needs an address: tcp://host:8786, local or local:N")
        if self.timeout <= 0:
            raise ToktoolsError("the cluster timeout must be more than 0 seconds")
        if self.block_bytes < 1:
            raise ToktoolsError("the block size must be at least one byte")


def as_cluster(value: str | Cluster | None) -> Cluster | None:
    """The Python API's ``cluster=`` argument: an address string, a :class:`Cluster`, or None
    (the local process pool)."""
    if value is None or isinstance(value, Cluster):
        return value
    if isinstance(value, str):
        return Cluster(value)
    raise ToktoolsError(
        f"cluster must be an address such as 'tcp://host:8786' or 'local:2', not {type(value).__name__}"
    )


def parse_size(text: str) -> int:
    """``64MB`` → 64,000,000; ``64MiB`` → 67,108,864; a bare number is bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ToktoolsError(f"cannot read the size {text!r}: expected a number of bytes, or e.g. 64MB, 512KiB, 1GB")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < 1:
        raise ToktoolsError(f"the size {text!r} is less than one byte")
    return size
