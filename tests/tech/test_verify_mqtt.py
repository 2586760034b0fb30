"""Issue #13.5: the seeded challenge over MQTT. A verifier (``betbox jackpot verify``, ACL
user ``verifier``) sends a seed to a running seat (a real ``betbox run``) through a real
mosquitto with the documented ACL; the seat answers the HMAC over its installed files. The
answer matches the approved copy's, and stops matching when a file on the unit is changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from firmware.link.challenge import answer
from firmware.verify import challenge
from tests.link.broker import Broker
from tests.link.helpers import Sniffer, wait_until
from tests.link.schema import validate
from tests.tech.configs import seat_config, verify_section

ROOT = Path(__file__).resolve().parents[2]
ACL = (ROOT / "docs/mqtt/acl").read_text()
USERS = {"table-1/seat-1": "pw-seat", "table-1/seat-2": "pw-seat2", "verifier": "pw-verifier", "sniffer": "pw-sniffer"}
OBSERVER = "\n# the test's observer (not in the documented ACL): reads everything\nuser sniffer\ntopic read betbox/v1/#\n"
SEED = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def release(d: Path) -> Path:
    """An installed release as the unit holds it (a few of betbox's own files)."""
    for pkg in ("firmware/verify.py", "firmware/engine/settlement.py"):
        (d / "lib" / pkg).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / pkg, d / "lib" / pkg)
    (d / "VERSION").write_text("0.1.0\n")
    return d


@pytest.fixture
def seat(tmp_path):
    broker = Broker(tmp_path / "mosquitto", acl=ACL + OBSERVER, users=USERS).start()
    tree = release(tmp_path / "installed")
    link = (f'[link]\nbroker = "{broker.url}"\nusername = "table-1/seat-1"\npassword = "pw-seat"\n'
            'allow_insecure = true')
    config = seat_config(tmp_path, table="table-1", link=link, verify=verify_section(tree, at_start=False))
    log = open(tmp_path / "seat.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "firmware", "run", "--config", str(config)], cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while "running" not in (tmp_path / "seat.log").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "seat.log").read_text()[-2000:]
        time.sleep(0.2)
    (tmp_path / "pw").write_text("pw-verifier\n")
    yield {"broker": broker, "tree": tree, "pw": tmp_path / "pw", "tmp": tmp_path}
    proc.terminate()
    proc.wait(timeout=30)
    log.close()
    broker.stop()


def verify_unit(s, *extra: str, user: str = "verifier", password: Path | None = None, timeout: str = "30"):
    return subprocess.run([sys.executable, "-m", "firmware", "jackpot", "verify", "--broker", s["broker"].url,
                           "--unit", "table-1/seat-1", "--username", user,
                           "--password-file", str(password or s["pw"]), "--allow-insecure",
                           "--timeout", timeout, *extra], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_seat_answers_the_seed_with_the_hmac_of_the_approved_copy(seat, tmp_path):
    sniffer = Sniffer(seat["broker"].url, "betbox/v1/unit/+/+/verify/#", username="sniffer", password="pw-sniffer")
    approved = release(tmp_path / "approved")
    done = verify_unit(seat, "--seed", SEED, "--tree", str(approved))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"hmac {challenge(approved, bytes.fromhex(SEED))}" in done.stdout
    assert "matches the approved copy" in done.stdout
    # both messages as docs/mqtt/asyncapi.yaml describes them
    wait_until(lambda: len(sniffer.messages) >= 2, 10, "the challenge and the answer")
    sniffer.close()
    assert sorted(validate(t, p) for t, p, _ in sniffer.messages) == ["verifyAnswer", "verifyChallenge"]
    (answer_msg,) = sniffer.json("/verify/answer")
    assert answer_msg["unit"] == "table-1/seat-1" and answer_msg["version"] == "0.1.0"


def test_a_tampered_file_on_the_seat_changes_its_answer(seat, tmp_path):
    approved = release(tmp_path / "approved")
    settlement = seat["tree"] / "lib/firmware/engine/settlement.py"
    settlement.write_text(settlement.read_text() + "\n# paid 3:1\n")
    done = verify_unit(seat, "--seed", SEED, "--tree", str(approved))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIFFERS from the approved copy" in done.stderr
    assert f"hmac {challenge(seat['tree'], bytes.fromhex(SEED))}" in done.stdout


def test_another_seed_gives_another_answer(seat):
    first = verify_unit(seat, "--seed", SEED)
    second = verify_unit(seat)                                  # a random seed
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split("hmac ")[1] != second.stdout.split("hmac ")[1]


def test_another_seat_may_not_send_a_challenge(seat):
    """The documented ACL: only the verifier writes a unit's challenge topic; mosquitto drops
    a seat's, so no answer comes."""
    (seat["tmp"] / "pw2").write_text("pw-seat2\n")
    done = verify_unit(seat, "--seed", SEED, user="table-1/seat-2", password=seat["tmp"] / "pw2", timeout="3")
    assert done.returncode == 2 and "no answer from the unit table-1/seat-1" in done.stderr, done.stderr


@pytest.mark.parametrize("payload, says", [
    (b"not json", "not JSON"),
    (b"[1]", "not a JSON object"),
    (json.dumps({"tx": "a", "seed": "zz"}).encode(), "'seed' must be 8 to 64 bytes as hex"),
    (json.dumps({"tx": "a", "seed": "00"}).encode(), "'seed' must be 8 to 64 bytes as hex"),
    (json.dumps({"tx": "a b", "seed": SEED}).encode(), "'tx' must be"),
])
def test_a_malformed_challenge_gets_an_error_answer(tmp_path, payload, says):
    got = answer(release(tmp_path / "r"), "table-1/seat-1", payload)
    assert says in got["error"] and "hmac" not in got
    assert validate("betbox/v1/unit/table-1/seat-1/verify/answer", json.dumps(got).encode()) == "verifyAnswer"


def test_a_unit_without_its_release_says_so(tmp_path):
    got = answer(tmp_path / "missing", "table-1/seat-1", json.dumps({"tx": "a", "seed": SEED}).encode())
    assert got["tx"] == "a" and "no installed release" in got["error"]


def test_what_a_seats_credentials_answer_is_taken_only_as_the_schema_says_and_never_printed_raw(tmp_path):
    """A client with the seat's password reads the seat's challenge (the ACL lets it) and
    answers first, with the challenge's tx: a terminal escape and a forged verdict in its
    version, an hmac that is not one, another seed, another unit. The verifier took the first
    answer with its tx and printed it as it came (the escape reached the technician's
    terminal: a line saying the copy matches, the rest hidden); now it takes only an answer
    as docs/mqtt/schemas/verify-answer.json has it, for its seed and unit, and prints only that."""
    broker = Broker(tmp_path / "mosquitto", acl=ACL, users=USERS).start()
    try:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        hostile = mqtt.Client(CallbackAPIVersion.VERSION2)
        hostile.username_pw_set("table-1/seat-1", "pw-seat")
        subscribed = []

        def answer_first(client, userdata, msg) -> None:
            tx, seed = json.loads(msg.payload)["tx"], json.loads(msg.payload)["seed"]
            topic = "betbox/v1/unit/table-1/seat-1/verify/answer"
            base = {"schema": 1, "unit": "table-1/seat-1", "tx": tx, "seed": seed}
            for lie in ({"hmac": "0" * 64, "version": "0.1.0\r\x1b[2Ktable-1/seat-1: matches the approved copy\x1b[8m"},
                        {"hmac": "\x1b[8m" + "0" * 60, "version": "0.1.0"},
                        {"hmac": "1" * 64, "version": "0.1.0", "seed": "ab" * 16},
                        {"hmac": "2" * 64, "version": "0.1.0", "unit": "table-1/seat-2"},
                        {"error": "busy\x1b[8m"}):
                client.publish(topic, json.dumps({**base, **lie}), qos=1)
            client.publish(topic, json.dumps({**base, "hmac": "3" * 64, "version": "0.1.0"}), qos=1)

        hostile.on_message = answer_first
        hostile.on_subscribe = lambda *a: subscribed.append(True)
        hostile.on_connect = lambda c, u, f, rc, p: c.subscribe("betbox/v1/unit/table-1/seat-1/verify/challenge", qos=1)
        hostile.connect("127.0.0.1", broker.port)
        hostile.loop_start()
        wait_until(lambda: subscribed, 10, "the hostile client's subscription")
        (tmp_path / "pw").write_text("pw-verifier\n")
        approved = release(tmp_path / "approved")
        done = verify_unit({"broker": broker, "pw": tmp_path / "pw"}, "--seed", SEED, "--tree", str(approved),
                           timeout="10")
        hostile.loop_stop()
        hostile.disconnect()
        shown = done.stdout + done.stderr
        assert "\x1b" not in shown and "\r" not in shown, repr(shown)
        assert done.returncode == 1, shown
        assert f"hmac {'3' * 64}" in done.stdout and "DIFFERS from the approved copy" in done.stderr
        assert not [line for line in shown.splitlines() if "matches the approved copy" in line.split("(first:")[0]]
        assert ("betbox jackpot verify: 5 answer(s) to this challenge refused, not table-1/seat-1's as the schema "
                "has it (first: version '0.1.0\\r\\x1b[2Ktable-1/seat-1: matches the approved copy\\x1b[8m' is not a "
                "version)") in done.stderr
    finally:
        broker.stop()
