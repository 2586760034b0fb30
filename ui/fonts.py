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
