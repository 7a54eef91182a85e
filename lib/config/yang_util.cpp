// SPDX-License-Identifier: BSD-3-Clause
#include "config/yang_util.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>

namespace srv6gw::config::yang {
namespace {

// The quoted path after `label` in libyang's location text, e.g. 'Data location "/a/b",
// line number 3.' -> "/a/b".
std::optional<std::string> quoted_after(std::string_view text, std::string_view label) {
  const auto at = text.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  const auto begin = at + label.size();
  const auto end = text.find('"', begin);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

ConfigError libyang_error(const ly_ctx* ctx, std::string_view fallback) {
  for (const ly_err_item* e = ly_err_first(ctx); e; e = e->next) {
    if (e->level != LY_LLERR) continue;
    ConfigError out;
    out.message = e->msg ? e->msg : std::string(fallback);
    // libyang ends its sentences with a period; our messages do not.
    while (!out.message.empty() && (out.message.back() == '.' || out.message.back() == ' ')) {
      out.message.pop_back();
    }
    const std::string_view location = e->path ? e->path : "";
    if (auto p = quoted_after(location, "ata location \"")) {
      out.path = *p;
    } else if (auto s = quoted_after(location, "chema location \"")) {
      out.path = *s;
    } else if (!location.empty() && location.front() == '/') {
      out.path = std::string(location);
    }
    if (const auto at = location.find("line number "); at != std::string_view::npos) {
      const auto digits = location.substr(at + 12);
      const auto len = digits.find_first_not_of("0123456789");
      out.message += " (line " + std::string(digits.substr(0, len)) + ")";
    }
    return out;
  }
  return ConfigError{"", std::string(fallback)};
}

std::variant<CtxPtr, ConfigError> make_context(const std::string& dir, const char* module) {
  ly_ctx* raw = nullptr;
  if (ly_ctx_new(dir.c_str(), LY_CTX_NO_YANGLIBRARY | LY_CTX_DISABLE_SEARCHDIR_CWD, &raw) !=
      LY_SUCCESS) {
    return ConfigError{"", "cannot create a libyang context for " + dir};
  }
  CtxPtr ctx(raw);
  if (!ly_ctx_load_module(ctx.get(), module, nullptr, nullptr)) {
    ConfigError e = libyang_error(ctx.get(), "cannot load the YANG module");
    e.message = "cannot load YANG module " + dir + "/" + module + ".yang: " + e.message;
    return e;
  }
  return ctx;
}

const lyd_node* find_top(const lyd_node* tree, const char* module, std::string_view name) {
  const lyd_node* top = nullptr;
  for (const lyd_node* n = tree; n; n = n->next) {
    if (name_of(n) == name && n->schema->module &&
        std::strcmp(n->schema->module->name, module) == 0) {
      top = n;
    }
  }
  return top;
}

std::string node_path(const lyd_node* n) {
  char* p = lyd_path(n, LYD_PATH_STD, nullptr, 0);
  std::string out = p ? p : "";
  std::free(p);
  return out;
}

void fail(const lyd_node* n, std::string message) {
  throw NodeError{ConfigError{node_path(n), std::move(message)}};
}

void fail_at(std::string path, std::string message) {
  throw NodeError{ConfigError{std::move(path), std::move(message)}};
}

std::string_view name_of(const lyd_node* n) {
  return n->schema ? n->schema->name : "";
}

std::string_view value_of(const lyd_node* n) {
  const char* v = lyd_get_value(n);
  return v ? std::string_view(v) : std::string_view();
}

}  // namespace srv6gw::config::yang
