// SPDX-License-Identifier: BSD-3-Clause
// The gateway's gRPC agent (service srv6gw.v1.Gateway, proto/srv6gw/v1/srv6gw.proto), plus
// grpc.health.v1 and server reflection. Runs on its own gRPC threads on the control side;
// publishes configurations through a StateSink (the Gateway publishes lock-free, so an Apply
// never stalls a worker).
//
// Daemon wiring, in order:
//   1. add_agent_options(cli, opts) on its command line    (options.hpp; or take_agent_options)
//   2. st = restore_startup_state(opts.state_path, cfg)    (before Gateway::create)
//      create the Gateway with st.config
//   3. GatewaySink sink(*gateway, &control_mutex, ports);
//      agent = Agent::start(opts, sink, st.config, st.generation, err)
//   4. agent->stop() before the Gateway is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/batch.hpp"
#include "agent/event_bus.hpp"
#include "agent/options.hpp"
#include "agent/persist.hpp"
#include "agent/state_keeper.hpp"
#include "agent/state_sink.hpp"
#include "config/model.hpp"

namespace grpc {
class Channel;
}

namespace srv6gw::agent {

class Agent {
 public:
  // Starts serving. `running` is the configuration `sink` runs now, at `generation` (both
  // from restore_startup_state). Returns null and sets `error` when the options are unusable
  // (TCP without TLS, unreadable certificates, socket in use, state directory not writable)
  // or the address cannot be bound.
  // `extras` are the restored paths down and engine-parameter ownership
  // (StartupState::extras), carried into every later state file.
  static std::unique_ptr<Agent> start(const AgentOptions& options, StateSink& sink,
                                      const config::GatewayConfig& running, uint64_t generation,
                                      std::string& error, const StateExtras& extras = {});
  ~Agent();  // stop()
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Reports NOT_SERVING, ends event streams, waits (at most ~2 s) for calls in flight, closes
  // the listener. Idempotent.
  void stop();

  // Who carries out SetPathState (the daemon's local SR engine). Without one, SetPathState
  // answers UNAVAILABLE. Any thread; may be replaced or cleared (empty function) at any time.
  void set_path_state_handler(PathStateHandler handler);

  // Other control-plane producers (the local SR engine) publish here; WatchEvents streams it.
  EventBus& events();

  uint64_t generation() const;
  std::shared_ptr<const AgentState> state() const;

  // What it listens on: "unix:/run/srv6gw/agent.sock", or "HOST:PORT" with the port bound
  // (when the options asked for port 0).
  const std::string& address() const;

  // A channel to this server without any transport (tests, embedding).
  std::shared_ptr<grpc::Channel> in_process_channel();

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace srv6gw::agent
