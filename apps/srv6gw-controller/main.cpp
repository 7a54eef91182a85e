// SPDX-License-Identifier: BSD-3-Clause
// srv6gw-controller: the global SR engine (docs/design/controller.md).
//   srv6gw-controller run --topology FILE --gateways FILE [options]   the controller
//   srv6gw-controller ctl [connection] VERB ...                       its command line
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "controller.hpp"
#include "etcd_store.hpp"

namespace {

using namespace srv6gw::sr_controller;
constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;
constexpr const char* kDefaultListen = "unix:/run/srv6gw/controller.sock";

const char* kUsage =
    "usage: srv6gw-controller run --topology FILE --gateways FILE [options]\n"
    "       srv6gw-controller ctl [connection] VERB ...\n"
    "\n"
    "run options:\n"
    "  --state FILE|none        persisted jobs, link overrides, plan version\n"
    "                           (default /var/lib/srv6gw/controller-state.json)\n"
    "  --listen unix:PATH|HOST:PORT  the controller's API (default "
    "unix:/run/srv6gw/controller.sock)\n"
    "  --tls-cert F --tls-key F --tls-client-ca F   mutual TLS for a TCP listener\n"
    "  --insecure-tcp           plain TCP listener (labs only)\n"
    "  --concurrency N          gateways reconciled in parallel (default 8)\n"
    "  --call-timeout-ms N      per gateway call (default 5000)\n"
    "  --backoff-max-ms N       longest retry interval of an unreachable gateway (default 5000)\n"
    "  --resync-ms N            re-read gateways in sync this often, 0 = never (default 30000)\n"
    "  --log-level LEVEL        trace, debug, info (default), warn, error\n"
    "  --no-watch               do not subscribe to the gateways' events (no link inference)\n"
    "replicas on etcd (docs/design/controller.md):\n"
    "  --store etcd://HOST:PORT[,HOST:PORT...]  desired state in etcd, leader on a lease\n"
    "                           (default: the local store, --state)\n"
    "  --store-prefix P         key prefix (default /srv6gw/controller/)\n"
    "  --lease-ttl S            leader lease TTL in seconds (default 2)\n"
    "  --id NAME                this replica's name (default HOST:PID)\n"
    "  --etcd-ca F [--etcd-cert F --etcd-key F] [--etcd-tls-server-name N]   TLS to etcd\n"
    "  --fault-push-delay-ms N  (tests) pause between the lease check and each Apply\n"
    "\n"
    "ctl connection (default --socket /run/srv6gw/controller.sock):\n"
    "  --socket PATH | --target HOST:PORT (--ca F [--cert F --key F] [--tls-server-name N] |\n"
    "  --insecure) [--timeout S]\n"
    "ctl verbs:\n"
    "  status                   one line per gateway: sync, generation, pushes, failures, lag\n"
    "  plan [--objects] [--gateway NAME]   the plan as JSON\n"
    "  submit -f FILE|-         place a job (JSON: {\"job_id\": .., \"flows\": [{\"src_host\",\n"
    "                           \"dst_host\", \"dest_qp\", \"bytes\"}]}); prints the placements\n"
    "  cancel JOB               withdraw a job's pinned rules\n"
    "  link NAME down|up|clear  operator link state (clear: back to the topology's)\n"
    "  link NAME capacity GBPS  a link's capacity now (a LAG member down: half)\n"
    "  watch [--count N]        the controller's events, one JSON object per line\n"
    "  wait-synced [--timeout S]  exit 0 once every gateway runs the plan in force\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "srv6gw-controller: " << msg << "\n\n" << kUsage;
  std::exit(kExitUsage);
}

template <class T>
T number(const std::string& text, const char* what) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) {
    usage_error(std::string(what) + " must be a number, not '" + text + "'");
  }
  return v;
}

std::string read_file(const std::string& path) {
  std::ostringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
    return buf.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "srv6gw-controller: cannot read " << path << "\n";
    std::exit(kExitFailed);
  }
  buf << in.rdbuf();
  return buf.str();
}

std::string to_json(const google::protobuf::Message& m, bool pretty = true) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = pretty;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

// ---- run ------------------------------------------------------------------------------------

int run(std::vector<std::string> a) {
  std::string topology, gateways, state = "/var/lib/srv6gw/controller-state.json";
  std::string listen = kDefaultListen, tls_cert, tls_key, tls_ca;
  bool insecure_tcp = false;
  ControllerOptions opts;
  std::string store_url;
  EtcdStoreOptions etcd;
  for (size_t i = 0; i < a.size(); ++i) {
    auto value = [&](const char* o) -> std::string {
      if (i + 1 >= a.size()) usage_error(std::string(o) + " needs a value");
      return a[++i];
    };
    const std::string& s = a[i];
    if (s == "--topology")
      topology = value("--topology");
    else if (s == "--gateways")
      gateways = value("--gateways");
    else if (s == "--state")
      state = value("--state");
    else if (s == "--listen")
      listen = value("--listen");
    else if (s == "--tls-cert")
      tls_cert = value("--tls-cert");
    else if (s == "--tls-key")
      tls_key = value("--tls-key");
    else if (s == "--tls-client-ca")
      tls_ca = value("--tls-client-ca");
    else if (s == "--insecure-tcp")
      insecure_tcp = true;
    else if (s == "--concurrency")
      opts.reconcile.concurrency = number<unsigned>(value(s.c_str()), "--concurrency");
    else if (s == "--call-timeout-ms")
      opts.reconcile.call_timeout =
          std::chrono::milliseconds(number<unsigned>(value(s.c_str()), "--call-timeout-ms"));
    else if (s == "--backoff-max-ms")
      opts.reconcile.backoff_max =
          std::chrono::milliseconds(number<unsigned>(value(s.c_str()), "--backoff-max-ms"));
    else if (s == "--resync-ms")
      opts.reconcile.resync =
          std::chrono::milliseconds(number<unsigned>(value(s.c_str()), "--resync-ms"));
    else if (s == "--no-watch")
      opts.watch = false;
    else if (s == "--store")
      store_url = value("--store");
    else if (s == "--store-prefix")
      etcd.prefix = value("--store-prefix");
    else if (s == "--lease-ttl")
      etcd.lease_ttl = std::chrono::seconds(number<unsigned>(value(s.c_str()), "--lease-ttl"));
    else if (s == "--id")
      opts.id = value("--id");
    else if (s == "--etcd-ca")
      etcd.etcd.ca = value("--etcd-ca");
    else if (s == "--etcd-cert")
      etcd.etcd.cert = value("--etcd-cert");
    else if (s == "--etcd-key")
      etcd.etcd.key = value("--etcd-key");
    else if (s == "--etcd-tls-server-name")
      etcd.etcd.tls_server_name = value("--etcd-tls-server-name");
    else if (s == "--fault-push-delay-ms")
      opts.reconcile.fault_delay_before_apply =
          std::chrono::milliseconds(number<unsigned>(value(s.c_str()), "--fault-push-delay-ms"));
    else if (s == "--log-level") {
      auto lvl = spdlog::level::from_str(value("--log-level"));
      spdlog::set_level(lvl);
    } else
      usage_error("unknown option '" + s + "'");
  }
  if (topology.empty()) usage_error("--topology FILE is required");
  if (gateways.empty()) usage_error("--gateways FILE is required");
  if (state != "none") opts.state_path = state;
  if (opts.id.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    opts.id = std::string(host) + ":" + std::to_string(::getpid());
  }
  std::string err;
  if (!store_url.empty()) {
    if (etcd.lease_ttl.count() < 1) usage_error("--lease-ttl must be >= 1 s");
    if (!parse_etcd_url(store_url, etcd.etcd.endpoints, err)) usage_error(err);
    etcd.id = opts.id;
    etcd.address = listen;
    auto store = EtcdStore::create(etcd, err);
    if (!store) {
      std::cerr << "srv6gw-controller: " << err << "\n";
      return kExitFailed;
    }
    opts.store = std::move(store);
    opts.state_path.clear();
  }

  cv1::ControllerConfig cfg;
  {
    google::protobuf::util::JsonParseOptions po;
    auto st = google::protobuf::util::JsonStringToMessage(read_file(gateways), &cfg, po);
    if (!st.ok()) {
      std::cerr << "srv6gw-controller: " << gateways << ": " << st.message() << "\n";
      return kExitFailed;
    }
  }
  auto planner = load_topology_planner(topology, err);
  if (!planner) {
    std::cerr << "srv6gw-controller: " << topology << ": " << err << "\n";
    return kExitFailed;
  }
  if (!opts.state_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(opts.state_path).parent_path(), ec);
  }

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto controller = Controller::create(opts, std::move(planner), cfg, err);
  if (!controller) {
    std::cerr << "srv6gw-controller: " << err << "\n";
    return kExitFailed;
  }
  ControllerService service(*controller);
  grpc::ServerBuilder builder;
  std::string where = listen;
  if (listen.rfind("unix:", 0) == 0) {
    std::string path = listen.substr(5);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::filesystem::remove(path, ec);
    builder.AddListeningPort(listen, grpc::InsecureServerCredentials());
  } else if (!tls_cert.empty()) {
    if (tls_key.empty() || tls_ca.empty())
      usage_error("--tls-cert needs --tls-key and --tls-client-ca");
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = read_file(tls_ca);
    ssl.pem_key_cert_pairs.push_back({read_file(tls_key), read_file(tls_cert)});
    builder.AddListeningPort(listen, grpc::SslServerCredentials(ssl));
  } else if (insecure_tcp) {
    spdlog::warn("listening on plain TCP {}: anyone who reaches it can place jobs (labs only)",
                 listen);
    builder.AddListeningPort(listen, grpc::InsecureServerCredentials());
  } else {
    usage_error("a TCP --listen needs --tls-cert/--tls-key/--tls-client-ca or --insecure-tcp");
  }
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "srv6gw-controller: cannot listen on " << listen << "\n";
    return kExitFailed;
  }
  if (!controller->start(err)) {
    std::cerr << "srv6gw-controller: " << err << "\n";
    server->Shutdown();
    return kExitFailed;
  }
  spdlog::info("srv6gw-controller {}: serving on {}, {} gateways, plan {}, store {}", opts.id,
               where, cfg.gateways_size(), controller->plan_version(),
               controller->store().describe());
  int sig = 0;
  sigwait(&stop, &sig);
  spdlog::info("srv6gw-controller: stopping (signal {})", sig);
  controller->events().close_all();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  controller->stop();
  return kExitOk;
}

// ---- ctl ------------------------------------------------------------------------------------

struct Conn {
  std::string socket, target, ca, cert, key, server_name;
  bool insecure = false;
  double timeout_s = 30;
};

std::unique_ptr<cv1::Controller::Stub> connect(const Conn& c) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  if (c.target.empty()) {
    return cv1::Controller::NewStub(grpc::CreateCustomChannel(
        "unix:" + (c.socket.empty() ? std::string("/run/srv6gw/controller.sock") : c.socket),
        grpc::InsecureChannelCredentials(), args));
  }
  if (c.ca.empty()) {
    if (!c.insecure) usage_error("--target needs --ca (TLS) or --insecure");
    return cv1::Controller::NewStub(
        grpc::CreateCustomChannel(c.target, grpc::InsecureChannelCredentials(), args));
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = read_file(c.ca);
  if (!c.cert.empty()) {
    ssl.pem_cert_chain = read_file(c.cert);
    ssl.pem_private_key = read_file(c.key);
  }
  if (!c.server_name.empty()) args.SetSslTargetNameOverride(c.server_name);
  return cv1::Controller::NewStub(
      grpc::CreateCustomChannel(c.target, grpc::SslCredentials(ssl), args));
}

void deadline(grpc::ClientContext& ctx, double s) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(int64_t(s * 1000)));
}

int failed(const grpc::Status& st) {
  std::cerr << "srv6gw-controller: " << status_code_name(st.error_code()) << ": "
            << st.error_message() << "\n";
  return kExitFailed;
}

int ctl(std::vector<std::string> a) {
  Conn c;
  std::vector<std::string> verb;
  for (size_t i = 0; i < a.size(); ++i) {
    auto value = [&](const char* o) -> std::string {
      if (i + 1 >= a.size()) usage_error(std::string(o) + " needs a value");
      return a[++i];
    };
    const std::string& s = a[i];
    if (verb.empty() && s == "--socket")
      c.socket = value("--socket");
    else if (verb.empty() && s == "--target")
      c.target = value("--target");
    else if (verb.empty() && s == "--ca")
      c.ca = value("--ca");
    else if (verb.empty() && s == "--cert")
      c.cert = value("--cert");
    else if (verb.empty() && s == "--key")
      c.key = value("--key");
    else if (verb.empty() && s == "--tls-server-name")
      c.server_name = value("--tls-server-name");
    else if (verb.empty() && s == "--insecure")
      c.insecure = true;
    else if (verb.empty() && s == "--timeout")
      c.timeout_s = number<double>(value("--timeout"), "--timeout");
    else
      verb.push_back(s);
  }
  if (verb.empty()) usage_error("ctl: no verb");
  auto stub = connect(c);
  const std::string& v = verb[0];
  if (v == "plan" || v == "status") {
    cv1::GetPlanRequest req;
    for (size_t i = 1; i < verb.size(); ++i) {
      if (verb[i] == "--objects")
        req.set_include_objects(true);
      else if (verb[i] == "--gateway" && i + 1 < verb.size())
        req.set_gateway(verb[++i]);
      else
        usage_error("ctl " + v + ": unexpected '" + verb[i] + "'");
    }
    grpc::ClientContext ctx;
    deadline(ctx, c.timeout_s);
    cv1::Plan plan;
    if (auto st = stub->GetPlan(&ctx, req, &plan); !st.ok()) return failed(st);
    if (v == "plan") {
      std::cout << to_json(plan) << "\n";
      return kExitOk;
    }
    std::printf("plan %lu, topology %s, %d jobs, %d links not as the topology says\n",
                (unsigned long)plan.version(), plan.topology_version().c_str(), plan.jobs_size(),
                plan.links_size());
    std::printf("leader %s%s (term %lu)\n", plan.leader().c_str(),
                plan.is_leader() ? " (this replica)" : "", (unsigned long)plan.leader_term());
    for (const auto& l : plan.links()) {
      std::printf("  link %-24s %-4s %8.1f Gbit/s  %s\n", l.link().c_str(), l.up() ? "up" : "down",
                  l.capacity_gbps(), cv1::LinkOrigin_Name(l.origin()).c_str());
    }
    std::printf("%-12s %-7s %-9s %10s %7s %8s %6s %8s %s\n", "GATEWAY", "SYNC", "WATCHING",
                "GENERATION", "PUSHES", "FAILURES", "STALE", "LAG_MS", "LAST ERROR");
    for (const auto& g : plan.gateways()) {
      std::printf("%-12s %-7s %-9s %10lu %7lu %8lu %6lu %8.1f %s\n", g.name().c_str(),
                  g.in_sync() ? "yes" : "no", g.watching() ? "yes" : "no",
                  (unsigned long)g.generation(), (unsigned long)g.counters().pushes(),
                  (unsigned long)g.counters().push_failures(),
                  (unsigned long)g.counters().stale_retries(), g.counters().lag_ms(),
                  g.last_error().c_str());
    }
    return kExitOk;
  }
  if (v == "submit") {
    std::string file;
    for (size_t i = 1; i < verb.size(); ++i) {
      if (verb[i] == "-f" && i + 1 < verb.size())
        file = verb[++i];
      else
        usage_error("ctl submit: unexpected '" + verb[i] + "'");
    }
    if (file.empty()) usage_error("ctl submit needs -f FILE|-");
    cv1::SubmitJobRequest req;
    auto st = google::protobuf::util::JsonStringToMessage(read_file(file), &req);
    if (!st.ok()) {
      std::cerr << "srv6gw-controller: " << file << ": " << st.message() << "\n";
      return kExitFailed;
    }
    grpc::ClientContext ctx;
    deadline(ctx, c.timeout_s);
    cv1::SubmitJobResponse resp;
    if (auto s = stub->SubmitJob(&ctx, req, &resp); !s.ok()) return failed(s);
    std::cout << to_json(resp) << "\n";
    return kExitOk;
  }
  if (v == "cancel") {
    if (verb.size() != 2) usage_error("ctl cancel JOB");
    cv1::CancelJobRequest req;
    req.set_job_id(verb[1]);
    grpc::ClientContext ctx;
    deadline(ctx, c.timeout_s);
    cv1::CancelJobResponse resp;
    if (auto s = stub->CancelJob(&ctx, req, &resp); !s.ok()) return failed(s);
    std::cout << to_json(resp, false) << "\n";
    return kExitOk;
  }
  if (v == "link") {
    if (verb.size() < 3) usage_error("ctl link NAME down|up|clear|capacity GBPS");
    cv1::SetLinkStateRequest req;
    req.set_link(verb[1]);
    if (verb[2] == "down" || verb[2] == "up")
      req.set_up(verb[2] == "up");
    else if (verb[2] == "clear")
      req.set_clear(true);
    else if (verb[2] == "capacity" && verb.size() == 4)
      req.set_capacity_gbps(number<double>(verb[3], "capacity"));
    else
      usage_error("ctl link NAME down|up|clear|capacity GBPS");
    grpc::ClientContext ctx;
    deadline(ctx, c.timeout_s);
    cv1::SetLinkStateResponse resp;
    if (auto s = stub->SetLinkState(&ctx, req, &resp); !s.ok()) return failed(s);
    std::cout << to_json(resp, false) << "\n";
    return kExitOk;
  }
  if (v == "watch") {
    long count = -1;
    for (size_t i = 1; i < verb.size(); ++i) {
      if (verb[i] == "--count" && i + 1 < verb.size())
        count = number<long>(verb[++i], "--count");
      else
        usage_error("ctl watch: unexpected '" + verb[i] + "'");
    }
    grpc::ClientContext ctx;
    auto reader = stub->Watch(&ctx, cv1::WatchRequest{});
    cv1::ControllerEvent ev;
    while (count != 0 && reader->Read(&ev)) {
      std::cout << to_json(ev, false) << std::endl;
      if (count > 0) --count;
    }
    if (count == 0) {
      ctx.TryCancel();
      return kExitOk;
    }
    auto st = reader->Finish();
    return st.ok() ? kExitOk : failed(st);
  }
  if (v == "wait-synced") {
    double timeout = 30;
    for (size_t i = 1; i < verb.size(); ++i) {
      if (verb[i] == "--timeout" && i + 1 < verb.size())
        timeout = number<double>(verb[++i], "--timeout");
      else
        usage_error("ctl wait-synced: unexpected '" + verb[i] + "'");
    }
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeout * 1000));
    std::string why;
    do {
      grpc::ClientContext ctx;
      deadline(ctx, c.timeout_s);
      cv1::Plan plan;
      auto st = stub->GetPlan(&ctx, cv1::GetPlanRequest{}, &plan);
      if (st.ok()) {
        why.clear();
        for (const auto& g : plan.gateways()) {
          if (!g.in_sync() || g.synced_version() != plan.version()) {
            why += (why.empty() ? "" : ", ") + g.name() +
                   (g.last_error().empty() ? "" : " (" + g.last_error() + ")");
          }
        }
        if (why.empty()) {
          std::printf("plan %lu runs on all %d gateways\n", (unsigned long)plan.version(),
                      plan.gateways_size());
          return kExitOk;
        }
      } else {
        why = std::string(status_code_name(st.error_code())) + ": " + st.error_message();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < end);
    std::cerr << "srv6gw-controller: not in sync after " << timeout << " s: " << why << "\n";
    return kExitFailed;
  }
  usage_error("ctl: unknown verb '" + v + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.empty() || a[0] == "-h" || a[0] == "--help" || a[0] == "help") {
    std::cout << kUsage;
    return a.empty() ? kExitUsage : kExitOk;
  }
  const std::string mode = a[0];
  a.erase(a.begin());
  if (mode == "run") return run(a);
  if (mode == "ctl") return ctl(a);
  usage_error("unknown mode '" + mode + "' (run or ctl)");
}
