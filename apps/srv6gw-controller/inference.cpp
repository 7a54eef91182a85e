// SPDX-License-Identifier: BSD-3-Clause
#include "inference.hpp"

#include <map>

namespace srv6gw::sr_controller {

LinkInference infer_failed_links(const std::vector<ProbedPath>& paths) {
  LinkInference out;
  std::set<std::string> alive;
  for (const auto& p : paths) {
    if (!p.down) alive.insert(p.links.begin(), p.links.end());
  }
  // Candidate link -> the down paths (indexes) it could explain.
  std::map<std::string, std::set<size_t>> hits;
  std::set<size_t> unexplained;
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto& p = paths[i];
    if (!p.down) continue;
    bool any = false;
    for (const auto& l : p.links) {
      if (alive.count(l)) continue;
      hits[l].insert(i);
      any = true;
    }
    if (any) {
      unexplained.insert(i);
    } else {
      out.unexplained.push_back(p.gateway + "/" + std::to_string(p.path_id));
    }
  }
  // Indistinguishable links (same set of down paths) form one group.
  std::map<std::set<size_t>, std::vector<std::string>> groups;
  for (const auto& [link, set] : hits) groups[set].push_back(link);
  while (!unexplained.empty()) {
    const std::vector<std::string>* best = nullptr;
    const std::set<size_t>* best_set = nullptr;
    size_t best_n = 0;
    for (const auto& [set, links] : groups) {
      size_t n = 0;
      for (size_t i : set) n += unexplained.count(i);
      // Prefer more explained paths, then the smaller group (a more precise guess).
      if (n > best_n || (n == best_n && n > 0 && links.size() < best->size())) {
        best = &links;
        best_set = &set;
        best_n = n;
      }
    }
    if (!best) break;
    out.down.insert(best->begin(), best->end());
    if (best->size() > 1) out.ambiguous = true;
    for (size_t i : *best_set) unexplained.erase(i);
  }
  return out;
}

}  // namespace srv6gw::sr_controller
