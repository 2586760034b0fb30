"""Issue #19: the ACL as docs/mqtt/README.md tells it is the ACL the code makes. The table
of who publishes and reads what is compared, row by row, with render_acl's own lines."""

from __future__ import annotations

from pathlib import Path

from firmware.link.acl import render_acl
from firmware.runtime.bus import ROOT as TOPIC_ROOT

DOC = Path(__file__).resolve().parents[2] / "docs" / "mqtt" / "README.md"


def acl_table(acl: str) -> list[str]:
    """The ACL as markdown rows: who, what it publishes, what it reads (topics under the root)."""
    who = "everyone (`%u`: its own id)"
    rights: dict[str, tuple[list[str], list[str]]] = {who: ([], [])}
    for line in acl.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "user":
            who = f"`{words[1]}`"
            rights[who] = ([], [])
            continue
        access, topic = words[-2], words[-1].removeprefix(TOPIC_ROOT + "/")
        writes, reads = rights[who]
        if access in ("write", "readwrite"):
            writes.append(f"`{topic}`")
        if access in ("read", "readwrite"):
            reads.append(f"`{topic}`")
    return [f"| {w} | {', '.join(p) or '-'} | {', '.join(r) or '-'} |" for w, (p, r) in rights.items()]


HEADER = "| user | publishes | reads |"


def test_the_docs_acl_table_is_the_acl_render_acl_makes():
    lines = DOC.read_text().splitlines()
    assert HEADER in lines, f"docs/mqtt/README.md has no ACL table ({HEADER})"
    rows = []
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    expected = acl_table(render_acl({"table-1": 1}))
    assert rows == expected, ("docs/mqtt/README.md's ACL table differs from render_acl({'table-1': 1}); "
                              "its rows should be:\n" + "\n".join(expected))
