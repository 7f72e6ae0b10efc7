"""The cyclic garbage collector paused while a batch makes millions of small objects that form
no cycle (encodings, offsets), and what those objects do to it afterwards."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: A paused stretch that made at least this many objects moves them to the oldest generation.
PROMOTE_MIN_OBJECTS = 20_000
#: After this many such moves with no full collection in between, one is run (see gc_paused).
PROMOTIONS_PER_FULL_COLLECTION = 16
_promotions = {"count": 0, "full_collections": -1}


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while many small objects are made (nothing made here
    forms a cycle): its passes over a growing heap were a third of a batch's time.

    On the way out, when many objects were made, they go straight to the oldest generation
    (``freeze`` then ``unfreeze``: two list splices, no pass, and the count of new objects
    starts again): otherwise the first allocation after ``enable`` starts a pass over every new
    object, and the generation it lands in is walked again later. The encodings live on, so
    those passes find nothing; they are walked by the next full collection, like any old object.
    The caller's young objects move too, and a full collection is what finds a cycle among
    them: so after :data:`PROMOTIONS_PER_FULL_COLLECTION` moves without one (a loop of big
    batches), this runs one. Skipped when the caller has frozen objects of its own
    (``unfreeze`` would thaw them)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        promote_young()
        gc.enable()


def promote_young() -> None:
    """With the collector off: when many objects were made since its last pass, move them to
    the oldest generation without a pass (see :func:`gc_paused`)."""
    if gc.get_count()[0] >= PROMOTE_MIN_OBJECTS and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
        _promoted()


def _promoted() -> None:
    """Count a move to the oldest generation; a full collection after enough of them."""
    full = gc.get_stats()[2]["collections"]
    if full != _promotions["full_collections"]:  # one ran since: count again from here
        _promotions.update(count=0, full_collections=full)
    _promotions["count"] += 1
    if _promotions["count"] >= PROMOTIONS_PER_FULL_COLLECTION:
        gc.collect()
        _promotions.update(count=0, full_collections=gc.get_stats()[2]["collections"])
