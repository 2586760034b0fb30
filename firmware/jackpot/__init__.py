"""The jackpot controller: progressive pools and meters fed by the seats' reports.

``pools`` is the pure arithmetic, ``wire`` reads reports strictly, ``controller`` applies
them to the SQLite store, ``service`` puts it on MQTT; :func:`run_controller` is the
jackpot role's entry point for ``betbox run``.
"""

from .config import JackpotConfig, JackpotConfigError
from .controller import JackpotController, report
from .pools import PoolSpec
from .service import JackpotService, run_controller

__all__ = ["JackpotConfig", "JackpotConfigError", "JackpotController", "JackpotService", "PoolSpec",
           "report", "run_controller"]
