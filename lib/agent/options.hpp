// SPDX-License-Identifier: BSD-3-Clause
// Agent options and their command-line form (CLI11): the daemon adds them to its own command
// line (add_agent_options); programs that only embed the agent take them out of theirs
// (take_agent_options).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace srv6gw::agent {

inline constexpr const char* kDefaultListen = "unix:/run/srv6gw/agent.sock";
inline constexpr const char* kDefaultStatePath = "/var/lib/srv6gw/state.json";

struct AgentOptions {
  bool enabled = true;                  // --no-agent
  std::string listen = kDefaultListen;  // --agent-listen unix:PATH | PATH | HOST:PORT
  // TCP listeners need all three (mutual TLS): the server's certificate chain and key, and
  // the CA that client certificates must chain to. PEM files.
  std::string tls_cert;       // --agent-tls-cert
  std::string tls_key;        // --agent-tls-key
  std::string tls_client_ca;  // --agent-tls-client-ca
  bool insecure_tcp = false;  // --agent-insecure-tcp: plain TCP, no authentication (labs only)
  std::string state_path = kDefaultStatePath;  // --agent-state FILE | none
  size_t max_message_bytes = 512u << 20;       // --agent-max-message-mb
  // The journal is compacted (a new snapshot) when it passes max(this, the snapshot's size).
  size_t journal_min_bytes = size_t(16) << 20;  // --agent-journal-kb
  unsigned max_watchers = 64;                   // concurrent WatchEvents streams
};

// Adds --agent-*, --no-agent to `app` (option group "gRPC agent"); parsing fills `options`.
void add_agent_options(CLI::App& app, AgentOptions& options);

// Removes the agent's options (and their values) from `args`, filling `options`. Returns
// false with `error` on a malformed or unknown agent option. Other arguments are left in
// place, in order.
bool take_agent_options(std::vector<std::string>& args, AgentOptions& options, std::string& error);

// Help text of the agent options alone.
std::string agent_usage();

// True when `listen` names a unix socket ("unix:PATH", "unix://PATH" or an absolute path).
bool is_unix_listen(const std::string& listen);
// The socket path of a unix listen address, or "".
std::string unix_socket_path(const std::string& listen);

}  // namespace srv6gw::agent
