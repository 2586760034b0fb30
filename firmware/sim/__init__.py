"""Simulated players for the table demo, benchmarks and scenario tests.

Nothing here decides a game rule: legality is always asked of the engine
(:meth:`Round.legal_decisions`); these modules only choose among what is legal.
"""
