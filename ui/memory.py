"""Freed memory back to the system (issue 14: RSS with the UI <= 150 MB; docs/ui.md "Memory").

glibc's malloc keeps the pages of freed blocks inside its heap: after the rules, help or
service screen (their labels' textures, which llvmpipe keeps in RAM, and the strings behind
them) the display's RSS stays up by megabytes it no longer uses. ``malloc_trim(0)`` hands
every whole free page back (glibc 2.8 and later trims the middle of the heap, not only its
top). Called when the player's screen is back, a moment after the frame, never per frame.

First a full garbage collection: a language switch makes the screens' widgets anew and
the old ones sit in reference cycles (widgets, their bound callbacks) with their label
textures until Python's rare full collection: ~17 MB of heap after every screen in three
languages (llvmpipe) that no trim could give back while they were still held.
"""

from __future__ import annotations

import ctypes
import functools
import gc
from typing import Any


@functools.cache
def _libc() -> Any:
    """The C library's malloc_trim, or None (musl, macOS: nothing to call)."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


def give_back() -> bool:
    """Free what only reference cycles hold, then return the heap's free pages to the
    system; True when some were."""
    gc.collect()
    trim = _libc()
    return bool(trim(0)) if trim is not None else False
