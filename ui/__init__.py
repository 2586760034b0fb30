"""Kivy seat display. Observes the runtime; never decides a game rule."""
