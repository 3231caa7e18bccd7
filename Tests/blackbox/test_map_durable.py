"""Durable maps (docs/protocol.md, "Keyed subjects: maps"): a map created with `durable: true`
keeps its keys across a `kill -9` (every acknowledged change, with `fsync = "always"`) and a
clean stop, with its epoch, seq, `ttl_s` and `max_keys`; keys that expire while runneld is
stopped go at the next start as `expired`; a client at the map's latest position resumes it,
any older one gets a fresh snapshot.
"""

import sqlite3
import time

from runneld_process import LineClient
from test_map import create_map, entry, remove, subscribe, until_synced, values, write

DURABLE = 'data_dir = "DATA_DIR"\nfsync = "always"\n'


class TestDurableMap:
    def test_keys_survive_kill_9_and_resume_at_the_latest_position(self, runneld):
        first = runneld(DURABLE)
        client = LineClient(first.port)
        create_map(client, "dm.hosts", durable=True, max_keys=10, ttl_s=3600)
        for key, value in [("web1", {"load": 1}), ("web2", 2), ("web3", 3)]:
            write(client, "dm.hosts", key, value)
        remove(client, "dm.hosts", "web2")
        write(client, "dm.hosts", "web1", {"load": 9})
        before = entry(client, "dm.hosts")
        assert before["durable"] is True and before["keys"] == 2, before
        client.close()
        first.kill()

        second = runneld(DURABLE, directory=first.directory)
        client = LineClient(second.port)
        after = entry(client, "dm.hosts")
        assert after["pos"] == before["pos"] and after["keys"] == 2, (before, after)
        assert (after["ttl_s"], after["max_keys"], after["durable"]) == (3600, 10, True), after
        # The same shape matches; another one is refused, naming what it is.
        assert client.request({"op": "create", "subject": "dm.hosts", "kind": "map", "durable": True,
                               "max_keys": 10, "ttl_s": 3600})["ok"]
        mismatch = client.request({"op": "create", "subject": "dm.hosts", "kind": "map", "max_keys": 10,
                                   "ttl_s": 3600})
        assert mismatch["code"] == "kind_mismatch" and "durable" in mismatch["message"], mismatch
        snapshot = subscribe(client, "dm.hosts", "s", positions=True) and until_synced(client, "s", pos=before["pos"])
        assert values(snapshot) == {"web1": {"load": 9}, "web3": 3}, snapshot
        # At the latest position: resumed, nothing but `synced`. Older: what was between is not
        # kept across a restart, so a fresh snapshot.
        reply = client.request({"op": "sub", "subject": "dm.hosts", "sid": "r", "from": before["pos"]})
        assert reply["ok"] and reply["resumed"] is True, reply
        assert client.line() == {"ev": "synced", "sid": "r", "pos": before["pos"]}
        older = before["pos"].rpartition(":")[0] + ":2"
        reply = client.request({"op": "sub", "subject": "dm.hosts", "sid": "o", "from": older})
        assert reply["ok"] and reply["resumed"] is False, reply
        assert values(until_synced(client, "o", pos=before["pos"])) == {"web1": {"load": 9}, "web3": 3}
        # Changes go on from the stored seq, and are kept too.
        write(client, "dm.hosts", "web4", 4)
        assert entry(client, "dm.hosts")["pos"].endswith(":%d" % (int(before["pos"].rpartition(":")[2]) + 1))
        client.close()
        second.stop(keep_directory=True)

        third = runneld(DURABLE, directory=first.directory)
        client = LineClient(third.port)
        subscribe(client, "dm.hosts", "s")
        assert values(until_synced(client, "s")) == {"web1": {"load": 9}, "web3": 3, "web4": 4}
        client.close()
        third.stop()

    def test_keys_that_expire_while_stopped_go_at_the_next_start(self, runneld):
        first = runneld(DURABLE)
        client = LineClient(first.port)
        create_map(client, "dm.short", durable=True, ttl_s=1)
        create_map(client, "dm.long", durable=True)
        write(client, "dm.short", "gone", 1)
        write(client, "dm.long", "kept", 1)
        seq_before = int(entry(client, "dm.short")["pos"].rpartition(":")[2])
        client.close()
        first.stop(keep_directory=True)
        time.sleep(1.5)

        second = runneld(DURABLE, directory=first.directory)
        client = LineClient(second.port)
        # Expired at start, the removal journalled: its seq is taken, and it stays gone.
        short = entry(client, "dm.short")
        assert short["keys"] == 0 and int(short["pos"].rpartition(":")[2]) == seq_before + 1, short
        assert entry(client, "dm.long")["keys"] == 1
        client.close()
        second.stop(keep_directory=True)

        third = runneld(DURABLE, directory=first.directory)
        client = LineClient(third.port)
        assert entry(client, "dm.short") == {**short, "subscribers": 0, "published": 0}
        client.close()
        third.stop()

    def test_a_version_2_journal_is_read_and_upgraded_for_maps(self, runneld, tmp_path):
        # A journal as runneld wrote it before maps (schema version 2): one durable replay
        # subject with two values.
        data = tmp_path / "data"
        data.mkdir()
        database = sqlite3.connect(data / "runnel.db")
        database.executescript("""
            CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE subjects(
                id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, capacity INTEGER,
                epoch TEXT NOT NULL, seq INTEGER NOT NULL, terminal TEXT, message TEXT, retain_ms INTEGER);
            CREATE TABLE vals(
                subject INTEGER NOT NULL, seq INTEGER NOT NULL, value BLOB NOT NULL, ts INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (subject, seq)) WITHOUT ROWID;
            INSERT INTO meta VALUES ('schema', '2'), ('open', '0');
            INSERT INTO subjects (id, name, kind, capacity, epoch, seq) VALUES (1, 'dm.old', 'replay', 5, 'OldEpoch', 2);
            INSERT INTO vals VALUES (1, 1, '1', 1000), (1, 2, '2', 2000);
            """)
        database.close()
        d = runneld(DURABLE, directory=str(tmp_path))
        client = LineClient(d.port)
        assert entry(client, "dm.old")["pos"] == "OldEpoch:2"
        create_map(client, "dm.new", durable=True)
        write(client, "dm.new", "k", 1)
        client.close()
        d.stop(keep_directory=True)
        database = sqlite3.connect(data / "runnel.db")
        assert database.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("3",)
        assert database.execute("SELECT key, value FROM keyvals").fetchall() == [("k", b"1")]
        database.close()
