#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus of fuzz_apply_request (tests/fuzz/corpus/fuzz_apply_request/) and
its dictionary: ApplyRequest messages in protobuf wire format, as a gRPC client sends them.

Sources: tests/agent/changes-example.json (the batch the agent tests and docs use) and
batches in the style of tests/agent/test_agent_server.cpp, valid and invalid, against the
base state the target loads (config/examples/gateway.json): every change kind, deletes of
existing and missing keys, references to missing policies, bad addresses, out-of-range
numbers. The protobuf classes are generated with protoc into a scratch directory, so the
bytes come from Google's encoder, not ours. Deterministic.

    /usr/bin/python3 tests/fuzz/make_apply_corpus.py
"""
import copy
import hashlib
import importlib
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGET = "fuzz_apply_request"
OUT = ROOT / "tests" / "fuzz" / "corpus" / TARGET
PROTO_ROOT = ROOT / "proto"


def load_pb2():
    tmp = tempfile.mkdtemp(prefix="srv6gw-pb2-")
    subprocess.run(["protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}",
                    "srv6gw/v1/srv6gw.proto"], check=True)
    sys.path.insert(0, tmp)
    try:
        return importlib.import_module("srv6gw.v1.srv6gw_pb2"), tmp
    finally:
        sys.path.pop(0)


def policy(name, path_ids, sids=("fc00:0:101::e", "fc00:0:2::d4"), **extra):
    p = {"name": name, "color": 40, "endpoint": "fc00:0:9::1",
         "segment_lists": [{"name": f"sl{i}", "path_id": pid, "weight": 1 + i,
                            "sids": list(sids)} for i, pid in enumerate(path_ids)]}
    p.update(extra)
    return {"upsert_policy": p}


def batches(example):
    yield example
    # Every change kind on its own, valid against gateway.json's state.
    yield {"changes": [policy("fz-a", [7001, 7002])]}
    yield {"changes": [policy("fz-b", [7003], encap="ENCAP_MODE_ENCAPS_RED",
                              selection={"mode": "SELECTION_MODE_PACKET"})]}
    yield {"changes": [policy("fz-c", [7004, 7005],
                              sids=["fc00:0:101::", "fc00:0:201::", "fc00:0:301::"],
                              encap="ENCAP_MODE_USID",
                              usid_format={"block_bits": 32, "usid_bits": 16},
                              selection={"mode": "SELECTION_MODE_FLOWLET",
                                         "flowlet_gap_us": 50})]}
    yield {"changes": [policy("fz-d", [7006, 7007],
                              selection={"mode": "SELECTION_MODE_SELECTIVE",
                                         "spray_opcodes": [6, 7, 8]})]}
    yield {"changes": [policy("fz-e", [7008], selection={"mode": "SELECTION_MODE_ADAPTIVE"})]}
    yield {"changes": [{"delete_policy": "pod3-usid"}]}
    yield {"changes": [{"delete_steering": 1}]}
    yield {"changes": [{"delete_local_sid": "fc00:0:1::d4"}]}
    yield {"changes": [{"upsert_local_sid": {"sid": "fc00:0:1::d46",
                                             "behavior": "LOCAL_SID_BEHAVIOR_END_DT46"}}]}
    yield {"changes": [{"upsert_steering": {"id": 500, "destination": "fd00:9::1",
                                            "policy": "pod2-collective"}}]}
    yield {"changes": [{"upsert_steering": {"id": 501, "qp_range": {"qp_low": 16, "qp_high": 31},
                                            "policy": "pod2-collective"}}]}
    yield {"changes": [{"upsert_steering": {"id": 502, "prefix": "fd00:9::/48", "dscp": 26,
                                            "policy": "pod3-usid"}}]}
    # A new policy and its rules in one batch; a policy replaced and its old one deleted.
    yield {"changes": [policy("fz-f", [7010]),
                       {"upsert_steering": {"id": 600, "exact": {"destination": "10.9.0.1",
                                                                  "dest_qp": 99},
                                            "policy": "fz-f"}},
                       {"upsert_steering": {"id": 601, "prefix": "10.9.0.0/16",
                                            "policy": "fz-f"}}]}
    # Refusals the agent tests name field by field.
    yield {"changes": [{"upsert_steering": {"id": 700, "destination": "10.0.0.1",
                                            "policy": "missing"}}]}
    yield {"changes": [policy("fz-g", [7011], sids=["fc00::1", "fc00::zz"])]}
    yield {"changes": [policy("fz-h", [70000])]}
    yield {"changes": [policy("fz-i", [1001])]}  # path id taken by pod2-collective
    yield {"changes": [policy("fz-j", [7012, 7012])]}
    yield {"changes": [policy("fz-k", [7013], sids=["fc00::%x" % i for i in range(1, 18)])]}
    yield {"changes": [{"delete_policy": "pod2-collective"}]}  # still used by rules
    yield {"changes": [{"delete_policy": "nope"}]}
    yield {"changes": [{"delete_steering": 0}]}
    yield {"changes": [{"delete_steering": 424242}]}
    yield {"changes": [{"delete_local_sid": "not-an-address"}]}
    yield {"changes": [{"upsert_steering": {"id": 0, "prefix": "10.0.0.0/33",
                                            "policy": "pod3-usid"}}]}
    yield {"changes": [{"upsert_steering": {"id": 800, "dscp": 64, "destination": "10.0.0.1",
                                            "policy": "pod3-usid"}}]}
    yield {"changes": [{"upsert_steering": {"id": 801, "qp_range": {"qp_low": 9, "qp_high": 3},
                                            "policy": "pod3-usid"}}]}
    yield {"changes": [{"upsert_steering": {"id": 802, "policy": "pod3-usid"}}]}
    yield {"changes": [{}]}
    yield {"changes": [{"upsert_local_sid": {"sid": "10.0.0.1"}}]}
    yield {"changes": [policy("", [7014])]}
    yield {"changes": [policy("fz-l", [7015], encap="ENCAP_MODE_USID",
                              usid_format={"block_bits": 40, "usid_bits": 24})]}
    yield {"dry_run": True, "expected_generation": 7, "changes": [{"delete_steering": 2}]}


def dictionary(pb2):
    """Names and values the base state and the validation know: libFuzzer splices them in."""
    words = ["pod2-collective", "pod3-usid", "spine1", "detour", "fc00:0:1::d4", "fc00:0:1::d6",
             "fc00:0:101::e", "fc00:0:2::d4", "fc00::1", "10.0.0.1", "10.0.0.0/8",
             "fd00::/48", "::", "0.0.0.0/0", "::/0", "255.255.255.255"]
    lines = ["# SPDX-License-Identifier: BSD-3-Clause",
             "# Generated by make_apply_corpus.py: strings of the base state (gateway.json)."]
    lines += ['kw%d="%s"' % (i, w) for i, w in enumerate(words)]
    return "\n".join(lines) + "\n"


def main():
    pb2, tmp = load_pb2()
    from google.protobuf import json_format
    try:
        example = json.loads((ROOT / "tests" / "agent" / "changes-example.json").read_text())
        if OUT.exists():
            shutil.rmtree(OUT)
        OUT.mkdir(parents=True)
        n = 0
        for b in batches(copy.deepcopy(example)):
            req = json_format.ParseDict(b, pb2.ApplyRequest())
            data = req.SerializeToString(deterministic=True)
            (OUT / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
            n += 1
        (ROOT / "tests" / "fuzz" / f"{TARGET}.dict").write_text(dictionary(pb2))
        print(f"{TARGET}: {n} seeds")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
