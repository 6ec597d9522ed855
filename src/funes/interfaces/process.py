"""What a long-running shell process (``funes serve``, ``funes mcp``) does once it has started.

A library leaves the cyclic garbage collector alone: that is the
application's choice, and these shells are the application. Start-up leaves
about 127,000 tracked objects (FastAPI's routes and schemas, pydantic
models, the modules), and every full collection walks all of them again:
140-200 ms (load 4) with the GIL held, stalling every request in flight, each time
the surviving objects grow by a quarter. ``gc.freeze()`` moves them to a
generation the collector never walks; collection keeps working for
everything allocated later (docs/benchmarks.md, issue 29).
"""

from __future__ import annotations

import gc


def settle_heap() -> int:
    """Collect start-up's garbage, then freeze what is left out of the collector's walks; returns the count frozen."""
    gc.collect()  # garbage frozen would never be freed
    gc.freeze()
    return gc.get_freeze_count()
