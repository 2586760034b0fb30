"""The rules engine: pure blackjack rules, rounds, side bets and settlement (imports nothing of the project)."""
