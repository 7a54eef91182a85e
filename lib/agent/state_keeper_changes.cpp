// SPDX-License-Identifier: BSD-3-Clause
// The three changes that go through StateKeeper's commit step: a batch (Apply), local SR
// engine parameters (SetEngineParams) and a path down or up (SetPathState). Each validates,
// then describes its step (run, undo, publish, event) for commit() in state_keeper.cpp.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>

#include "agent/state_keeper.hpp"
#include "agent/state_keeper_detail.hpp"

namespace srv6gw::agent {

using namespace keeper_detail;

namespace {

std::string stale_generation(uint64_t expected, uint64_t running) {
  return "stale generation: expected_generation is " + std::to_string(expected) +
         ", the running generation is " + std::to_string(running);
}

// "params.<field>: <why> (<YANG node>)" for a refusal under /srv6gw:gateway/engine, else the
// refusal as it is (a configuration that did not validate for another reason).
std::string describe_engine_error(const config::ConfigError& e) {
  constexpr std::string_view kEngine = "/srv6gw:gateway/engine/";
  if (e.path.rfind(kEngine, 0) == 0) {
    std::string field = e.path.substr(kEngine.size());
    std::replace(field.begin(), field.end(), '-', '_');
    return "params." + field + ": " + e.message + " (" + e.path + ")";
  }
  return "configuration refused: " + e.message + " (" + e.path + ")";
}

// Paths down whose path id the configuration no longer has are forgotten (the engine forgets
// them too: its path state follows the path id).
std::vector<PathDown> paths_still_configured(const std::vector<PathDown>& down,
                                             const config::GatewayConfig& cfg) {
  std::vector<PathDown> kept;
  for (const PathDown& d : down) {
    bool known = false;
    for (const config::Policy& p : cfg.policies)
      for (const config::SegmentList& sl : p.segment_lists) known |= sl.path_id == d.path_id;
    if (known) kept.push_back(d);
  }
  return kept;
}

}  // namespace

std::optional<Refusal> StateKeeper::apply(
    const google::protobuf::RepeatedPtrField<v1::Change>& changes,
    std::optional<uint64_t> expected_generation, bool dry_run, const std::string& origin,
    ApplyResult& result, double parse_ms) {
  const auto t0 = Clock::now();
  const double cpu0 = thread_cpu_ms();
  // What the log line says once the change is durable (the lock is released before).
  uint64_t ticket = 0;
  ChangeCounts c;
  Batch::Times batch_times;
  StepTimes times;
  double batch_ms = 0, edit_ms = 0;
  uint64_t generation = 0;
  {
    std::unique_lock apply_lock(apply_mutex_);
    if (!dry_run) before_change(/*group=*/true);
    const auto base = snapshot();
    if (expected_generation && *expected_generation != base->generation) {
      const std::string message = stale_generation(*expected_generation, base->generation);
      // Logged like every other refusal: two controllers racing each other must be visible.
      spdlog::warn("agent: refused a batch of {} changes from {}: {}", changes.size(), origin,
                   message);
      return refused(Refusal::Code::failed_precondition, message);
    }
    if (changes.empty())
      return refused(Refusal::Code::invalid_argument, "changes: the batch is empty");

    // Validate.
    Batch batch(*base, index_, changes);
    if (auto e = batch.run()) {
      spdlog::warn("agent: {}refused a batch of {} changes from {}: {}", dry_run ? "dry run " : "",
                   changes.size(), origin, e->message);
      return refused(e->code == BatchCode::not_found ? Refusal::Code::not_found
                                                     : Refusal::Code::invalid_argument,
                     e->message);
    }
    batch_ms = ms_since(t0);
    result.counts = batch.counts();
    if (dry_run) {
      result.generation = base->generation;
      spdlog::info("agent: dry run of {} changes from {} would apply ({:.1f} ms)", changes.size(),
                   origin, batch_ms);
      return std::nullopt;
    }

    const auto t_edit = Clock::now();
    std::shared_ptr<AgentState> next = take_spare(base);
    apply_changeset(batch.changeset(), *next);
    next->generation = base->generation + 1;
    edit_ms = ms_since(t_edit);
    // The data plane edits only the steering entries the batch changed (O(batch), not
    // O(configuration)); the pointers are valid until the batch and `base` go.
    policy::SteeringDelta steering_delta;
    steering_delta.rules.reserve(batch.delta().rules.size());
    for (const config::RuleDelta& d : batch.delta().rules)
      steering_delta.rules.push_back({d.before, d.after, d.after_index});

    Step step;
    step.config = &next->config;
    step.generation = next->generation;
    step.changes = &batch.changeset();
    step.run = [&](StateExtras& extras) -> std::optional<Refusal> {
      if (auto e = sink_.apply_delta(next->config, steering_delta)) {
        const std::string msg = "data plane refused: " + batch.describe(*e);
        spdlog::warn("agent: batch from {} {}", origin, msg);
        return refused(Refusal::Code::invalid_argument, msg);  // `next` is dropped
      }
      extras.paths_down = paths_still_configured(extras.paths_down, next->config);
      if (!batch.changeset().rails.empty()) extras.rails_from_agent = true;
      return std::nullopt;
    };
    step.undo = [&] { roll_back_data_plane(base->config, steering_delta.inverse()); };
    step.inverse = [&] {
      const config::ConfigDelta& delta = batch.delta();
      Changeset inverse;
      for (const config::PolicyDelta& d : delta.policies)
        inverse.policies.emplace_back(d.before ? d.before->name : d.after->name,
                                      d.before ? std::optional(*d.before) : std::nullopt);
      inverse.rules.reserve(delta.rules.size());
      for (const config::RuleDelta& d : delta.rules)
        inverse.rules.emplace_back(d.before ? d.before->id : d.after->id,
                                   d.before ? std::optional(*d.before) : std::nullopt);
      for (const config::LocalSidDelta& d : delta.local_sids)
        inverse.local_sids.emplace_back(d.before ? d.before->sid : d.after->sid,
                                        d.before ? std::optional(*d.before) : std::nullopt);
      for (const config::Rail& changed : batch.changeset().rails)
        for (const config::Rail& r : base->config.rails)
          if (r.name == changed.name) inverse.rails.push_back(r);
      return inverse;
    };
    step.publish = [&] {
      index_.commit(batch.delta());  // before `base` can be edited: delta() points into it
      spare_ = std::move(current_mutable_);
      spare_behind_ = batch.take_changeset();
      current_mutable_ = next;
      publish(std::move(next));
    };
    step.event = Event{};
    step.event->kind = EventKind::config_applied;
    step.event->detail = ConfigAppliedEvent{batch.counts(), origin};
    step.what = "generation " + std::to_string(step.generation);
    step.undoing = "rolling back";
    step.undone = "the change was rolled back";
    if (auto refusal = commit(step, &times, &ticket)) return refusal;
    c = batch.counts();
    batch_times = batch.times();
    generation = step.generation;
  }  // the apply lock, the base state and the batch go before waiting

  const auto t_wait = Clock::now();
  if (ticket) {
    if (auto why = wait_durable(ticket, /*apply_locked=*/false); !why.empty()) {
      spdlog::error("agent: generation {} from {} was not persisted ({}) and was rolled back",
                    generation, origin, why);
      return refused(Refusal::Code::unavailable,
                     "the state could not be persisted (" + why + "); the change was rolled back");
    }
    times.persist_ms += ms_since(t_wait);
  }
  spdlog::info(
      "agent: generation {} from {}: policies +{} -{}, steering +{} -{}, local SIDs +{} -{}, "
      "rails ~{} (validate {:.1f} ms, edit {:.1f} ms, data plane {:.1f} ms, persist {:.1f} ms); "
      "validate = convert {:.1f} + delta {:.1f} + check {:.1f} ms; index commit {:.1f} ms; "
      "in the handler {:.1f} ms, after parsing the request in {:.1f} ms; thread CPU {:.1f} ms "
      "(data plane {:.1f} ms)",
      generation, origin, c.policies_upserted, c.policies_deleted, c.steering_upserted,
      c.steering_deleted, c.local_sids_upserted, c.local_sids_deleted, c.rails_upserted, batch_ms,
      edit_ms, times.run_ms, times.persist_ms, batch_times.convert_ms, batch_times.delta_ms,
      batch_times.check_ms, times.publish_ms, ms_since(t0), parse_ms, thread_cpu_ms() - cpu0,
      times.run_cpu_ms);
  result.generation = generation;
  return std::nullopt;
}

std::optional<Refusal> StateKeeper::set_engine_params(const EngineParamsEdit& edit,
                                                      std::optional<uint64_t> expected_generation,
                                                      bool dry_run, const std::string& origin,
                                                      EngineParamsResult& result) {
  std::lock_guard apply_lock(apply_mutex_);
  if (!dry_run) before_change(/*group=*/false);
  const auto base = snapshot();
  if (expected_generation && *expected_generation != base->generation) {
    const std::string message = stale_generation(*expected_generation, base->generation);
    spdlog::warn("agent: refused engine parameters from {}: {}", origin, message);
    return refused(Refusal::Code::failed_precondition, message);
  }
  // Validate.
  engine::Params params = base->config.engine;
  if (auto bad = edit(params); !bad.empty()) {
    spdlog::warn("agent: refused engine parameters from {}: {}", origin, bad);
    return refused(Refusal::Code::invalid_argument, bad);
  }
  config::GatewayConfig candidate = base->config;
  candidate.engine = params;
  if (auto e = config::validate(candidate)) {
    const std::string msg = describe_engine_error(*e);
    spdlog::warn("agent: {}refused engine parameters from {}: {}", dry_run ? "dry run " : "",
                 origin, msg);
    return refused(Refusal::Code::invalid_argument, msg);
  }
  result.params = params;
  result.generation = base->generation;
  result.changed = !(params == base->config.engine);
  if (dry_run || !result.changed) return std::nullopt;

  Step step;
  step.config = &candidate;
  step.generation = base->generation + 1;
  step.engine_changed = true;
  step.run = [&](StateExtras& extras) -> std::optional<Refusal> {
    // Steering is unchanged: an empty delta spares the data plane a walk of every rule.
    if (auto e = sink_.apply_delta(candidate, policy::SteeringDelta{})) {
      const std::string msg = "data plane refused: " + describe_engine_error(*e);
      spdlog::warn("agent: engine parameters from {}: {}", origin, msg);
      return refused(Refusal::Code::invalid_argument, msg);
    }
    extras.engine_params_from_agent = true;
    return std::nullopt;
  };
  step.undo = [&] { roll_back_data_plane(base->config, policy::SteeringDelta{}); };
  step.publish = [&] {
    engine_params_from_agent_.store(true);
    // The new state replaces the whole configuration object, so Apply's spare (an older copy
    // it would bring up to date with policy changes only) and the index (pointers into the
    // replaced object) are rebuilt from it: otherwise the next Apply would edit the spare and
    // silently revert these parameters.
    auto next = make_state(std::move(candidate), step.generation);
    spare_.reset();
    spare_behind_ = Changeset{};
    current_mutable_ = next;
    index_ = config::ConfigIndex(current_mutable_->config);
    publish(std::move(next));
  };
  step.event = Event{};
  step.event->kind = EventKind::config_applied;
  step.event->detail = ConfigAppliedEvent{ChangeCounts{}, origin, true};
  step.what = "generation " + std::to_string(step.generation);
  step.undoing = "rolling back";
  step.undone = "the change was rolled back";
  if (auto refusal = commit(step)) return refusal;
  spdlog::info("agent: generation {} from {}: local SR engine parameters changed", step.generation,
               origin);
  result.generation = step.generation;
  return std::nullopt;
}

std::optional<Refusal> StateKeeper::set_path_state(const PathStateCommand& cmd,
                                                   const PathStateHandler& handler,
                                                   const std::string& origin, PathStateOutcome& out,
                                                   uint64_t& generation) {
  std::lock_guard apply_lock(apply_mutex_);
  before_change(/*group=*/false);
  const auto base = snapshot();
  const std::string what = "policy '" + cmd.policy + "' " +
                           (cmd.segment_list ? "segment-list '" + *cmd.segment_list + "'"
                                             : "path id " + std::to_string(*cmd.path_id));
  Step step;
  step.config = &base->config;
  step.generation = base->generation;
  step.config_changes = false;
  // The engine validates the command (which path) and runs it.
  step.run = [&](StateExtras& extras) -> std::optional<Refusal> {
    out = handler(cmd);
    auto because = [&](const char* otherwise) {
      return what + ": " + (out.message.empty() ? otherwise : out.message);
    };
    switch (out.status) {
      case PathStateOutcome::Status::ok:
        break;
      case PathStateOutcome::Status::not_found:
        return refused(Refusal::Code::not_found, because("no such path"));
      case PathStateOutcome::Status::engine_disabled:
        return refused(Refusal::Code::failed_precondition,
                       because("the local SR engine is disabled"));
      case PathStateOutcome::Status::unavailable:
        return refused(Refusal::Code::unavailable, because("not running"));
    }
    auto& down = extras.paths_down;
    down.erase(std::remove_if(down.begin(), down.end(),
                              [&](const PathDown& d) { return d.path_id == out.path_id; }),
               down.end());
    if (!cmd.up) down.push_back(PathDown{cmd.policy, out.segment_list, out.path_id});
    return std::nullopt;
  };
  step.undo = [&] {
    if (!out.changed) return;
    PathStateCommand undo = cmd;
    undo.up = !cmd.up;
    undo.segment_list.reset();
    undo.path_id = out.path_id;
    if (handler(undo).status != PathStateOutcome::Status::ok)
      spdlog::critical("agent: could not put {} back; the engine runs an unpersisted state", what);
  };
  step.publish = [] {};  // the engine runs it already; only the extras change
  step.what = what + (cmd.up ? " up" : " down");
  step.undoing = "putting it back";
  step.refusal_prefix = what + ": ";
  step.undone = "the path was put back as it was";
  if (auto refusal = commit(step)) return refusal;
  spdlog::info("agent: {} set {} by {}{}", what, cmd.up ? "up" : "down", origin,
               out.changed ? "" : " (no change)");
  generation = snapshot()->generation;
  return std::nullopt;
}

}  // namespace srv6gw::agent
