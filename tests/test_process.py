"""A long-running shell settles its heap after start-up: garbage collected first, the rest frozen, later cycles freed."""

from __future__ import annotations

import subprocess
import sys

# Run in a process of its own: freezing this test process's heap would keep its garbage for the rest of the run.
SCRIPT = """
import gc, weakref
from funes.interfaces.process import settle_heap

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)

gc.disable()  # only the calls below collect
before = cycle()  # start-up garbage: a reference cycle nothing holds
kept = [Node() for _ in range(1000)]  # start-up objects still in use
frozen = settle_heap()
print("before-freed", before() is None)
print("frozen", frozen >= 1000, gc.get_freeze_count() == frozen)
after = cycle()  # garbage made while serving
gc.collect()
print("after-freed", after() is None)
print("kept", len(kept))
"""


def test_settle_heap_collects_start_up_garbage_freezes_the_rest_and_still_frees_later_cycles() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == [
        "before-freed",
        "True",
        "frozen",
        "True",
        "True",
        "after-freed",
        "True",
        "kept",
        "1000",
    ]
