// SPDX-License-Identifier: BSD-3-Clause
#include "reconciler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace srv6gw::sr_controller {

const char* kind_name(PassOutcome::Kind k) {
  switch (k) {
    case PassOutcome::Kind::pushed:
      return "pushed";
    case PassOutcome::Kind::in_sync:
      return "in-sync";
    case PassOutcome::Kind::stale:
      return "stale";
    case PassOutcome::Kind::unreachable:
      return "unreachable";
    case PassOutcome::Kind::refused:
      return "refused";
    case PassOutcome::Kind::not_leader:
      return "not-leader";
  }
  return "?";
}

// One managed gateway. Fields under Reconciler::mutex_ except `client` (used by the one pass
// thread that set `busy`).
struct Reconciler::Gateway {
  Gateway(std::string n, std::shared_ptr<grpc::Channel> ch, std::chrono::milliseconds timeout)
      : name(n), client(std::move(n), std::move(ch), timeout) {}
  std::string name;
  GatewayClient client;
  std::shared_ptr<const GatewayState> desired;
  uint64_t desired_version = 0;
  uint64_t synced_version = 0;  // desired version known to run there
  bool has_synced = false;
  // What our last successful push (or read) left running, at `cached_generation`. Reset by
  // pokes and by any error: the next pass reads.
  std::optional<GatewayState> cached;
  uint64_t cached_generation = 0;
  uint64_t generation = 0;
  bool dirty = false;
  bool busy = false;
  Clock::time_point due{};
  Clock::time_point last_pass{};
  std::chrono::milliseconds backoff{0};
  uint64_t refused_version = 0;  // desired version refused (not retried); 0 = none
  bool reachable = false;
  std::string last_error;
  Clock::time_point unsynced_since{};  // desired changed while not in sync
  bool lagging = false;
  uint64_t pushes = 0, push_failures = 0, stale_retries = 0, unreachable = 0, reconciles = 0,
           changes_pushed = 0;
  double last_push_ms = 0;
};

Reconciler::Reconciler(ReconcilerOptions options, Observer observer)
    : options_(options), observer_(std::move(observer)) {
  const unsigned n = std::max(1u, options_.concurrency);
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

Reconciler::~Reconciler() {
  stop();
}

void Reconciler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void Reconciler::add_gateway(const std::string& name, std::shared_ptr<grpc::Channel> channel) {
  std::lock_guard lock(mutex_);
  gateways_[name] = std::make_unique<Gateway>(name, std::move(channel), options_.call_timeout);
}

void Reconciler::set_desired(const std::string& name, std::shared_ptr<const GatewayState> desired,
                             uint64_t version) {
  {
    std::lock_guard lock(mutex_);
    auto it = gateways_.find(name);
    if (it == gateways_.end()) return;
    Gateway& g = *it->second;
    g.desired = std::move(desired);
    g.desired_version = version;
    g.dirty = true;
    g.due = Clock::now();  // a new plan is tried at once, even by a gateway in backoff
    if (!g.lagging) {
      g.lagging = true;
      g.unsynced_since = Clock::now();
    }
  }
  cv_.notify_one();
}

void Reconciler::poke(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    auto it = gateways_.find(name);
    if (it == gateways_.end()) return;
    Gateway& g = *it->second;
    g.cached.reset();
    g.dirty = true;
    g.refused_version = 0;
    g.due = Clock::now();
  }
  cv_.notify_one();
}

void Reconciler::set_active(bool active) {
  {
    std::lock_guard lock(mutex_);
    active_ = active;
  }
  cv_.notify_all();
}

void Reconciler::poke_all() {
  {
    std::lock_guard lock(mutex_);
    for (auto& [_, g] : gateways_) {
      g->cached.reset();
      g->dirty = true;
      g->due = Clock::now();
    }
  }
  cv_.notify_all();
}

Reconciler::Gateway* Reconciler::pick_locked(Clock::time_point now, Clock::time_point& next_due) {
  Gateway* best = nullptr;
  next_due = Clock::time_point::max();
  for (auto& [_, gp] : gateways_) {
    Gateway& g = *gp;
    if (g.busy || !g.desired) continue;
    Clock::time_point due;
    if (g.dirty) {
      due = g.due;
    } else if (options_.resync.count() > 0) {
      due = g.last_pass + options_.resync;
    } else {
      continue;
    }
    if (due <= now && (!best || due < best->due)) {
      best = &g;
      best->due = due;
    } else if (due > now) {
      next_due = std::min(next_due, due);
    }
  }
  return best;
}

void Reconciler::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!active_) {
      cv_.wait(lock);
      continue;
    }
    Clock::time_point next_due;
    Gateway* g = pick_locked(Clock::now(), next_due);
    if (!g) {
      if (next_due == Clock::time_point::max()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, next_due);
      }
      continue;
    }
    // A periodic resync reads what runs there instead of trusting the last push.
    if (!g->dirty) g->cached.reset();
    g->busy = true;
    g->dirty = false;
    lock.unlock();
    pass(*g);
    lock.lock();
    g->busy = false;
    synced_cv_.notify_all();
    if (g->dirty) cv_.notify_one();
  }
}

void Reconciler::pass(Gateway& g) {
  const auto start = Clock::now();
  std::shared_ptr<const GatewayState> desired;
  uint64_t version = 0;
  std::optional<GatewayState> cached;
  uint64_t cached_generation = 0;
  {
    std::lock_guard lock(mutex_);
    desired = g.desired;
    version = g.desired_version;
    cached = g.cached;
    cached_generation = g.cached_generation;
    ++g.reconciles;
  }
  PassOutcome out;
  out.gateway = g.name;
  out.version = version;
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  unsigned stale = 0;
  grpc::Status st;
  bool done = false;
  bool not_leader = false;
  while (!done) {
    if (!cached) {
      RunningState running;
      for (int attempt = 0; attempt < 3; ++attempt) {
        st = g.client.read(running);
        if (!st.ok() || running.consistent) break;
      }
      if (!st.ok()) break;
      cached = std::move(running.objects);
      cached_generation = running.generation;
    }
    auto changes = diff(*desired, *cached);
    if (changes.empty()) {
      out.kind = PassOutcome::Kind::in_sync;
      out.generation = cached_generation;
      done = true;
      break;
    }
    v1::ApplyRequest req;
    req.mutable_changes()->Reserve(int(changes.size()));
    for (auto& c : changes) *req.add_changes() = std::move(c);
    req.set_expected_generation(cached_generation);
    v1::ApplyResponse resp;
    uint64_t term = 0;
    if (options_.may_push && !options_.may_push(term)) {
      not_leader = true;
      break;
    }
    if (options_.fault_delay_before_apply.count() > 0) {
      // Logged so that a test knows the push is held (it stops the process in the pause).
      spdlog::info("fault: push of plan {} to {} held {} ms after its lease check (term {})",
                   version, g.name, options_.fault_delay_before_apply.count(), term);
      std::this_thread::sleep_for(options_.fault_delay_before_apply);
    }
    st = g.client.apply(req, resp, term, version);
    if (st.ok()) {
      out.kind = PassOutcome::Kind::pushed;
      out.generation = resp.generation();
      out.changes = unsigned(req.changes_size());
      cached = *desired;
      cached_generation = resp.generation();
      done = true;
    } else if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
               stale < options_.stale_retries) {
      // Someone changed the gateway since we read it: read again and push the new difference.
      ++stale;
      cached.reset();
      spdlog::info("gateway {}: generation {} is stale ({}), reading again", g.name,
                   cached_generation, st.error_message());
    } else if (st.error_code() == grpc::StatusCode::NOT_FOUND && stale < options_.stale_retries) {
      // A delete of something already gone: what we thought runs there is out of date.
      ++stale;
      cached.reset();
    } else {
      break;
    }
  }
  out.millis = elapsed_ms();
  out.done_unix_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
  std::chrono::milliseconds retry_in{0};
  {
    std::lock_guard lock(mutex_);
    g.stale_retries += stale;
    if (done) {
      g.reachable = true;
      g.backoff = std::chrono::milliseconds(0);
      g.cached = std::move(cached);
      g.cached_generation = cached_generation;
      g.generation = out.generation;
      g.synced_version = version;
      g.has_synced = true;
      g.refused_version = 0;
      g.last_error.clear();
      if (out.kind == PassOutcome::Kind::pushed) {
        ++g.pushes;
        g.changes_pushed += out.changes;
        g.last_push_ms = out.millis;
      }
      if (g.desired_version == version) g.lagging = false;
    } else if (not_leader) {
      // Not ours to push any more: no backoff, no error; tried again if this replica leads
      // again (set_active, poke_all).
      out.kind = PassOutcome::Kind::not_leader;
      g.cached.reset();
      if (!g.dirty) {
        g.dirty = true;
        g.due = Clock::now() + std::chrono::milliseconds(50);
      }
    } else {
      g.cached.reset();
      out.code = st.error_code();
      out.message = st.error_message();
      g.last_error = std::string(status_code_name(st.error_code())) + ": " + st.error_message();
      const auto code = st.error_code();
      if (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
          code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::UNKNOWN) {
        out.kind = PassOutcome::Kind::unreachable;
        g.reachable =
            code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED;
        ++g.unreachable;
      } else if (code == grpc::StatusCode::FAILED_PRECONDITION ||
                 code == grpc::StatusCode::NOT_FOUND) {
        out.kind = PassOutcome::Kind::stale;  // kept changing under us: back off a little
        g.reachable = true;
      } else {
        out.kind = PassOutcome::Kind::refused;
        g.reachable = true;
        ++g.push_failures;
        g.refused_version = version;
      }
      if (out.kind != PassOutcome::Kind::refused) {
        g.backoff = g.backoff.count() == 0 ? options_.backoff_initial
                                           : std::min(options_.backoff_max, g.backoff * 2);
        retry_in = g.backoff;
        if (!g.dirty) {
          g.dirty = true;
          g.due = Clock::now() + g.backoff;
        }
      }
    }
    g.last_pass = Clock::now();
  }
  if (out.kind == PassOutcome::Kind::pushed) {
    spdlog::info("gateway {}: plan {} pushed, {} changes, generation {} ({:.1f} ms)", g.name,
                 version, out.changes, out.generation, out.millis);
  } else if (out.kind == PassOutcome::Kind::refused) {
    spdlog::error("gateway {}: plan {} refused: {}: {}", g.name, version,
                  status_code_name(out.code), out.message);
  } else if (out.kind == PassOutcome::Kind::not_leader) {
    spdlog::info("gateway {}: plan {} not pushed: this replica no longer leads", g.name, version);
  } else if (out.kind != PassOutcome::Kind::in_sync) {
    spdlog::warn("gateway {}: plan {} not pushed ({}: {}), retry in {} ms", g.name, version,
                 status_code_name(out.code), out.message, retry_in.count());
  }
  if (observer_) observer_(out);
}

std::vector<GatewayReport> Reconciler::report() const {
  std::vector<GatewayReport> out;
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  for (const auto& [name, gp] : gateways_) {
    const Gateway& g = *gp;
    GatewayReport r;
    r.name = name;
    r.desired_version = g.desired_version;
    r.synced_version = g.synced_version;
    r.generation = g.generation;
    r.in_sync = g.has_synced && g.synced_version == g.desired_version;
    r.reachable = g.reachable;
    r.last_error = g.last_error;
    r.pushes = g.pushes;
    r.push_failures = g.push_failures;
    r.stale_retries = g.stale_retries;
    r.unreachable = g.unreachable;
    r.reconciles = g.reconciles;
    r.changes_pushed = g.changes_pushed;
    r.lag_ms =
        g.lagging ? std::chrono::duration<double, std::milli>(now - g.unsynced_since).count() : 0.0;
    r.last_push_ms = g.last_push_ms;
    r.desired = g.desired;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<GatewayReport> Reconciler::report(const std::string& name) const {
  for (auto& r : report()) {
    if (r.name == name) return r;
  }
  return std::nullopt;
}

bool Reconciler::wait_synced(uint64_t version, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return synced_cv_.wait_for(lock, timeout, [&] {
    for (const auto& [_, g] : gateways_) {
      if (!g->has_synced || g->synced_version < version) return false;
    }
    return true;
  });
}

}  // namespace srv6gw::sr_controller
