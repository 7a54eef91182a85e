// SPDX-License-Identifier: BSD-3-Clause
// Fan-out of the controller leading on etcd: a Controller (the real one: EtcdStore, leader
// election, Reconciler) over a synthetic planner for N gateways, against a real etcd and
// srv6gw-gateway-standin playing the gateways (tools/gateway-standin/bench-ha.sh starts both
// and runs this for 1,024 and 4,096 gateways). Prints
//   - the full reconcile: leader elected -> every gateway runs the first plan;
//   - one plan change on every gateway (a spine down): stored -> all pushed; pushes/s;
//   - one plan change on one leaf's gateways (a leaf uplink down): the same, and the etcd
//     keys written per change (they follow the gateways changed, not the fleet);
//   - with one gateway dead (no such socket) and one slow (each Apply held 2 s by the
//     stand-in): the time for the others, which must not wait for those two.
// Usage: bench-controller-ha --etcd HOST:PORT --standin unix:PATH [--gateways N]
//        [--policies P] [--concurrency C] [--slow NAME] [--lease-ttl S (10)]
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "controller.hpp"
#include "etcd_store.hpp"

namespace {

using namespace srv6gw;
using namespace srv6gw::sr_controller;
using namespace std::chrono_literals;

constexpr unsigned kSpines = 4;
constexpr unsigned kPerLeaf = 64;

std::string num(const char* prefix, unsigned n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// Gateway g (on leaf g / 64): `policies` policies of one list per spine, a rule each, two
// local SIDs. A list is at weight 0 when its spine is down ("spineS") or when the gateway's
// leaf uplink to it is ("leafL--spineS").
class SyntheticPlanner final : public Planner {
 public:
  SyntheticPlanner(unsigned gateways, unsigned policies, std::string standin, std::string dead)
      : n_(gateways), policies_(policies), standin_(std::move(standin)), dead_(std::move(dead)) {}
  std::string topology_version() const override { return "synthetic-" + std::to_string(n_); }
  std::vector<std::string> gateways() const override {
    std::vector<std::string> v;
    for (unsigned g = 0; g < n_; ++g) v.push_back(num("g", g));
    if (!dead_.empty()) v.push_back(dead_);
    return v;
  }
  std::map<std::string, std::string> agents() const override {
    std::map<std::string, std::string> m;
    for (unsigned g = 0; g < n_; ++g) m[num("g", g)] = standin_;
    if (!dead_.empty()) m[dead_] = "unix:/nonexistent/srv6gw-bench-dead.sock";
    return m;
  }
  std::map<std::string, LinkState> links() const override {
    std::map<std::string, LinkState> m;
    for (unsigned s = 0; s < kSpines; ++s) {
      m[num("spine", s)] = {true, 400};
      for (unsigned l = 0; l < (n_ + kPerLeaf - 1) / kPerLeaf; ++l) {
        m[num("leaf", l) + num("--spine", s)] = {true, 400};
      }
    }
    return m;
  }
  std::set<std::string> access_links() const override { return {}; }
  std::string check_job(const cv1::SubmitJobRequest&) const override {
    return "the synthetic planner places no jobs";
  }
  bool compute(const std::map<std::string, LinkState>& links,
               const std::vector<cv1::SubmitJobRequest>&, const std::map<std::string, bool>&,
               PlanOutput& out, std::string&) override {
    char buf[64];
    for (unsigned g = 0; g < n_; ++g) {
      const unsigned leaf = g / kPerLeaf;
      GatewayState st;
      for (unsigned p = 0; p < policies_; ++p) {
        v1::SrPolicy pol;
        pol.set_name(num("to-h", p));
        for (unsigned s = 0; s < kSpines; ++s) {
          const bool up =
              links.at(num("spine", s)).up && links.at(num("leaf", leaf) + num("--spine", s)).up;
          auto* sl = pol.add_segment_lists();
          sl->set_name(num("spine", s));
          sl->set_path_id(p * kSpines + s + 1);
          sl->set_weight(up ? 1 : 0);
          std::snprintf(buf, sizeof buf, "fc00:0:%x::e", 0x100 + s);
          sl->add_sids(buf);
          std::snprintf(buf, sizeof buf, "fc00:0:%x::d46", 0x1000 + p);
          sl->add_sids(buf);
        }
        normalize(pol);
        st.add(std::move(pol));
        v1::SteeringRule r;
        r.set_id(p + 1);
        std::snprintf(buf, sizeof buf, "10.%u.%u.0/24", p / 256, p % 256);
        r.set_destination(buf);
        r.set_policy(num("to-h", p));
        normalize(r);
        st.add(std::move(r));
      }
      for (unsigned k = 0; k < 2; ++k) {
        v1::LocalSid l;
        std::snprintf(buf, sizeof buf, "fc00:1:%x::%s", g, k ? "f" : "d46");
        l.set_sid(buf);
        l.set_behavior(k ? v1::LOCAL_SID_BEHAVIOR_END_PROBE : v1::LOCAL_SID_BEHAVIOR_END_DT46);
        normalize(l);
        st.add(std::move(l));
      }
      out.gateways[num("g", g)] = std::move(st);
    }
    if (!dead_.empty()) out.gateways[dead_] = out.gateways.begin()->second;
    return true;
  }

 private:
  unsigned n_, policies_;
  std::string standin_, dead_;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Waits until every gateway but `skip` runs plan `version`; returns the pushes made meanwhile.
uint64_t wait_all(Controller& c, uint64_t version, const std::set<std::string>& skip,
                  uint64_t pushes_before, unsigned& pushed_gateways) {
  while (true) {
    bool all = true;
    uint64_t pushes = 0;
    for (const auto& r : c.reconciler().report()) {
      pushes += r.pushes;
      if (!skip.count(r.name) && (!r.in_sync || r.synced_version < version)) all = false;
    }
    if (all) {
      pushed_gateways = unsigned(pushes - pushes_before);
      return pushes;
    }
    std::this_thread::sleep_for(2ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  std::string etcd, standin, slow;
  unsigned n = 1024, policies = 16, concurrency = 32;
  // Longer than the replicas' default (2 s): this measures the fan-out, and on a loaded
  // 2-core machine the fan-out's own CPU can delay a keep-alive past a 2 s lease (a step-down
  // and takeover then restart the fan-out).
  unsigned ttl = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--etcd")
      etcd = v;
    else if (a == "--standin")
      standin = v;
    else if (a == "--gateways")
      n = unsigned(std::stoul(v));
    else if (a == "--policies")
      policies = unsigned(std::stoul(v));
    else if (a == "--concurrency")
      concurrency = unsigned(std::stoul(v));
    else if (a == "--slow")
      slow = v;
    else if (a == "--lease-ttl")
      ttl = unsigned(std::stoul(v));
  }
  if (etcd.empty() || standin.empty()) {
    std::fprintf(stderr,
                 "usage: bench-controller-ha --etcd HOST:PORT --standin unix:PATH [--gateways N] "
                 "[--policies P] [--concurrency C] [--slow NAME]\n"
                 "(tools/gateway-standin/bench-ha.sh starts etcd and the stand-in)\n");
    return 2;
  }
  const std::string dead = "dead-gateway";
  EtcdStoreOptions so;
  so.etcd.endpoints = {etcd};
  so.prefix = "/srv6gw-bench/" + std::to_string(::getpid()) + "-" + std::to_string(n) + "/";
  so.id = "bench";
  so.lease_ttl = std::chrono::seconds(ttl);
  std::string err;
  auto store = std::shared_ptr<EtcdStore>(EtcdStore::create(so, err));
  if (!store) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  ControllerOptions opts;
  opts.store = store;
  opts.id = "bench";
  opts.watch = false;
  opts.reconcile.concurrency = concurrency;
  opts.reconcile.resync = 0ms;
  opts.reconcile.call_timeout = 1000ms;
  auto planner = std::make_unique<SyntheticPlanner>(n, policies, standin, dead);
  auto c = Controller::create(opts, std::move(planner), cv1::ControllerConfig{}, err);
  if (!c) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::printf(
      "%u gateways (+1 dead) on srv6gw-gateway-standin, %u policies x %u lists + %u rules + 2 "
      "local SIDs each, concurrency %u%s\n",
      n, policies, kSpines, policies, concurrency,
      slow.empty() ? "" : (", slow gateway " + slow).c_str());
  auto t0 = std::chrono::steady_clock::now();
  if (!c->start(err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  while (!c->acting_leader()) std::this_thread::sleep_for(1ms);
  const double elect = ms_since(t0);
  std::set<std::string> skip = {dead};
  if (!slow.empty()) skip.insert(slow);
  unsigned pushed = 0;
  t0 = std::chrono::steady_clock::now();
  uint64_t pushes = wait_all(*c, c->plan_version(), skip, 0, pushed);
  const double full = ms_since(t0);
  std::printf(
      "leader after %.0f ms; full reconcile (read + push every gateway): %.0f ms, %u "
      "pushes, %.0f pushes/s\n",
      elect, full, pushed, pushed / (full / 1000));
  auto change = [&](const std::string& link, const char* what) {
    cv1::SetLinkStateRequest req;
    req.set_link(link);
    req.set_up(false);
    cv1::SetLinkStateResponse resp;
    const auto before = store->counters();
    const auto t = std::chrono::steady_clock::now();
    auto st = c->set_link_state(req, resp);
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", link.c_str(), st.error_message().c_str());
      std::exit(1);
    }
    const double stored = ms_since(t);
    unsigned pushed_now = 0;
    pushes = wait_all(*c, resp.plan_version(), skip, pushes, pushed_now);
    const double all = ms_since(t);
    const auto after = store->counters();
    std::printf(
        "%s (%s down): %d gateways changed; planned and stored in etcd in %.1f ms (%lu "
        "transaction, %lu "
        "keys); all pushed in %.0f ms: %u pushes, %.0f pushes/s\n",
        what, link.c_str(), resp.gateways_changed_size(), stored,
        (unsigned long)(after.commits - before.commits),
        (unsigned long)(after.keys_written - before.keys_written), all, pushed_now,
        pushed_now / (all / 1000));
  };
  change("spine1", "change on every gateway");
  change("leaf0--spine2", "change on one leaf's gateways");
  auto dead_report = c->reconciler().report(dead);
  std::printf("dead gateway: %lu unreachable passes, never waited for (%s)\n",
              (unsigned long)(dead_report ? dead_report->unreachable : 0),
              dead_report ? dead_report->last_error.c_str() : "?");
  if (!slow.empty()) {
    auto r = c->reconciler().report(slow);
    std::printf("slow gateway %s: last push %.0f ms, in sync %s\n", slow.c_str(),
                r ? r->last_push_ms : 0.0, r && r->in_sync ? "yes" : "not yet");
  }
  c->stop();
  return 0;
}
