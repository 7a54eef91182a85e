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

# Format 2 (current): "SRJ2" | length | sequence | durable sequence | header CRC | body CRC.
# Format 1 (read): "SRJ1" | length | sequence | header CRC | body CRC.
FORMATS = {b"srv6gw-agent-journal/2\n": (2, 0x324A5253, 32),
           b"srv6gw-agent-journal/1\n": (1, 0x314A5253, 24)}
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
    line = data[:data.find(b"\n") + 1]
    if line not in FORMATS:
        print(f"journal {jpath}: not a journal of format srv6gw-agent-journal/2 (or /1)")
        return 1
    version, magic_expected, header = FORMATS[line]
    print(f"journal {jpath}: format {version}, {len(data)} bytes")

    def header_at(rest):
        """(magic, length, sequence, durable, header ok, body CRC) of the record at rest."""
        if version == 2:
            magic, length, seq, durable, hcrc, bcrc = struct.unpack_from("<IIQQII", rest)
        else:
            (magic, length, seq, hcrc, bcrc), durable = struct.unpack_from("<IIQII", rest), 0
        ok = magic == magic_expected and hcrc == zlib.crc32(rest[:header - 8])
        return length, seq, durable, ok, bcrc

    def bad(at, why, ends_file, last_seq):
        """Torn tail (0) or corruption (1), by the rules of lib/agent/journal.hpp."""
        rest = data[at:]
        if version == 1:
            if ends_file:
                print(f"  @{at}: torn last record ({why}): dropped at restore")
                return 0
            print(f"  @{at}: CORRUPT: {why}; the restore stops here")
            return 1
        first, marked = (last_seq + 1) if last_seq else after + 1, 0
        magic = struct.pack("<I", magic_expected)
        p = data.find(magic, at + 1)
        while p >= 0 and p + header <= len(data):
            _, _, durable, ok, _ = header_at(data[p:])
            if ok:
                marked = max(marked, durable)
            p = data.find(magic, p + 1)
        if marked >= first:
            print(f"  @{at}: CORRUPT: {why}; a later record says sequence {marked} was "
                  "durable; the restore stops here")
            return 1
        print(f"  @{at}: unsynced tail ({why}; {len(rest)} bytes, no record after it known "
              "durable): dropped at restore")
        return 0

    at, replay, expected, last_seq = len(line), 0, None, 0
    while at < len(data):
        rest = data[at:]
        if len(rest) < header:
            print(f"  @{at}: torn last record ({len(rest)} bytes): dropped at restore")
            break
        length, seq, durable, ok, bcrc = header_at(rest)
        if not ok:
            if rest.count(0) == len(rest):
                print(f"  @{at}: {len(rest)} zero bytes: torn last record, dropped at restore")
                break
            rc = bad(at, "bad record header", False, last_seq)
            if rc:
                return rc
            break
        if len(rest) < header + length:
            print(f"  @{at}: torn last record (sequence {seq}, {len(rest)} of "
                  f"{header + length} bytes): dropped at restore")
            break
        body = rest[header:header + length]
        if zlib.crc32(body) != bcrc:
            rc = bad(at, f"sequence {seq} fails its checksum", len(rest) == header + length,
                     last_seq)
            if rc:
                return rc
            break
        if expected is not None and seq != expected:
            print(f"  @{at}: CORRUPT: sequence {seq} where {expected} was expected")
            return 1
        expected, last_seq = seq + 1, seq
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
        mark = f", durable up to {durable}" if version == 2 else ""
        print(f"  @{at}: sequence {seq}{mark}, generation {gen}, "
              f"{'; '.join(parts) or 'empty'} [{state}]")
        for d in decoded:
            print("    " + d.replace("\n", "\n    "))
        at += header + length
    print(f"restore: the snapshot + {replay} journal records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
