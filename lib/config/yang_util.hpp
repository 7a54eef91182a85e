// SPDX-License-Identifier: BSD-3-Clause
// libyang helpers shared by the YANG front ends (config/loader.cpp for srv6gw.yang,
// pathalg/loader.cpp for srv6gw-topology.yang): context and tree ownership, log capture,
// libyang's first error as a ConfigError (path + message), and reading data-tree nodes.
// Control plane only.
#pragma once

#include <libyang/libyang.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>

#include "config/model.hpp"

namespace srv6gw::config::yang {

struct CtxDeleter {
  void operator()(ly_ctx* ctx) const { ly_ctx_destroy(ctx); }
};
using CtxPtr = std::unique_ptr<ly_ctx, CtxDeleter>;

struct TreeDeleter {
  void operator()(lyd_node* tree) const { lyd_free_all(tree); }
};
using TreePtr = std::unique_ptr<lyd_node, TreeDeleter>;

// libyang keeps its log state per thread; this stores every message of this thread (instead
// of printing them) for as long as it lives, and restores the global options afterwards.
class ScopedLyLogCapture {
 public:
  ScopedLyLogCapture() { ly_temp_log_options(&opts_); }
  ~ScopedLyLogCapture() { ly_temp_log_options(nullptr); }
  ScopedLyLogCapture(const ScopedLyLogCapture&) = delete;
  ScopedLyLogCapture& operator=(const ScopedLyLogCapture&) = delete;

 private:
  uint32_t opts_ = LY_LOSTORE;
};

// The first error libyang stored: later ones are usually consequences ("parsing failed").
// Its location text holds the data path (or, without data, the schema path) and for parse
// errors the input line: the path becomes ConfigError.path, the line joins the message.
ConfigError libyang_error(const ly_ctx* ctx, std::string_view fallback);

// A context over `dir` (no search in the working directory) with `module` (file
// <dir>/<module>.yang) loaded.
std::variant<CtxPtr, ConfigError> make_context(const std::string& dir, const char* module);

// The top-level node `name` of `module` in a parsed tree, or nullptr.
const lyd_node* find_top(const lyd_node* tree, const char* module, std::string_view name);

// Data tree -> model. libyang has checked every type, range and pattern already, so a
// conversion failure means the schema and the mapping disagree: fail() reports it with the
// node's path (thrown as NodeError, caught by the loader) rather than trusting it.
struct NodeError {
  ConfigError error;
};

std::string node_path(const lyd_node* n);
[[noreturn]] void fail(const lyd_node* n, std::string message);
// Throws NodeError{{path, message}} for an error found without a node at hand.
[[noreturn]] void fail_at(std::string path, std::string message);

std::string_view name_of(const lyd_node* n);
std::string_view value_of(const lyd_node* n);

template <typename T>
T as_uint(const lyd_node* n) {
  static_assert(std::is_unsigned_v<T>);
  const std::string_view v = value_of(n);
  uint64_t x = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x > std::numeric_limits<T>::max()) {
    fail(n, "expected an unsigned number, got '" + std::string(v) + "'");
  }
  return T(x);
}

// Calls f(child, name_of(child)) for every child of `parent`.
template <typename F>
void for_children(const lyd_node* parent, F&& f) {
  for (const lyd_node* c = lyd_child(parent); c; c = c->next) f(c, name_of(c));
}

}  // namespace srv6gw::config::yang
