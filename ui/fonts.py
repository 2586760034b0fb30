"""The display's font: one face with Latin, CJK and the card suits (♠♥♦♣).

Found at run time: known Debian paths first, then fontconfig (``fc-list :lang=zh-cn``).
Without one, Chinese would render as boxes, so start-up stops with a message that says
which package to install.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path
from typing import Any

#: Debian packages, best first: fonts-wqy-microhei (small, has suits), fonts-noto-cjk.
KNOWN: tuple[str, ...] = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
)
PACKAGE = "fonts-wqy-microhei"


class FontMissing(RuntimeError):
    """No font that can show Chinese is installed."""


def _fc_list() -> list[str]:
    if shutil.which("fc-list") is None:
        return []
    try:
        out = subprocess.run(["fc-list", ":lang=zh-cn", "file"], capture_output=True, text=True,
                             timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(line.split(":")[0].strip() for line in out.splitlines() if line.strip())


@functools.lru_cache(maxsize=1)
def cjk_font() -> Path:
    for known in KNOWN:
        if Path(known).is_file():
            return Path(known)
    for found in _fc_list():
        if Path(found).is_file() and found.endswith((".ttf", ".ttc", ".otf")):
            return Path(found)
    raise FontMissing("no font that can show 简体中文 is installed: the seat display would show boxes. "
                      f"Install one: apt-get install {PACKAGE} (or fonts-noto-cjk)")


def _face_id(label: Any) -> str:
    """What SDL2_ttf's face depends on: the whole-pixel size it opens, the file, the two
    styles it sets (bold and italic are in ``font_name_r``: a registered font's bold file,
    or the one file drawn as is)."""
    o = label.options
    return f"{int(o['font_size'])}|{o['font_name_r']}|{o['underline']}|{o['strikethrough']}"


def share_faces() -> None:
    """One open font face per face drawn alike (issue 14: RSS; docs/ui.md "Memory").

    Kivy's SDL2 text provider keeps up to 64 faces, keyed on the size as written and on
    bold: 18.0, a fitted 18.32 and a bold 18 are three faces of the CJK font (~0.4 MB
    each) though SDL2_ttf opens all three at 18 px and draws them the same. Keyed on what
    the face depends on, they are one. Another text provider is left as it is."""
    from kivy.core.text import Label as CoreLabel
    try:
        from kivy.core.text.text_sdl2 import LabelSDL2
    except ImportError:             # no SDL2_ttf: nothing of this cache to share
        return
    if issubclass(CoreLabel, LabelSDL2):
        LabelSDL2._get_font_id = _face_id      # type: ignore[method-assign]
