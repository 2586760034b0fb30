"""The unit's software verification (``betbox verify`` at start) as a journalled input.

``("software", {"verified": bool, "detail": str})``: posted once at start when the unit's
configuration asks for it (``[verify] at_start``). A unit whose software is not verified
raises a ``not_verified`` alarm and takes no bets until a later start verifies it.
"""

from __future__ import annotations

from typing import Any

MAX_DETAIL = 400


def software_input(body: Any) -> dict[str, Any]:
    """The verification result as a journal input, checked; ValueError names what is wrong."""
    if not isinstance(body, dict) or set(body) != {"verified", "detail"}:
        raise ValueError(f"software input: expected {{verified, detail}}, got {body!r:.80}")
    if not isinstance(body["verified"], bool) or not isinstance(body["detail"], str):
        raise ValueError(f"software input: verified is true/false and detail a string, got {body!r:.80}")
    return {"verified": body["verified"], "detail": body["detail"][:MAX_DETAIL]}
