"""The screens other than the player's (``ui/kv/menus.kv``): rules, history, help,
language, the technician's PIN pad and service screen; made when first opened."""

from __future__ import annotations

from kivy.app import App
from kivy.uix.screenmanager import Screen

from .widgets import keep_fitted, make


class InfoScreen(Screen):
    def on_kv_post(self, _base) -> None:
        keep_fitted(self.ids.heading, 26, 16)

    def fill(self, heading: str, lines: list[tuple[str, str]], back: str) -> None:
        self.ids.heading.text = heading
        self.ids.back.text = back
        body = self.ids.body
        body.clear_widgets()
        u = App.get_running_app().u
        for kind, text in lines:
            size = {"h": 22, "s": 15}.get(kind, 18)
            colour = {"h": (1, 0.84, 0.2, 1), "n": (0.55, 1, 0.6, 1), "s": (0.85, 0.88, 0.86, 1)}.get(kind, (1, 1, 1, 1))
            body.add_widget(make('InfoLine', text=text, font_size=u * size, color=colour,
                                         bold=kind == "h"))

class RulesScreen(InfoScreen):
    pass

class HistoryScreen(InfoScreen):
    pass

class HelpScreen(InfoScreen):
    pass

class ServiceScreen(InfoScreen):
    pass

class LanguageScreen(InfoScreen):
    pass

class PinScreen(Screen):
    entered = ""
