"""Hardware abstraction layer: ports (abstract devices) and their backends.

``ui -> firmware -> hal``: nothing here imports the firmware. Choose a backend with
:func:`open_backend`; the ports are in :mod:`hal.ports`, their events in :mod:`hal.events`.
"""

from hal.backends import BACKENDS, KINDS, open_backend
from hal.errors import HalConfigError, HalError

__all__ = ["BACKENDS", "KINDS", "open_backend", "HalError", "HalConfigError"]
