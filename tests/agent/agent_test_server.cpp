// SPDX-License-Identifier: BSD-3-Clause
// A gRPC agent over a fake data plane, as a process: what srv6gw-ctl and external clients
// (python grpcio) are tested against. Takes the agent's own options (--agent-listen,
// --agent-state, --agent-tls-*, ...) and --config FILE; restores the state file like the
// daemon; prints "READY <address>" once serving; stops on SIGTERM/SIGINT.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "agent/agent.hpp"
#include "agent_test_util.hpp"
#include "config/loader.hpp"

using namespace srv6gw;

int main(int argc, char** argv) {
  // Logs on stderr: stdout carries the READY line.
  spdlog::set_default_logger(spdlog::stderr_color_mt("agent-test-server"));
  std::vector<std::string> args(argv + 1, argv + argc);
  agent::AgentOptions options;
  std::string err;
  if (!agent::take_agent_options(args, options, err)) {
    std::cerr << "agent-test-server: " << err << "\n";
    return 2;
  }
  if (args.size() != 2 || args[0] != "--config") {
    std::cerr << "usage: agent-test-server [agent options] --config FILE\n" << agent::agent_usage();
    return 2;
  }
  auto loaded = config::load_config_file(args[1]);
  if (auto* e = std::get_if<config::ConfigError>(&loaded)) {
    std::cerr << "agent-test-server: " << e->path << ": " << e->message << "\n";
    return 1;
  }
  const auto startup =
      agent::restore_startup_state(options.state_path, std::get<config::GatewayConfig>(loaded));

  // Block the stop signals before gRPC starts its threads, then wait for one here.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  agent::test::FakeSink sink;
  sink.running = startup.config;
  {
    // Counters for `stats`: one worker that encapsulated a little, and one drop.
    dataplane::WorkerCounters w;
    w.rx_host = 3;
    w.encap = 2;
    w.drops[size_t(dataplane::DropReason::steering_miss)] = 1;
    sink.stats_value.workers = {w};
    sink.stats_value.ports = {{"host", "fake0", 3, 300, 0, 0, 0, 0, 0, 0},
                              {"fabric", "fake1", 0, 0, 2, 300, 0, 0, 0, 0}};
  }
  auto a = agent::Agent::start(options, sink, startup.config, startup.generation, err);
  if (!a) {
    std::cerr << "agent-test-server: " << err << "\n";
    return 1;
  }
  std::printf("READY %s\n", a->address().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  a->stop();
  return 0;
}
