#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Shows what an agent state directory holds: the snapshot's head (format, generation, the last
# journal record it includes) and every record of the journal beside it (sequence, generation,
# what it changes, whether the restore replays it), and how the journal ends (clean, a torn
# last record that the restore drops, or corruption). Read-only; safe while the gateway runs.
#
#   tools/srv6gw-journal.py /var/lib/srv6gw/state.json            one line per record
#   tools/srv6gw-journal.py /var/lib/srv6gw/state.json --decode   and each record's content
#                                                                 (protoc text format)
# Format: lib/agent/journal.hpp. Exit code 0 clean or torn tail, 1 corrupt or unreadable.
import argparse
import json
import os
import struct
import subprocess
import sys
import zlib

MAGIC = 0x314A5253
HEADER = 24
JOURNAL_FORMAT = b"srv6gw-agent-journal/1\n"
SECTIONS = [(1, "config changes", "srv6gw.v1.ApplyRequest"),
            (2, "engine parameters", "srv6gw.v1.EngineParams"),
            (4, "paths down", None)]
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def snapshot_head(path):
    """format, generation, journal-sequence from the members before "config"."""
    with open(path, "rb") as f:
        head = f.read(4096).decode(errors="replace")
    cut = head.find('"config"')
    text = head[:cut].rstrip().rstrip(",") + "}" if cut > 0 else head
    try:
        h = json.loads(text)
    except ValueError:
        return None
    return h.get("format"), h.get("generation"), h.get("journal-sequence", 0)


def protoc_text(message, data):
    r = subprocess.run(["protoc", f"--proto_path={os.path.join(SRC, 'proto')}",
                        f"--decode={message}", "srv6gw/v1/srv6gw.proto"], input=data,
                       capture_output=True)
    if r.returncode != 0:
        return f"(protoc could not decode: {r.stderr.decode().strip()})"
    return r.stdout.decode().rstrip()


def paths_down(data):
    (n,), at, out = struct.unpack_from("<I", data), 4, []
    for _ in range(n):
        (pid, plen) = struct.unpack_from("<HH", data, at)
        at += 4
        policy = data[at:at + plen].decode()
        at += plen
        (slen,) = struct.unpack_from("<H", data, at)
        at += 2
        sl = data[at:at + slen].decode()
        at += slen
        out.append(f"{policy}/{sl} (path id {pid})")
    return ", ".join(out) or "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("state", help="the state file (--agent-state); its journal is STATE.journal")
    ap.add_argument("--decode", action="store_true", help="print each record's content")
    a = ap.parse_args()

    after = 0
    if os.path.exists(a.state):
        head = snapshot_head(a.state)
        if head is None:
            print(f"snapshot {a.state}: head unreadable")
        else:
            fmt, gen, after = head
            print(f"snapshot {a.state}: {fmt}, generation {gen}, includes journal records up to "
                  f"{after}, {os.path.getsize(a.state)} bytes")
    else:
        print(f"snapshot {a.state}: none")
    jpath = a.state + ".journal"
    if not os.path.exists(jpath):
        print(f"journal {jpath}: none")
        return 0
    with open(jpath, "rb") as f:
        data = f.read()
    if not data.startswith(JOURNAL_FORMAT):
        print(f"journal {jpath}: not a journal of format {JOURNAL_FORMAT.decode().strip()}")
        return 1
    print(f"journal {jpath}: {len(data)} bytes")
    at, replay, expected = len(JOURNAL_FORMAT), 0, None
    while at < len(data):
        rest = data[at:]
        if len(rest) < HEADER:
            print(f"  @{at}: torn last record ({len(rest)} bytes): dropped at restore")
            break
        magic, length, seq, hcrc, bcrc = struct.unpack_from("<IIQII", rest)
        if magic != MAGIC or hcrc != zlib.crc32(rest[:16]):
            if rest.count(0) == len(rest):
                print(f"  @{at}: {len(rest)} zero bytes: torn last record, dropped at restore")
                break
            print(f"  @{at}: CORRUPT: bad record header; the restore stops here")
            return 1
        if len(rest) < HEADER + length:
            print(f"  @{at}: torn last record (sequence {seq}, {len(rest)} of "
                  f"{HEADER + length} bytes): dropped at restore")
            break
        body = rest[HEADER:HEADER + length]
        if zlib.crc32(body) != bcrc:
            if len(rest) == HEADER + length:
                print(f"  @{at}: torn last record (sequence {seq}, checksum): dropped at restore")
                break
            print(f"  @{at}: CORRUPT: sequence {seq} fails its checksum; the restore stops here")
            return 1
        if expected is not None and seq != expected:
            print(f"  @{at}: CORRUPT: sequence {seq} where {expected} was expected")
            return 1
        expected = seq + 1
        (gen, sections) = struct.unpack_from("<QB", body)
        off, parts, decoded = 9, [], []
        for bit, name, message in SECTIONS:
            if sections & bit:
                (n,) = struct.unpack_from("<I", body, off)
                piece = body[off + 4:off + 4 + n]
                off += 4 + n
                if message is None:
                    parts.append(f"{name}: {paths_down(piece)}")
                else:
                    parts.append(f"{name} ({n} bytes)")
                    if a.decode:
                        decoded.append(protoc_text(message, piece))
        state = "in the snapshot" if seq <= after else "replayed"
        replay += seq > after
        print(f"  @{at}: sequence {seq}, generation {gen}, {'; '.join(parts) or 'empty'} "
              f"[{state}]")
        for d in decoded:
            print("    " + d.replace("\n", "\n    "))
        at += HEADER + length
    print(f"restore: the snapshot + {replay} journal records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
