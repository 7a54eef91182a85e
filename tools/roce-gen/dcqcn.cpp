// SPDX-License-Identifier: BSD-3-Clause
#include "roce-gen/dcqcn.hpp"

#include <algorithm>
#include <cmath>

namespace srv6gw::rocegen {

DcqcnParams DcqcnParams::paper_scaled(double line_rate_bps, double rate_scale) {
  DcqcnParams p;
  const auto scale_time = [rate_scale](uint64_t ns) {
    return uint64_t(std::llround(double(ns) / rate_scale));
  };
  p.line_rate_bps = line_rate_bps;
  p.min_rate_bps = p.min_rate_bps * rate_scale;
  p.alpha_timer_ns = scale_time(p.alpha_timer_ns);
  p.increase_timer_ns = scale_time(p.increase_timer_ns);
  p.ai_rate_bps = p.ai_rate_bps * rate_scale;
  p.hai_rate_bps = p.hai_rate_bps * rate_scale;
  p.rate_reduce_period_ns = scale_time(p.rate_reduce_period_ns);
  return p;
}

const char* DcqcnParams::invalid_field() const {
  if (!(line_rate_bps > 0)) return "line_rate_bps";
  if (!(min_rate_bps > 0) || min_rate_bps > line_rate_bps) return "min_rate_bps";
  if (!(g > 0) || g > 1) return "g";
  if (initial_alpha < 0 || initial_alpha > 1) return "initial_alpha";
  if (alpha_timer_ns == 0) return "alpha_timer_ns";
  if (increase_timer_ns == 0) return "increase_timer_ns";
  if (byte_counter_bytes == 0) return "byte_counter_bytes";
  if (fast_recovery_steps == 0) return "fast_recovery_steps";
  if (ai_rate_bps < 0) return "ai_rate_bps";
  if (hai_rate_bps < 0) return "hai_rate_bps";
  return nullptr;
}

const char* to_string(DcqcnStage stage) {
  switch (stage) {
    case DcqcnStage::line_rate:
      return "line-rate";
    case DcqcnStage::fast_recovery:
      return "fast-recovery";
    case DcqcnStage::additive_increase:
      return "additive-increase";
    case DcqcnStage::hyper_increase:
      return "hyper-increase";
  }
  return "?";
}

DcqcnReactionPoint::DcqcnReactionPoint(const DcqcnParams& params, uint64_t now_ns)
    : params_(params),
      current_(params.line_rate_bps),
      target_(params.line_rate_bps),
      alpha_(params.initial_alpha),
      next_alpha_ns_(now_ns + params.alpha_timer_ns),
      next_increase_ns_(now_ns + params.increase_timer_ns) {}

DcqcnStage DcqcnReactionPoint::stage() const {
  if (current_ >= params_.line_rate_bps && target_ >= params_.line_rate_bps) {
    return DcqcnStage::line_rate;
  }
  const uint32_t f = params_.fast_recovery_steps;
  if (std::max(timer_count_, byte_count_) < f) return DcqcnStage::fast_recovery;
  if (std::min(timer_count_, byte_count_) >= f) return DcqcnStage::hyper_increase;
  return DcqcnStage::additive_increase;
}

uint64_t DcqcnReactionPoint::next_timer_ns() const {
  return std::min(next_alpha_ns_, next_increase_ns_);
}

void DcqcnReactionPoint::clamp() {
  target_ = std::clamp(target_, params_.min_rate_bps, params_.line_rate_bps);
  current_ = std::clamp(current_, params_.min_rate_bps, params_.line_rate_bps);
}

void DcqcnReactionPoint::increase() {
  switch (stage()) {
    case DcqcnStage::line_rate:
      return;
    case DcqcnStage::fast_recovery:
      ++counters_.fast_recovery;
      break;
    case DcqcnStage::additive_increase:
      ++counters_.additive_increase;
      target_ += params_.ai_rate_bps;
      break;
    case DcqcnStage::hyper_increase: {
      ++counters_.hyper_increase;
      const uint32_t i = std::min(timer_count_, byte_count_) - params_.fast_recovery_steps + 1;
      target_ += double(i) * params_.hai_rate_bps;
      break;
    }
  }
  current_ = (target_ + current_) / 2;
  clamp();
}

void DcqcnReactionPoint::advance(uint64_t now_ns) {
  // alpha's decay does not depend on the rates: every due K at once.
  if (now_ns >= next_alpha_ns_) {
    const uint64_t n = (now_ns - next_alpha_ns_) / params_.alpha_timer_ns + 1;
    alpha_ *= std::pow(1 - params_.g, double(n));
    counters_.alpha_decays += n;
    next_alpha_ns_ += n * params_.alpha_timer_ns;
  }
  while (now_ns >= next_increase_ns_) {
    if (stage() == DcqcnStage::line_rate) {
      // Nothing to recover: skip the idle expirations at once (T still counts them).
      const uint64_t n = (now_ns - next_increase_ns_) / params_.increase_timer_ns + 1;
      timer_count_ = uint32_t(std::min<uint64_t>(uint64_t(timer_count_) + n, UINT32_MAX));
      counters_.timer_events += n;
      next_increase_ns_ += n * params_.increase_timer_ns;
      break;
    }
    next_increase_ns_ += params_.increase_timer_ns;
    increase();  // the stage of the counts before this event: F events of fast recovery
    ++timer_count_;
    ++counters_.timer_events;
  }
}

void DcqcnReactionPoint::on_sent(uint64_t bytes, uint64_t now_ns) {
  advance(now_ns);
  bytes_since_event_ += bytes;
  while (bytes_since_event_ >= params_.byte_counter_bytes) {
    bytes_since_event_ -= params_.byte_counter_bytes;
    increase();
    ++byte_count_;
    ++counters_.byte_events;
  }
}

void DcqcnReactionPoint::on_cnp(uint64_t now_ns) {
  advance(now_ns);
  ++counters_.cnps;
  // Increase stages start over from the CNP in any case: the flow is still congested.
  timer_count_ = 0;
  byte_count_ = 0;
  bytes_since_event_ = 0;
  next_increase_ns_ = now_ns + params_.increase_timer_ns;
  if (cut_once_ && now_ns - last_cut_ns_ < params_.rate_reduce_period_ns) return;
  cut_once_ = true;
  last_cut_ns_ = now_ns;
  ++counters_.rate_cuts;
  target_ = current_;
  current_ = current_ * (1 - alpha_ / 2);
  alpha_ = (1 - params_.g) * alpha_ + params_.g;
  next_alpha_ns_ = now_ns + params_.alpha_timer_ns;
  clamp();
}

}  // namespace srv6gw::rocegen
