# SPDX-License-Identifier: BSD-3-Clause
"""srv6gw-ctl end to end, and an external client that knows nothing of srv6gw but what the
server tells it through reflection (what grpcurl does), against the agent in its own process.

Checks: health; apply (dry run, real, stale generation, refused input, malformed file);
list/show/state/stats as tables and JSON; watch; restart restores the state; mutual TLS with
srv6gw-ctl; reflection lists the services and describes srv6gw.v1.Gateway and
grpc.health.v1.Health well enough to build requests and call them from python3-grpcio.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

try:
    import grpc
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as e:  # pragma: no cover
    print(f"SKIP: python3-grpcio / python3-protobuf missing: {e}")
    sys.exit(77)


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


class Server:
    """agent-test-server in a process; address from its READY line."""

    def __init__(self, exe, config, args):
        self.proc = subprocess.Popen([exe] + args + ["--config", config], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            self.proc.kill()
            _, err = self.proc.communicate()
            fail(f"server did not start: {line!r} {err}")
        self.address = line.split()[1]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("server did not stop on SIGTERM")
        check(self.proc.returncode == 0, f"server exit {self.proc.returncode}: {err}")
        return err


def ctl(exe, conn, *args, stdin=None, expect=0):
    r = subprocess.run([exe] + conn + list(args), capture_output=True, text=True, input=stdin,
                       timeout=120)
    if r.returncode != expect:
        fail(f"srv6gw-ctl {' '.join(args)}: exit {r.returncode} (expected {expect})\n"
             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def test_ctl(a, tmp):
    sock = os.path.join(tmp, "agent.sock")
    state = os.path.join(tmp, "state.json")
    srv = Server(a.server, a.config, ["--agent-listen", "unix:" + sock, "--agent-state", state])
    conn = ["--socket", sock]
    try:
        r = ctl(a.ctl, conn, "health")
        check(r.stdout.strip() == "SERVING", r.stdout)
        r = ctl(a.ctl, conn, "health", "--service", "srv6gw.v1.Gateway")
        check(r.stdout.strip() == "SERVING", r.stdout)

        st = json.loads(ctl(a.ctl, conn, "--json", "state").stdout)
        check(st["generation"] == "0" and st["policies"] == 2 and st["steering_rules"] == 9, st)

        r = ctl(a.ctl, conn, "apply", "-f", a.changes, "--dry-run")
        check("dry run: would apply 5 changes at generation 0" in r.stdout, r.stdout)
        check("steering    +2 -1" in r.stdout, r.stdout)
        check(json.loads(ctl(a.ctl, conn, "--json", "state").stdout)["generation"] == "0",
              "dry run changed the generation")

        resp = json.loads(ctl(a.ctl, conn, "--json", "apply", "-f", a.changes,
                              "--expected-generation", "0").stdout)
        check(resp["generation"] == "1" and resp["counts"]["policies_upserted"] == 1, resp)

        # Stale generation, from stdin this time.
        with open(a.changes) as f:
            text = f.read()
        r = ctl(a.ctl, conn, "apply", "-f", "-", "--expected-generation", "0", stdin=text,
                expect=1)
        check("FAILED_PRECONDITION" in r.stderr and "running generation is 1" in r.stderr,
              r.stderr)

        # Refused input: the server's message, naming the change and field.
        bad = {"changes": [{"upsert_policy": {"name": "x", "segment_lists": [
            {"name": "a", "path_id": 5000, "sids": ["fc00::zz"]}]}}]}
        r = ctl(a.ctl, conn, "apply", "-f", "-", stdin=json.dumps(bad), expect=1)
        check("INVALID_ARGUMENT: changes[0].upsert_policy.segment_lists[0].sids[0]: 'fc00::zz' "
              "is not an IPv6 address" in r.stderr, r.stderr)
        # A policy scoped to a rail the gateway does not have (a single pair is rail "0").
        bad = {"changes": [{"upsert_policy": {"name": "x", "rails": ["gpu9"], "segment_lists": [
            {"name": "a", "path_id": 5000, "sids": ["fc00::9"]}]}}]}
        r = ctl(a.ctl, conn, "apply", "-f", "-", stdin=json.dumps(bad), expect=1)
        check("unknown rail 'gpu9'" in r.stderr and "policy[name='x']/rails" in r.stderr,
              r.stderr)
        r = ctl(a.ctl, conn, "apply", "-f", "-", stdin='{"changes": [{"delete_policy": "ghost"}]}',
                expect=1)
        check("NOT_FOUND: changes[0].delete_policy: no policy 'ghost'" in r.stderr, r.stderr)
        # Not a changes file at all: refused before any call.
        r = ctl(a.ctl, conn, "apply", "-f", "-", stdin='{"chnages": []}', expect=1)
        check("not a changes file" in r.stderr, r.stderr)
        r = ctl(a.ctl, conn, "apply", expect=2)
        check("apply needs -f" in r.stderr, r.stderr)
        ctl(a.ctl, conn, "frobnicate", expect=2)

        # Reads: tables and JSON.
        r = ctl(a.ctl, conn, "list", "policies")
        check("pod4-storage" in r.stdout and "encaps-red" in r.stdout
              and "3 policies at generation 1" in r.stdout, r.stdout)
        pols = json.loads(ctl(a.ctl, conn, "--json", "list", "policies").stdout)["policies"]
        check([p["name"] for p in pols] == ["pod2-collective", "pod3-usid", "pod4-storage"], pols)
        r = ctl(a.ctl, conn, "show", "policy", "pod4-storage")
        check("fc00:0:104::e fc00:0:301::e fc00:0:4::d4" in r.stdout and "backup" in r.stdout
              and "flowlet gap 200us" in r.stdout, r.stdout)
        # No policy/rails: every rail (and no RAILS column in the list).
        check("rails      all" in r.stdout, r.stdout)
        ctl(a.ctl, conn, "show", "policy", "nope", expect=1)
        r = ctl(a.ctl, conn, "list", "steering", "--page-size", "3")
        check("exact 10.4.0.11 qp 4660" in r.stdout and "prefix 10.4.0.0/16" in r.stdout
              and "10 steering rules at generation 1" in r.stdout, r.stdout)
        check(r.stdout.count("ID ") == 1, "one header over all pages:\n" + r.stdout)
        rules = json.loads(ctl(a.ctl, conn, "--json", "list", "steering", "--page-size",
                                "4").stdout)["rules"]
        ids = [x["id"] for x in rules]
        check(ids == [1, 2, 4, 5, 6, 7, 8, 9, 100, 101], ids)
        only = json.loads(ctl(a.ctl, conn, "--json", "list", "steering", "--policy",
                              "pod4-storage").stdout)["rules"]
        check([x["id"] for x in only] == [100, 101], only)
        r = ctl(a.ctl, conn, "list", "local-sids")
        check("fc00:0:1::d44" in r.stdout and "end-dx4" in r.stdout, r.stdout)

        stats = json.loads(ctl(a.ctl, conn, "--json", "stats").stdout)
        check(stats["workers"][0]["encap"] == "2", stats)
        drops = {d["name"]: int(d["value"]) for d in stats["drops"]}
        check(drops["steering_miss"] == 1 and drops["tx_full"] == 0, drops)
        r = ctl(a.ctl, conn, "stats")
        check("steering_miss" in r.stdout and "fake0" in r.stdout, r.stdout)

        # watch: the subscribed line, then the change applied meanwhile.
        w = subprocess.Popen([a.ctl] + conn + ["--json", "watch", "--count", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = json.loads(w.stdout.readline())
        check(first["kind"] == "EVENT_KIND_SUBSCRIBED" and first["generation"] == "1", first)
        ctl(a.ctl, conn, "apply", "-f", "-",
            stdin='{"changes": [{"delete_steering": 101}]}')
        second = json.loads(w.stdout.readline())
        check(second["kind"] == "EVENT_KIND_CONFIG_APPLIED" and second["generation"] == "2"
              and second["config_applied"]["counts"]["steering_deleted"] == 1, second)
        check(w.wait(timeout=20) == 0, "watch --count 1 did not exit 0")
        ctl(a.ctl, conn, "watch", "--kind", "bogus", expect=2)
    finally:
        srv.stop()

    # Restart: the state comes back at the same generation.
    srv = Server(a.server, a.config, ["--agent-listen", "unix:" + sock, "--agent-state", state])
    try:
        st = json.loads(ctl(a.ctl, conn, "--json", "state").stdout)
        check(st["generation"] == "2" and st["policies"] == 3 and st["steering_rules"] == 9, st)
        r = ctl(a.ctl, conn, "show", "policy", "pod4-storage")
        check("spine2" in r.stdout, r.stdout)
    finally:
        srv.stop()
    # Nothing listens any more: a clear error, exit 1.
    r = ctl(a.ctl, conn + ["--timeout", "5"], "state", expect=1)
    check("UNAVAILABLE" in r.stderr, r.stderr)
    print("srv6gw-ctl over the unix socket: ok")


def test_tls(a, tmp):
    certs = os.path.join(tmp, "certs")
    os.mkdir(certs)
    subprocess.run(["sh", a.certs, certs], check=True, capture_output=True)
    c = lambda n: os.path.join(certs, n)  # noqa: E731
    srv = Server(a.server, a.config, ["--agent-listen", "127.0.0.1:0", "--agent-state", "none",
                                      "--agent-tls-cert", c("server.pem"), "--agent-tls-key",
                                      c("server.key"), "--agent-tls-client-ca", c("ca.pem")])
    try:
        base = ["--target", srv.address, "--ca", c("ca.pem"), "--tls-server-name", "localhost",
                "--timeout", "10"]
        ctl(a.ctl, base + ["--cert", c("client.pem"), "--key", c("client.key")], "health")
        r = ctl(a.ctl, base, "state", expect=1)
        check("UNAVAILABLE" in r.stderr, r.stderr)
        r = ctl(a.ctl, base + ["--cert", c("other-client.pem"), "--key", c("other-client.key")],
                "state", expect=1)
        check("UNAVAILABLE" in r.stderr, r.stderr)
        ctl(a.ctl, ["--target", srv.address, "--insecure", "--timeout", "5"], "state", expect=1)
        ctl(a.ctl, ["--target", srv.address], "state", expect=2)  # neither --ca nor --insecure
    finally:
        srv.stop()
    print("srv6gw-ctl with mutual TLS: ok")


def reflection_classes(tmp, proto):
    """Python classes of the reflection messages, compiled from the test's .proto subset."""
    out = os.path.join(tmp, "py")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["protoc", "--proto_path=" + os.path.dirname(proto), "--python_out=" + out,
                    proto], check=True)
    sys.path.insert(0, out)
    import reflection_v1alpha_subset_pb2 as r  # noqa: E402
    return r


def test_reflection_client(a, tmp):
    refl = reflection_classes(tmp, a.reflection_proto)
    sock = os.path.join(tmp, "refl.sock")
    srv = Server(a.server, a.config, ["--agent-listen", "unix:" + sock, "--agent-state", "none"])
    try:
        channel = grpc.insecure_channel("unix:" + sock)
        info = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=refl.ServerReflectionRequest.SerializeToString,
            response_deserializer=refl.ServerReflectionResponse.FromString)

        def ask(**kw):
            return list(info(iter([refl.ServerReflectionRequest(**kw)]), timeout=10))[0]

        services = {s.name for s in ask(list_services="*").list_services_response.service}
        for name in ("srv6gw.v1.Gateway", "grpc.health.v1.Health",
                     "grpc.reflection.v1alpha.ServerReflection"):
            check(name in services, f"{name} not listed: {services}")

        # Build every message class from the descriptors the server hands out.
        pool = descriptor_pool.DescriptorPool()
        added = set()

        def load(symbol):
            resp = ask(file_containing_symbol=symbol)
            check(resp.WhichOneof("message_response") == "file_descriptor_response",
                  f"{symbol}: {resp}")
            for raw in resp.file_descriptor_response.file_descriptor_proto:
                fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
                if fd.name not in added:
                    pool.Add(fd)
                    added.add(fd.name)

        load("srv6gw.v1.Gateway")
        load("grpc.health.v1.Health")
        factory = message_factory.MessageFactory(pool)
        cls = lambda name: factory.GetPrototype(pool.FindMessageTypeByName(name))  # noqa: E731
        service = pool.FindServiceByName("srv6gw.v1.Gateway")
        methods = {m.name for m in service.methods}
        check({"Apply", "GetState", "ListPolicies", "GetPolicy", "ListSteering", "ListLocalSids",
               "GetStats", "WatchEvents"} <= methods, methods)

        def unary(svc, method, request):
            m = pool.FindServiceByName(svc).FindMethodByName(method)
            call = channel.unary_unary(
                f"/{svc}/{method}", request_serializer=lambda x: x.SerializeToString(),
                response_deserializer=cls(m.output_type.full_name).FromString)
            return call(request, timeout=10)

        Health = cls("grpc.health.v1.HealthCheckRequest")
        h = unary("grpc.health.v1.Health", "Check", Health(service="srv6gw.v1.Gateway"))
        check(h.status == 1, f"health: {h}")  # SERVING

        state = unary("srv6gw.v1.Gateway", "GetState", cls("srv6gw.v1.GetStateRequest")())
        check(state.generation == 0 and state.policies == 2, state)

        Apply = cls("srv6gw.v1.ApplyRequest")
        req = Apply()
        ch = req.changes.add()
        ch.upsert_policy.name = "from-python"
        sl = ch.upsert_policy.segment_lists.add()
        sl.name = "only"
        sl.path_id = 7000
        sl.sids.extend(["fc00:0:105::e", "fc00:0:5::d4"])
        rule = req.changes.add().upsert_steering
        rule.id = 700
        rule.destination = "10.7.0.1"
        rule.policy = "from-python"
        req.expected_generation = 0
        resp = unary("srv6gw.v1.Gateway", "Apply", req)
        check(resp.generation == 1 and resp.counts.steering_upserted == 1, resp)

        get = cls("srv6gw.v1.GetPolicyRequest")(name="from-python")
        pol = unary("srv6gw.v1.Gateway", "GetPolicy", get)
        check(list(pol.segment_lists[0].sids) == ["fc00:0:105::e", "fc00:0:5::d4"]
              and pol.segment_lists[0].weight == 1, pol)

        bad = Apply()
        r2 = bad.changes.add().upsert_steering
        r2.id = 701
        r2.prefix = "10.7.0.1/8"
        r2.policy = "from-python"
        try:
            unary("srv6gw.v1.Gateway", "Apply", bad)
            fail("a prefix with host bits was accepted")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, e)
            check("changes[0].upsert_steering.prefix" in e.details(), e.details())
        channel.close()
    finally:
        srv.stop()
    print("external client through server reflection: ok")


def main():
    p = argparse.ArgumentParser()
    for opt in ("--server", "--ctl", "--config", "--certs", "--reflection-proto", "--changes"):
        p.add_argument(opt, required=True)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="srv6gw-ctl-") as tmp:
        test_ctl(a, tmp)
        test_tls(a, tmp)
        test_reflection_client(a, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
