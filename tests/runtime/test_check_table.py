"""#12.6: ``betbox run --check`` is exactly what a start checks.

A table of configurations that cannot start: ``--check`` refuses each one, naming the file,
the section and the key, and a start (``betbox run`` without ``--check``) refuses it with the
same message. Every configuration ``--check`` accepts is then started as a real process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from firmware.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
SEAT_SPOTS = ["main", "insurance", "player_pair", "under_13", "over_13"]
CHIPS = "uid,denomination,status\n0A01,5,valid\n0A02,25,valid\n0B01,5,barred\n"


def toml(data: dict[str, Any], prefix: str = "") -> str:
    """A small TOML writer: scalars first, then each sub-table under its dotted name."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)
    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict) or k in ("lamps", "buttons")]
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in data.items():
        if isinstance(v, dict) and k not in ("lamps", "buttons"):
            name = f"{prefix}.{k}" if prefix else k
            out += f"\n[{name}]\n" + toml(v, name)
    return out


def seat(tmp: Path) -> dict[str, Any]:
    chips = tmp / "chips.csv"
    if not chips.exists():
        chips.write_text(CHIPS)
    return {"unit": {"role": "seat", "id": "seat-2", "table": "table-1", "state_dir": str(tmp / "seat")},
            "seat": {"box": 2, "spots": SEAT_SPOTS, "chips": str(chips)},
            "hardware": {"chip_reader": {"backend": "mock", "spots": SEAT_SPOTS},
                         "lamps": {"backend": "mock", "lamps": ["progressive", "bets_locked"]}}}


def dealer(tmp: Path) -> dict[str, Any]:
    return {"unit": {"role": "dealer", "id": "dealer", "table": "table-1", "state_dir": str(tmp / "dealer")},
            "game": {"profile": "rws-blackjack", "decks": 6},
            "hardware": {"card_shoe": {"backend": "mock"}, "console": {"backend": "mock"}}}


def jackpot(tmp: Path, port: int = 1) -> dict[str, Any]:
    return {"unit": {"role": "jackpot", "id": "main", "state_dir": str(tmp / "jackpot")},
            "link": {"broker": f"mqtt://127.0.0.1:{port}"}}


def openssl(tmp: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True, timeout=60)


def pki(tmp: Path) -> Path:
    """A throwaway CA, a broker certificate for 127.0.0.1 and client certificates."""
    d = tmp / "pki"
    if (d / "ca.pem").exists():
        return d
    d.mkdir()
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=betbox test CA")
    for name in ("broker", "client", "other"):
        openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1\n" if name == "broker"
                                       else "extendedKeyUsage=clientAuth\n")
        openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    openssl(d, "rsa", "-in", "client.key", "-aes256", "-passout", "pass:secret", "-out", "locked.key")
    return d


def with_tls(tmp: Path, data: dict[str, Any], **files: str) -> dict[str, Any]:
    d = pki(tmp)
    tls = {"ca": str(d / "ca.pem"), "cert": str(d / "client.pem"), "key": str(d / "client.key")}
    tls.update(files)
    data["link"] = {"broker": "mqtts://127.0.0.1:8883", "username": "table-1/seat-2", "password": "pw",
                    "tls": tls}
    return data


def garbage(tmp: Path, name: str, content: bytes = b"\x00\xffnot at all what it should be\n" * 20) -> str:
    path = tmp / name
    path.write_bytes(content)
    return str(path)


def pty_path(tmp: Path) -> str:
    master, slave = os.openpty()
    _ptys.append((master, slave))
    return os.ttyname(slave)


_ptys: list[tuple[int, int]] = []


def edit(base: Callable[[Path], dict], change: Callable[[Path, dict], Any]) -> Callable[[Path], dict]:
    def make(tmp: Path) -> dict:
        data = base(tmp)
        change(tmp, data)
        return data
    return make


def _state_dir_file(tmp: Path, d: dict) -> None:
    (tmp / "seat").write_text("a file, not a directory\n")


def _state_dir_under_file(tmp: Path, d: dict) -> None:
    (tmp / "plain").write_text("x")
    d["unit"]["state_dir"] = str(tmp / "plain" / "seat")


def _journal_is_dir(tmp: Path, d: dict) -> None:
    (tmp / "seat" / "journal.db").mkdir(parents=True)


def _journal_lost_beside_segments(tmp: Path, d: dict) -> None:
    (tmp / "seat").mkdir()
    garbage(tmp / "seat", "journal-1-40.db")


def _journal_garbage(tmp: Path, d: dict) -> None:
    (tmp / "seat").mkdir()
    garbage(tmp / "seat", "journal.db")


def _chips(text: str | bytes) -> Callable[[Path, dict], None]:
    def change(tmp: Path, d: dict) -> None:
        path = tmp / "bad-chips.csv"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        d["seat"]["chips"] = str(path)
    return change


def _set(path: str, value: Any) -> Callable[[Path, dict], None]:
    def change(tmp: Path, d: dict) -> None:
        *heads, last = path.split("/")
        node = d
        for h in heads:
            node = node.setdefault(h, {})
        node[last] = value(tmp) if callable(value) else value
    return change


def _jackpot_db(kind: str) -> Callable[[Path, dict], None]:
    def change(tmp: Path, d: dict) -> None:
        if kind == "dir":
            (tmp / "jp.db").mkdir()
            d["jackpot"] = {"db": str(tmp / "jp.db")}
        elif kind == "garbage":
            d["jackpot"] = {"db": garbage(tmp, "jp.db")}
        else:
            (tmp / "plain").write_text("x")
            d["jackpot"] = {"db": str(tmp / "plain" / "jp.db")}
    return change


def _tls(**files: Callable[[Path], str]) -> Callable[[Path, dict], None]:
    def change(tmp: Path, d: dict) -> None:
        with_tls(tmp, d, **{k: f(tmp) for k, f in files.items()})
    return change


NEEDS_OPENSSL = shutil.which("openssl") is None

# (id, configuration, what the message names)
BAD: list[tuple[str, Callable[[Path], dict], list[str]]] = [
    ("chips file missing", edit(seat, _set("seat/chips", lambda t: str(t / "nope.csv"))),
     ["[seat] chips", "nope.csv", "docs/chips.md"]),
    ("chips path is a directory", edit(seat, _set("seat/chips", lambda t: str(t))), ["[seat] chips", "cannot read"]),
    ("chips not UTF-8", edit(seat, _chips(b"uid,denomination,status\n\xff\xfe,5,valid\n")), ["[seat] chips", "UTF-8"]),
    ("chips header wrong", edit(seat, _chips("tag,value\n0A01,5\n")), ["[seat] chips", "line 1: header"]),
    ("chips duplicate UID", edit(seat, _chips("uid,denomination,status\n0A01,5,valid\n0a01,25,valid\n")),
     ["[seat] chips", "duplicate UID 0A01"]),
    ("chips bad denomination", edit(seat, _chips("uid,denomination,status\n0A01,5.001,valid\n")),
     ["[seat] chips", "line 2", "more than two decimals"]),
    ("chips bad status", edit(seat, _chips("uid,denomination,status\n0A01,5,lost\n")), ["[seat] chips", "status"]),
    ("chips empty", edit(seat, _chips("uid,denomination,status\n")), ["[seat] chips", "lists no chips"]),
    ("state dir is a file", edit(seat, _state_dir_file), ["[unit] state_dir", "is not a directory"]),
    ("state dir under a file", edit(seat, _state_dir_under_file), ["[unit] state_dir", "cannot be created"]),
    ("journal is a directory", edit(seat, _journal_is_dir), ["[unit] state_dir", "journal.db is not a file"]),
    ("journal is garbage", edit(seat, _journal_garbage), ["[unit] state_dir", "journal.db cannot be read"]),
    ("journal lost beside its segments", edit(seat, _journal_lost_beside_segments),
     ["[unit] state_dir", "journal.db is missing", "journal-1-40.db"]),
    ("serial shoe port missing", edit(dealer, _set("hardware/card_shoe", {"backend": "serial", "port": "/dev/ttyNOPE9"})),
     ["[hardware.card_shoe]", "/dev/ttyNOPE9", "does not exist"]),
    ("baud 12345", edit(dealer, _set("hardware/card_shoe", lambda t: {"backend": "serial", "port": pty_path(t),
                                                                      "baudrate": 12345})),
     ["[hardware.card_shoe]", "baud rate 12345"]),
    ("serial reader port missing", edit(seat, _set("hardware/chip_reader", {"backend": "serial", "port": "/dev/ttyNOPE8",
                                                                            "spots": SEAT_SPOTS})),
     ["[hardware.chip_reader]", "/dev/ttyNOPE8"]),
    ("unknown mock option", edit(dealer, _set("hardware/console/colour", "red")), ["[hardware.console]", "'colour'"]),
    ("unknown serial option", edit(dealer, _set("hardware/card_shoe", lambda t: {"backend": "serial", "port": pty_path(t),
                                                                                 "parity": "E"})),
     ["[hardware.card_shoe]", "'parity'"]),
    ("two lamps on one pin", edit(seat, _set("hardware/lamps", {"backend": "gpio", "pin_factory": "mock",
                                                               "lamps": {"progressive": 17, "bets_locked": 17}})),
     ["[hardware.lamps]", "GPIO17 is used twice"]),
    ("lamp pin out of range", edit(seat, _set("hardware/lamps", {"backend": "gpio", "pin_factory": "mock",
                                                                "lamps": {"progressive": 99}})),
     ["[hardware.lamps]", "99"]),
    ("two buttons on one pin", edit(dealer, _set("hardware/console", {"backend": "gpio", "pin_factory": "mock",
                                                                     "buttons": {"open_bets": 5, "no_more_bets": 5}})),
     ["[hardware.console]", "GPIO5 is used twice"]),
    ("unknown pin factory", edit(dealer, _set("hardware/console", {"backend": "gpio", "pin_factory": "wishful",
                                                                  "buttons": {"open_bets": 5}})),
     ["[hardware.console]", "wishful"]),
    ("serial console", edit(dealer, _set("hardware/console", {"backend": "serial", "port": "/dev/null"})),
     ["[hardware.console]", "no 'console' port"]),
    ("mock reader without spots", edit(seat, _set("hardware/chip_reader", {"backend": "mock"})),
     ["[hardware.chip_reader]", "'spots'"]),
    ("tls ca garbage", edit(seat, _tls(ca=lambda t: garbage(t, "ca.pem"))), ["[link.tls] ca", "not a PEM"]),
    ("tls ca empty", edit(seat, _tls(ca=lambda t: garbage(t, "ca.pem", b""))), ["[link.tls] ca"]),
    ("tls cert garbage", edit(seat, _tls(cert=lambda t: garbage(t, "c.pem"))), ["[link.tls] cert", "c.pem"]),
    ("tls key garbage", edit(seat, _tls(key=lambda t: garbage(t, "k.key"))), ["[link.tls] cert", "k.key"]),
    ("tls key of another cert", edit(seat, _tls(key=lambda t: str(pki(t) / "other.key"))),
     ["[link.tls] cert", "other.key"]),
    ("tls key encrypted", edit(seat, _tls(key=lambda t: str(pki(t) / "locked.key"))), ["[link.tls] key", "passphrase"]),
    ("tls ca dangling link", edit(seat, _tls(ca=lambda t: (os.symlink(t / "gone.pem", t / "ca-link.pem"),
                                                           str(t / "ca-link.pem"))[1])),
     ["[link.tls] ca", "ca-link.pem is a broken symlink to", "gone.pem"]),
    ("password over plain mqtt", edit(seat, _set("link", {"broker": "mqtt://127.0.0.1:1883", "username": "table-1/seat-2",
                                                        "password": "pw"})),
     ["[link] password", "mqtts://", "allow_insecure"]),
    ("allow_insecure not a bool", edit(seat, _set("link", {"broker": "mqtt://127.0.0.1:1883", "allow_insecure": "yes"})),
     ["[link] allow_insecure", "true or false"]),
    ("jackpot db is a directory", edit(jackpot, _jackpot_db("dir")), ["[jackpot] db", "is a directory"]),
    ("jackpot db is garbage", edit(jackpot, _jackpot_db("garbage")), ["[jackpot] db", "cannot be read"]),
    ("jackpot db under a file", edit(jackpot, _jackpot_db("under")), ["[jackpot] db", "plain is not a directory"]),
]

RAW: list[tuple[str, Callable[[Path], bytes], list[str]]] = [
    ("config not UTF-8", lambda t: b"[unit]\nrole = \"seat\"\nid = \"s\xff\"\n", ["not UTF-8"]),
    ("config 3000-deep TOML", lambda t: b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n", ["nested too deeply"]),
    ("config not TOML", lambda t: b"[unit\nrole = seat\n", ["not valid TOML"]),
    ("shipped seat example", lambda t: (EXAMPLES / "seat.toml").read_bytes(), ["/etc/betbox/"]),
    ("config empty", lambda t: b"", ["unit: missing"]),
]


def check_and_start(path: Path, capsys) -> tuple[tuple[int, str], tuple[int | None, str]]:
    """(``--check``'s code and stderr, run here; a start's code and stderr, run as a process:
    ``None`` if it was still running after 20 s, i.e. it started)."""
    checked = main(["run", "--config", str(path), "--check"])
    check_err = capsys.readouterr().err
    try:
        proc = subprocess.run([sys.executable, "-m", "firmware", "run", "--config", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired as exc:
        return (checked, check_err), (None, f"the unit started: {exc.stderr!r}")
    return (checked, check_err), (proc.returncode, proc.stderr)


@pytest.mark.parametrize("name, make, named", BAD, ids=[b[0] for b in BAD])
def test_check_refuses_what_a_start_refuses_with_the_same_message(tmp_path, capsys, name, make, named):
    if "tls" in name and NEEDS_OPENSSL:
        pytest.skip("needs the openssl command")
    path = tmp_path / "unit.toml"
    path.write_text(toml(make(tmp_path)))
    (checked, check_err), (started, start_err) = check_and_start(path, capsys)
    assert checked == 2, check_err
    assert str(path) in check_err and "configuration OK" not in check_err
    for text in named:
        assert text in check_err, check_err
    assert (started, start_err) == (2, check_err)     # the start refuses, saying the same


@pytest.mark.parametrize("name, make, named", RAW, ids=[r[0] for r in RAW])
def test_check_refuses_a_file_that_is_no_configuration(tmp_path, capsys, name, make, named):
    path = tmp_path / "unit.toml"
    path.write_bytes(make(tmp_path))
    (checked, check_err), (started, start_err) = check_and_start(path, capsys)
    assert checked == 2 and "Traceback" not in check_err, check_err
    assert str(path) in check_err
    for text in named:
        assert text in check_err, check_err
    assert (started, start_err) == (2, check_err)


def test_the_table_has_at_least_thirty_bad_configurations():
    assert len(BAD) + len(RAW) >= 30


def test_the_shipped_seat_example_names_its_chips_file_when_its_tls_files_are_there(tmp_path, capsys):
    """The shipped example's /etc/betbox/chips.csv was neither shipped nor documented: a
    check that said OK let systemd crash-loop the unit. Now --check names it."""
    if NEEDS_OPENSSL:
        pytest.skip("needs the openssl command")
    d = pki(tmp_path)
    text = (EXAMPLES / "seat.toml").read_text()
    for name, file in (("ca.pem", "ca.pem"), ("table-1-seat-3.pem", "client.pem"), ("table-1-seat-3.key", "client.key")):
        text = text.replace(f"/etc/betbox/{name}", str(d / file))
    text = text.replace("/var/lib/betbox/seat", str(tmp_path / "state"))
    path = tmp_path / "seat.toml"
    path.write_text(text)
    assert main(["run", "--config", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "[seat] chips: cannot read the chip registry /etc/betbox/chips.csv" in err
    assert "docs/chips.md" in err


# -- everything --check accepts starts -------------------------------------------------------

def start_briefly(path: Path, tmp: Path, ready: str) -> str:
    """Run ``betbox run --config path`` as its own process until it says ``ready``, then stop it
    with SIGTERM; the process must exit 0. Returns its output."""
    log = tmp / f"{path.stem}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "firmware", "run", "--config", str(path)], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while ready not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            text = log.read_text()
            assert proc.poll() is None and ready in text, text
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    return log.read_text()


def _good(tmp: Path, broker_port: int) -> list[tuple[str, dict, str]]:
    gpio_seat = seat(tmp)
    gpio_seat["unit"]["id"] = "seat-4"
    gpio_seat["unit"]["state_dir"] = str(tmp / "seat-4")
    gpio_seat["hardware"]["lamps"] = {"backend": "gpio", "pin_factory": "mock",
                                      "lamps": {"progressive": 17, "bets_locked": 27}}
    serial_dealer = dealer(tmp)
    serial_dealer["hardware"]["card_shoe"] = {"backend": "serial", "port": pty_path(tmp), "baudrate": 115200}
    serial_dealer["hardware"]["console"] = {"backend": "gpio", "pin_factory": "mock",
                                            "buttons": {"open_bets": 5, "no_more_bets": 6}}
    linked_seat = seat(tmp)
    linked_seat["unit"]["state_dir"] = str(tmp / "seat-linked")
    linked_seat["link"] = {"broker": f"mqtt://127.0.0.1:{broker_port}", "username": "table-1/seat-2",
                           "password": "pw", "allow_insecure": True}
    return [("seat", seat(tmp), "running"), ("dealer", dealer(tmp), "running"),
            ("seat-gpio", gpio_seat, "running"), ("dealer-serial", serial_dealer, "running"),
            ("seat-linked", linked_seat, "running"), ("jackpot", jackpot(tmp, broker_port), "jackpot controller")]


def test_every_configuration_check_accepts_starts_as_a_process(tmp_path, capsys):
    from tests.link.broker import Broker

    broker = Broker(tmp_path / "mosquitto", users={"table-1/seat-2": "pw"}).start()
    try:
        for name, data, ready in _good(tmp_path, broker.port):
            path = tmp_path / f"{name}.toml"
            path.write_text(toml(data))
            assert main(["run", "--config", str(path), "--check"]) == 0, capsys.readouterr().err
            assert "configuration OK" in capsys.readouterr().out
            start_briefly(path, tmp_path, ready)
    finally:
        broker.stop()


def test_the_shipped_examples_pass_check_and_start_once_their_files_are_in_place(tmp_path, capsys):
    """docs/examples/*.toml as shipped, with /etc/betbox and /var/lib/betbox moved under a
    temporary directory (the chips.csv shipped beside them, a test PKI for the TLS files) and
    broker.local:8883 a real mosquitto with TLS, client certificates and passwords. The
    seat's [display] is left out: there is no screen here."""
    if NEEDS_OPENSSL:
        pytest.skip("needs the openssl command")
    from tests.link.broker import Broker

    d = pki(tmp_path)
    etc = tmp_path / "etc"
    etc.mkdir()
    shutil.copy(EXAMPLES / "chips.csv", etc / "chips.csv")
    shutil.copy(d / "ca.pem", etc / "ca.pem")
    for unit in ("table-1-dealer", "table-1-seat-3", "jackpot-main"):
        shutil.copy(d / "client.pem", etc / f"{unit}.pem")
        shutil.copy(d / "client.key", etc / f"{unit}.key")
    users = {"table-1/dealer": "change-me", "table-1/seat-3": "change-me", "jackpot/main": "change-me"}
    broker = Broker(tmp_path / "mosquitto", users=users, acl=(ROOT / "docs" / "mqtt" / "acl").read_text(),
                    tls={"ca": d / "ca.pem", "cert": d / "broker.pem", "key": d / "broker.key"}).start()
    try:
        for role, ready in (("jackpot", "jackpot controller"), ("dealer", "running"), ("seat", "running")):
            text = (EXAMPLES / f"{role}.toml").read_text()
            text = text.replace("/etc/betbox/", f"{etc}/").replace("/var/lib/betbox/", f"{tmp_path}/var/")
            text = text.replace("broker.local:8883", f"127.0.0.1:{broker.port}")
            if role == "seat":
                head, _, rest = text.partition("[display]")
                text = head + rest[rest.index("\n["):]
            path = tmp_path / f"{role}.toml"
            path.write_text(text)
            assert main(["run", "--config", str(path), "--check"]) == 0, capsys.readouterr().err
            assert "configuration OK" in capsys.readouterr().out
            start_briefly(path, tmp_path, ready)
    finally:
        broker.stop()


# -- files a unit's user cannot read or write ---------------------------------------------------

def check_as(user_id: int, path: Path) -> tuple[int, str]:
    """``betbox run --config path --check`` in a child that has dropped to ``user_id`` (the
    interpreter lives where that user cannot read, so the child forks from this one)."""
    from firmware.cli import build_parser

    build_parser()                                    # imports every command module
    main(["run", "--config", str(path), "--check"])   # as root first: every lazy import done
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                      # the child: never returns to pytest
        code = 99
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user_id)
            os.setuid(user_id)
            sys.stderr = os.fdopen(write, "w")
            sys.stdout = open(os.devnull, "w")
            code = main(["run", "--config", str(path), "--check"])
            sys.stderr.flush()
        except BaseException:                         # told to the parent, which fails the test
            import traceback
            traceback.print_exc(file=os.fdopen(write, "w", closefd=False))
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as r:
        err = r.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), err


@pytest.mark.skipif(os.geteuid() != 0 or NEEDS_OPENSSL, reason="needs root (to drop to another user) and openssl")
def test_files_the_units_user_cannot_read_or_write_are_refused_by_check(tmp_path):
    import tempfile

    nobody = 65534
    base = Path(tempfile.mkdtemp(prefix="betbox-perm-", dir="/tmp"))
    try:
        base.chmod(0o755)
        d = pki(base)
        d.chmod(0o755)
        for f in d.iterdir():
            f.chmod(0o644)
        chips = base / "chips.csv"
        chips.write_text(CHIPS)
        state = base / "state"
        state.mkdir()
        data = seat(base)
        data["unit"]["state_dir"] = str(state)
        path = base / "seat.toml"

        def check(**tls: str) -> tuple[int, str]:
            if tls:
                with_tls(base, data, **tls)
            path.write_text(toml(data))
            path.chmod(0o644)
            return check_as(nobody, path)

        chips.chmod(0o600)                          # root's, unreadable to the unit's user
        state.chmod(0o777)
        code, err = check()
        assert code == 2 and f"[seat] chips: cannot read the chip registry {chips}: Permission denied" in err, err
        chips.chmod(0o644)
        state.chmod(0o755)                          # root's, not writable by the unit's user
        code, err = check()
        assert code == 2 and f"[unit] state_dir: {state} is not writable by this user" in err, err
        state.chmod(0o777)
        (d / "client.key").chmod(0o600)             # the TLS key readable by root only
        code, err = check(key=str(d / "client.key"))
        # said when the configuration is read (firmware.engine.strict.file_problem), before preflight opens it
        assert code == 2 and f"[link.tls] key: {d / 'client.key'} is not readable by this user (uid " in err, err
        (d / "client.key").chmod(0o644)
        code, err = check(key=str(d / "client.key"))
        assert code == 0, err                       # and with every file in reach it passes
    finally:
        shutil.rmtree(base, ignore_errors=True)
