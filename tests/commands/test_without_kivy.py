"""Kivy only where there is a screen (issue #15): the dealer unit and the jackpot controller
install and run without it. Kivy is the ``display`` extra; here it is blocked outright (any
import of it fails and is counted), which is what a unit installed without the extra sees."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"

# Runs betbox's command line with every import of kivy refused, and says on stderr how many
# imports of kivy were tried (a caught ImportError would otherwise hide one).
NO_KIVY = """
import atexit, importlib.abc, sys
tried = []
class NoKivy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "kivy" or name.startswith("kivy."):
            tried.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (no display extra)", name=name)
        return None
sys.meta_path.insert(0, NoKivy())
atexit.register(lambda: print(f"kivy imports tried: {len(tried)}", file=sys.stderr))
if sys.argv[1:] == ["--import-kivy"]:
    import kivy
from firmware.cli import main
sys.exit(main(sys.argv[1:]))
"""


def betbox_without_kivy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_KIVY, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_block_refuses_kivy():
    """The check below could not pass by accident: under it, importing kivy fails."""
    out = betbox_without_kivy("--import-kivy")
    assert out.returncode != 0
    assert "No module named 'kivy' (no display extra)" in out.stderr
    assert "kivy imports tried: 1" in out.stderr


def test_a_dealer_configuration_checks_without_kivy(tmp_path):
    """``betbox run --check`` for the documented dealer, alone on the in-process bus (its
    [link] left out: the TLS files it names are not here)."""
    text = (EXAMPLES / "dealer.toml").read_text()
    start, end = text.index("[link]"), text.index("[journal]")
    config = tmp_path / "dealer.toml"
    config.write_text(text[:start] + text[end:])
    out = betbox_without_kivy("run", "--config", str(config), "--check")
    assert out.returncode == 0, out.stderr
    assert "kivy imports tried: 0" in out.stderr


def test_the_jackpot_controller_command_without_kivy():
    out = betbox_without_kivy("jackpot", "--help")
    assert out.returncode == 0, out.stderr
    assert "serve" in out.stdout
    assert "kivy imports tried: 0" in out.stderr


def test_kivy_is_the_display_extra_only():
    """betbox's own requirements leave Kivy out; ``betbox[display]`` (and ``test``) bring it."""
    reqs = requires("betbox") or []
    kivy = [r for r in reqs if r.lower().startswith("kivy")]
    assert kivy and all('extra == "display"' in r for r in kivy), reqs
    assert any(r.startswith("betbox[display]") and 'extra == "test"' in r for r in reqs), reqs
