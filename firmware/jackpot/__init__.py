"""The jackpot controller: progressive pools and meters fed by the seats' reports.

``pools`` is the pure arithmetic, ``wire`` reads reports strictly, ``controller`` applies
them to the store, ``service`` puts it on MQTT; ``service.run_controller`` is the jackpot
role's entry point for ``betbox run``.

The package imports none of them itself: every unit reads ``jackpot.config`` with its
configuration, and a seat has no use for the controller's modules (~1.5 MB, #14).
"""
