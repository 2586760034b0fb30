"""The headless demo's summary reads at first sight (issue #19): signed players' net with the
house hold beside it, a legend for the columns and every alarm seen, and no progressive pool
for tables whose profile has none."""

from __future__ import annotations

import subprocess
import sys


def demo(*args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "firmware", "demo", "--headless", *args],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_summary_explains_itself_without_a_progressive() -> None:
    out = demo("--rounds", "4", "--profile", "uk-4-deck", "--seed", "3")
    assert "players won " not in out.split("==")[1]   # the old column heading
    header = next(line for line in out.splitlines() if line.strip().startswith("bet "))
    assert header.split() == ["bet", "wagered", "players", "net", "house", "hold"]
    assert "players net: what the players won (+) or lost (-)" in out
    assert "house hold:" in out
    assert "none: no table here plays a profile with a progressive" in out
    assert "pool main" not in out
    counts = [line.split(":", 1)[1].split(";")[0] for line in out.splitlines()
              if line.strip().startswith("alarms:") and "; refusals:" in line]
    seen = {part.split()[0] for line in counts for part in line.split(",") if part.strip() != "none"}
    assert seen, "the seeded demo raises alarms"
    for code in seen:   # every alarm the summary counts is explained under it
        assert f"  {code}: " in out


def test_summary_shows_the_pool_where_a_profile_carries_it() -> None:
    out = demo("--rounds", "2", "--profile", "rws-blackjack-switch")
    assert "pool main: meter" in out
    assert "none: no table here" not in out
