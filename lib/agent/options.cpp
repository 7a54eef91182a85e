// SPDX-License-Identifier: BSD-3-Clause
#include "agent/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>

namespace srv6gw::agent {

void add_agent_options(CLI::App& app, AgentOptions& o) {
  const std::string group = "gRPC agent";
  app.add_option("--agent-listen", o.listen,
                 "unix:PATH (default " + std::string(kDefaultListen) +
                     ") or HOST:PORT (TCP: needs mutual TLS, below)")
      ->type_name("ADDR")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("needs an address (unix:PATH or HOST:PORT)") : std::string();
      })
      ->group(group);
  app.add_option("--agent-tls-cert", o.tls_cert, "server certificate chain (PEM) for TCP")
      ->type_name("FILE")
      ->group(group);
  app.add_option("--agent-tls-key", o.tls_key, "server private key (PEM) for TCP")
      ->type_name("FILE")
      ->group(group);
  app.add_option("--agent-tls-client-ca", o.tls_client_ca,
                 "CA that client certificates must chain to (PEM)")
      ->type_name("FILE")
      ->group(group);
  app.add_flag("--agent-insecure-tcp", o.insecure_tcp,
               "plain TCP without TLS (lab only: whoever reaches the port controls "
               "the gateway)")
      ->disable_flag_override()
      ->group(group);
  app.add_option_function<std::string>(
         "--agent-state", [&o](const std::string& v) { o.state_path = v == "none" ? "" : v; },
         "applied state, restored at start (default " + std::string(kDefaultStatePath) + ")")
      ->type_name("FILE|none")
      ->group(group);
  app.add_option_function<unsigned>(
         "--agent-max-message-mb",
         [&o](const unsigned& mb) { o.max_message_bytes = size_t(mb) << 20; },
         "largest request/response in MB (default 512)")
      ->type_name("N")
      ->check(CLI::Range(4u, 2047u).description(""))
      ->group(group);
  app.add_option_function<unsigned>(
         "--agent-journal-kb", [&o](const unsigned& kb) { o.journal_min_bytes = size_t(kb) << 10; },
         "compact the journal (a new snapshot, in the background) once it passes this many "
         "KiB and the snapshot's size (default 16384)")
      ->type_name("N")
      ->check(CLI::Range(1u, 16u << 20).description(""))
      ->group(group);
  app.add_flag_callback(
         "--no-agent", [&o] { o.enabled = false; }, "no gRPC agent")
      ->disable_flag_override()
      ->group(group);
}

bool take_agent_options(std::vector<std::string>& args, AgentOptions& options, std::string& error) {
  CLI::App app;
  app.allow_extras();
  app.set_help_flag();  // --help stays with the caller
  add_agent_options(app, options);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    error = e.what();
    return false;
  }
  std::vector<std::string> rest = app.remaining();
  const auto unknown = std::find_if(rest.begin(), rest.end(), [](const std::string& a) {
    return a.rfind("--agent-", 0) == 0 || a.rfind("--no-agent", 0) == 0;
  });
  if (unknown != rest.end()) {
    error = "unknown agent option " + *unknown;
    return false;
  }
  args = std::move(rest);
  return true;
}

std::string agent_usage() {
  CLI::App app;
  app.set_help_flag();
  AgentOptions unused;
  add_agent_options(app, unused);
  const std::string help = app.help();
  // Only the group (CLI11 starts with a usage line for the empty program name).
  const auto group = help.find("gRPC agent:");
  return group == std::string::npos ? help : help.substr(group);
}

bool is_unix_listen(const std::string& listen) {
  return listen.rfind("unix:", 0) == 0 || (!listen.empty() && listen[0] == '/');
}

std::string unix_socket_path(const std::string& listen) {
  if (listen.rfind("unix://", 0) == 0) return listen.substr(7);
  if (listen.rfind("unix:", 0) == 0) return listen.substr(5);
  if (!listen.empty() && listen[0] == '/') return listen;
  return "";
}

}  // namespace srv6gw::agent
