// SPDX-License-Identifier: BSD-3-Clause
#include "metrics.hpp"

#include <arpa/inet.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <rte_cycles.h>

#include <charconv>
#include <deque>
#include <string_view>
#include <vector>

#include "app.hpp"
#include "policy/runtime.hpp"
#include "stats.hpp"

#ifndef SRV6GW_VERSION
#error "SRV6GW_VERSION is set by apps/srv6gw/meson.build"
#endif

namespace srv6gw::app {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

namespace {

// Families in the order they are declared; a deque so that references stay valid.
class Families {
 public:
  MetricFamily& counter(std::string name, std::string help) {
    return add(std::move(name), std::move(help), MetricType::Counter);
  }
  MetricFamily& gauge(std::string name, std::string help) {
    return add(std::move(name), std::move(help), MetricType::Gauge);
  }
  static void sample(MetricFamily& f, double value, Labels labels = {}) {
    ClientMetric m;
    m.label = std::move(labels);
    if (f.type == MetricType::Counter)
      m.counter.value = value;
    else
      m.gauge.value = value;
    f.metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() {
    return std::vector<MetricFamily>(std::make_move_iterator(families_.begin()),
                                     std::make_move_iterator(families_.end()));
  }

 private:
  MetricFamily& add(std::string name, std::string help, MetricType type) {
    MetricFamily& f = families_.emplace_back();
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    return f;
  }
  std::deque<MetricFamily> families_;
};

// HELP of the worker counters an operator reads first; the others point to their list.
std::string worker_counter_help(std::string_view name) {
  static const std::pair<std::string_view, const char*> kHelp[] = {
      {"rx_host", "Packets received on the host port"},
      {"rx_fabric", "Packets received on the fabric port"},
      {"tx_host", "Packets sent on the host port"},
      {"tx_fabric", "Packets sent on the fabric port"},
      {"encap", "Packets encapsulated in SRv6 (host to fabric)"},
      {"decap", "Packets decapsulated (fabric to host)"},
      {"passed_host_to_fabric", "Packets forwarded host to fabric unchanged"},
      {"passed_fabric_to_host", "Packets forwarded fabric to host unchanged"},
      {"busy_tsc", "Time spent processing packets (RX, pipeline, TX)"},
      {"pipeline_tsc", "Time spent in the encap/decap pipeline"},
  };
  for (const auto& [n, h] : kHelp)
    if (n == name) return h;
  return "Worker counter " + std::string(name) + " (lib/dataplane/counters.hpp)";
}

void add_worker_counters(Families& out, const Snapshot& s) {
  const double tsc_hz = double(rte_get_tsc_hz());
  std::vector<MetricFamily*> by_counter;  // list order, filled by the first worker
  for (size_t w = 0; w < s.workers.size(); ++w) {
    size_t i = 0;
    dataplane::for_each_counter(
        s.workers[w],
        [&](const char* name, uint64_t value) {
          const std::string_view n(name);
          const bool tsc = n.ends_with("_tsc");
          if (w == 0) {
            const std::string base(tsc ? n.substr(0, n.size() - 4) : n);
            by_counter.push_back(
                &out.counter("srv6gw_worker_" + base + (tsc ? "_seconds_total" : "_total"),
                             worker_counter_help(n)));
          }
          Labels l{{"worker", std::to_string(w)}};
          // A single pair keeps its labels as they were; rails name theirs.
          if (s.named_rails) l.push_back({"rail", s.worker_rails[w]});
          Families::sample(*by_counter[i++], tsc ? double(value) / tsc_hz : double(value), l);
        },
        [](const dataplane::CounterGroup&) {});
  }
}

// Counts by reason, summed over workers: the reason lists are long, the worker split of a
// drop reason is in telemetry's /srv6gw/workers.
void add_reason_groups(Families& out, const Snapshot& s) {
  dataplane::for_each_counter(
      s.total, [](const char*, uint64_t) {},
      [&out](const dataplane::CounterGroup& g) {
        const std::string group(g.name);
        const bool drops = group == "drops";
        MetricFamily& f =
            drops ? out.counter("srv6gw_dropped_packets_total",
                                "Packets dropped by the data plane, by reason")
                  : out.counter("srv6gw_" + group + "_packets_total",
                                "Packets by " + group + " (lib/dataplane/counters.hpp)");
        for (size_t i = 0; i < g.values.size(); ++i)
          Families::sample(f, double(g.values[i]), {{drops ? "reason" : "status", g.reasons[i]}});
      });
}

void add_ports(Families& out, const Snapshot& s) {
  struct Field {
    const char* name;
    const char* help;
    uint64_t rte_eth_stats::*member;
  };
  static constexpr Field kFields[] = {
      {"srv6gw_port_rx_packets_total", "Packets received (ethdev ipackets)",
       &rte_eth_stats::ipackets},
      {"srv6gw_port_tx_packets_total", "Packets sent (ethdev opackets)", &rte_eth_stats::opackets},
      {"srv6gw_port_rx_bytes_total", "Bytes received (ethdev ibytes)", &rte_eth_stats::ibytes},
      {"srv6gw_port_tx_bytes_total", "Bytes sent (ethdev obytes)", &rte_eth_stats::obytes},
      {"srv6gw_port_rx_missed_packets_total", "Packets the NIC dropped: RX ring full (imissed)",
       &rte_eth_stats::imissed},
      {"srv6gw_port_rx_errors_total", "Erroneous received packets (ierrors)",
       &rte_eth_stats::ierrors},
      {"srv6gw_port_tx_errors_total", "Failed transmissions (oerrors)", &rte_eth_stats::oerrors},
      {"srv6gw_port_rx_nombuf_total", "RX mbuf allocation failures (rx_nombuf)",
       &rte_eth_stats::rx_nombuf},
  };
  for (const Field& field : kFields) {
    MetricFamily& f = out.counter(field.name, field.help);
    for (const RailSnapshot& rail : s.rails)
      for (const PortSnapshot* p : {&rail.host, &rail.fabric}) {
        Labels l{{"port", p->role}, {"device", p->name}};
        if (s.named_rails) l.push_back({"rail", rail.name});
        Families::sample(f, double(p->eth.*field.member), l);
      }
  }
}

Labels path_labels(const std::string& policy, const std::string& segment_list, uint16_t id) {
  return {{"policy", policy}, {"segment_list", segment_list}, {"path_id", std::to_string(id)}};
}

void add_paths(Families& out, App& app) {
  const auto paths = app.gateway->path_stats();
  MetricFamily& packets =
      out.counter("srv6gw_path_packets_total", "Packets encapsulated onto the segment list");
  MetricFamily& bytes =
      out.counter("srv6gw_path_bytes_total", "Bytes encapsulated onto the segment list");
  MetricFamily& weight = out.gauge("srv6gw_path_weight", "Configured weight of the segment list");
  MetricFamily& factor =
      out.gauge("srv6gw_path_factor", "Local SR engine factor in force (weight x factor is used)");
  MetricFamily& flows = out.gauge("srv6gw_path_active_flows",
                                  "Flows placed on the path and active (balanced mode, else 0)");
  for (const auto& p : paths) {
    const Labels l = path_labels(p.policy, p.segment_list, p.path_id);
    Families::sample(packets, double(p.packets), l);
    Families::sample(bytes, double(p.bytes), l);
    Families::sample(weight, double(p.weight_configured), l);
    Families::sample(factor, p.factor, l);
    Families::sample(flows, double(p.active_flows), l);
  }
}

void add_probes(Families& out, const ProbeRunner& prober) {
  MetricFamily& up =
      out.gauge("srv6gw_path_probe_up", "1 when the path health probes say the path works");
  MetricFamily& sent = out.counter("srv6gw_path_probe_sent_total", "Probes sent on the path");
  MetricFamily& answered =
      out.counter("srv6gw_path_probe_answered_total", "Probes answered in time");
  MetricFamily& lost = out.counter("srv6gw_path_probe_lost_total", "Probes never answered");
  MetricFamily& late = out.counter("srv6gw_path_probe_late_total", "Probes answered too late");
  MetricFamily& loss =
      out.gauge("srv6gw_path_probe_loss_ratio", "Lost share of the last resolved probes (0..1)");
  MetricFamily& rtt = out.gauge("srv6gw_path_probe_rtt_seconds",
                                "Probe round-trip time over the window (quantile: min, avg, p99)");
  for (const engine::ProbePathView& v : prober.paths()) {
    Labels l = path_labels(v.policy, v.segment_list, v.path_id);
    // With rails, each rail probing the path is its own series (a single pair: as before).
    if (!v.rail.empty()) l.push_back({"rail", v.rail});
    Families::sample(up, v.state == engine::ProbeState::up ? 1 : 0, l);
    Families::sample(sent, double(v.sent), l);
    Families::sample(answered, double(v.answered), l);
    Families::sample(lost, double(v.lost), l);
    Families::sample(late, double(v.late), l);
    Families::sample(loss, v.loss_ratio, l);
    for (const auto& [stat, ns] :
         {std::pair{"min", v.rtt_min_ns}, {"avg", v.rtt_avg_ns}, {"p99", v.rtt_p99_ns}}) {
      Labels with_stat = l;
      with_stat.push_back({"stat", stat});
      Families::sample(rtt, double(ns) * 1e-9, std::move(with_stat));
    }
  }
  const auto c = prober.counters();
  MetricFamily& transitions =
      out.counter("srv6gw_probe_transitions_total", "Path state changes decided by the probes");
  Families::sample(transitions, double(c.transitions_down), {{"to", "down"}});
  Families::sample(transitions, double(c.transitions_up), {{"to", "up"}});
}

void add_engine(Families& out, const EngineRunner& runner) {
  const engine::EngineCounters& c = runner.engine().counters();
  MetricFamily& decisions =
      out.counter("srv6gw_engine_decisions_total", "Local SR engine factor changes, by reason");
  for (size_t r = 0; r < engine::kReasonNames.size(); ++r)
    Families::sample(decisions, double(c.decisions[r]), {{"reason", engine::kReasonNames[r]}});
  const EngineRunner::Stats& s = runner.stats();
  Families::sample(out.counter("srv6gw_engine_feedback_events_total",
                               "Feedback events drained from the data plane ring"),
                   double(s.events));
  Families::sample(
      out.counter("srv6gw_engine_publishes_total", "Policies republished with new factors"),
      double(s.publishes));
  Families::sample(
      out.counter("srv6gw_engine_publish_errors_total", "Republications the gateway refused"),
      double(s.publish_errors));
  Families::sample(out.counter("srv6gw_engine_intervals_total", "Engine intervals closed"),
                   double(c.ticks));
  Families::sample(out.gauge("srv6gw_engine_enabled", "1 when the local SR engine adjusts weights"),
                   runner.engine().params().enabled ? 1 : 0);
}

void add_process(Families& out, App& app, const Snapshot& s) {
  Families::sample(out.gauge("srv6gw_build_info", "Version of the running gateway (value 1)"), 1,
                   {{"version", SRV6GW_VERSION}});
  Families::sample(out.gauge("srv6gw_uptime_seconds", "Time since the workers started"),
                   double(s.tsc - app.start_tsc) / double(rte_get_tsc_hz()));
  Families::sample(out.gauge("srv6gw_workers", "Worker lcores forwarding packets"),
                   double(s.workers.size()));
  uint64_t in_use = 0;
  for (const auto& p : s.pools) in_use += p.in_use;
  Families::sample(out.gauge("srv6gw_mbufs_in_use", "Mbufs out of the gateway's pools"),
                   double(in_use));
  const config::GatewayConfig& c = app.gateway->running_config();
  size_t lists = 0;
  for (const auto& p : c.policies) lists += p.segment_lists.size();
  Families::sample(out.gauge("srv6gw_policies", "SR policies configured"),
                   double(c.policies.size()));
  Families::sample(out.gauge("srv6gw_segment_lists", "Segment lists over all policies"),
                   double(lists));
  Families::sample(out.gauge("srv6gw_steering_rules", "Steering rules in force"),
                   double(app.gateway->runtime().steering_rule_count()));
  Families::sample(out.gauge("srv6gw_local_sids", "Local SIDs configured"),
                   double(c.local_sids.size()));
}

}  // namespace

// Answers a scrape (a civetweb thread): the same figures as telemetry, under control_mutex.
class MetricsCollector : public prometheus::Collectable {
 public:
  MetricsCollector(App& app, MetricsServer::GenerationSource generation)
      : app_(app), generation_(std::move(generation)) {}

  std::vector<MetricFamily> Collect() const override {
    Families out;
    std::lock_guard lock(app_.control_mutex);
    if (!app_.running) return {};
    const Snapshot s = take_snapshot(app_);
    add_process(out, app_, s);
    add_worker_counters(out, s);
    add_reason_groups(out, s);
    add_ports(out, s);
    add_paths(out, app_);
    if (app_.prober) add_probes(out, *app_.prober);
    if (app_.engine) add_engine(out, *app_.engine);
    if (auto g = generation_ ? generation_() : std::nullopt)
      Families::sample(out.gauge("srv6gw_agent_generation",
                                 "Configuration generation the gRPC agent applied last"),
                       double(*g));
    return out.take();
  }

 private:
  App& app_;
  MetricsServer::GenerationSource generation_;
};

std::optional<std::string> metrics_bind_address(const std::string& spec, std::string& error) {
  const size_t colon = spec.rfind(':');
  const std::string host = colon == std::string::npos ? "127.0.0.1" : spec.substr(0, colon);
  const std::string port = colon == std::string::npos ? spec : spec.substr(colon + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    error = "--metrics-address " + spec + ": port '" + port + "' is not a number 0..65535";
    return std::nullopt;
  }
  in_addr v4;
  in6_addr v6;
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (bracketed ? inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6) != 1
                : inet_pton(AF_INET, host.c_str(), &v4) != 1) {
    error = "--metrics-address " + spec + ": host '" + host +
            "' is not an IPv4 address or a bracketed IPv6 address ([::1])";
    return std::nullopt;
  }
  return host + ":" + port;
}

std::unique_ptr<MetricsServer> MetricsServer::start(App& app, const std::string& bind,
                                                    GenerationSource generation,
                                                    std::string& error) {
  std::unique_ptr<MetricsServer> s(new MetricsServer);
  s->collector_ = std::make_shared<MetricsCollector>(app, std::move(generation));
  try {
    // One civetweb thread: Prometheus scrapes one request at a time.
    s->exposer_ = std::make_unique<prometheus::Exposer>(bind, 1);
  } catch (const std::exception& e) {
    error = "cannot listen on " + bind + " (" + e.what() + ")";
    return nullptr;
  }
  s->exposer_->RegisterCollectable(s->collector_);
  const auto ports = s->exposer_->GetListeningPorts();
  const std::string host = bind.substr(0, bind.rfind(':'));
  s->address_ = host + ":" +
                (ports.empty() ? bind.substr(bind.rfind(':') + 1) : std::to_string(ports.front()));
  return s;
}

MetricsServer::~MetricsServer() {
  if (exposer_) exposer_->RemoveCollectable(collector_);
  exposer_.reset();  // stops civetweb (waits for a scrape in progress) before app state goes
}

}  // namespace srv6gw::app
