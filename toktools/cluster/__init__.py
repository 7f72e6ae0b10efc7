"""Where work runs past one machine: corpus blocks as Dask tasks (count, encode, compare).

Kept apart from what the work does (:mod:`toktools.corpus`, :mod:`toktools.analysis`), as
datatrove keeps executors apart from pipelines."""
