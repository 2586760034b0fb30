"""The runtime: dealer and seat units, their bus, journals and configuration.

Each unit is one dispatch queue and one writer of its state. Every input a unit accepts
and every message it emits is journalled (SQLite, WAL, ``synchronous=FULL``) in one
transaction *before* the unit acts on it; a restarted unit replays its journal through the
same deterministic handlers and resumes where it was. No game rule lives here: the units
ask the engine (``firmware.engine``).
"""
