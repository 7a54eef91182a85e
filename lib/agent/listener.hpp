// SPDX-License-Identifier: BSD-3-Clause
// Where and how the agent listens: a unix socket (protected by its file permissions), TCP
// with mutual TLS, or plain TCP for a lab (--agent-insecure-tcp, loudly logged). Everything
// here happens once, at start, before the server is built.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "agent/options.hpp"

namespace grpc {
class ServerCredentials;
}

namespace srv6gw::agent {

struct Listener {
  std::string address;  // for grpc::ServerBuilder::AddListeningPort ("unix:PATH", "HOST:PORT")
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::string socket_path;  // the unix socket, "" for TCP
};

// Checks the listening options and prepares the listener: reads the PEM files, or removes a
// unix socket left by a process that is gone (one a live process serves is not stolen).
// nullopt with `error` naming the option when they are unusable.
std::optional<Listener> prepare_listener(const AgentOptions& options, std::string& error);

}  // namespace srv6gw::agent
