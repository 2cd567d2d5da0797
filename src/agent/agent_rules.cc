#include "agent/agent_rules.h"

#include <fmt/format.h>

namespace pagellm::agent {
namespace {

template <typename T>
Status Read(const OrderedJson& obj, const char* key, T* out) {
  if (!obj.contains(key)) return OkStatus();
  const OrderedJson& v = obj[key];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return InvalidArgumentError(fmt::format("rules: {} must be a string", key));
    *out = v.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return InvalidArgumentError(fmt::format("rules: {} must be true or false", key));
    *out = v.get<bool>();
  } else {
    if (!v.is_number()) return InvalidArgumentError(fmt::format("rules: {} must be a number", key));
    *out = v.get<T>();
  }
  return OkStatus();
}

Status CheckKeys(const OrderedJson& obj, const char* rule, std::initializer_list<const char*> known) {
  for (const auto& [k, v] : obj.items()) {
    bool ok = false;
    for (const char* name : known) ok = ok || k == name;
    if (!ok) return InvalidArgumentError(fmt::format("rules: {}: unknown key \"{}\"", rule, k));
  }
  return OkStatus();
}

}  // namespace

StatusOr<AgentRules> ParseAgentRules(const std::string& json_text) {
  AgentRules rules;
  OrderedJson j = OrderedJson::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("rules: not a JSON object");
  PAGELLM_RETURN_IF_ERROR(CheckKeys(j, "the file", {"kv_pressure", "unready"}));
  if (j.contains("kv_pressure")) {
    const OrderedJson& r = j["kv_pressure"];
    if (!r.is_object()) return InvalidArgumentError("rules: kv_pressure must be an object");
    PAGELLM_RETURN_IF_ERROR(CheckKeys(r, "kv_pressure", {"enabled", "above", "for_s", "release_below", "preempt_to"}));
    KvPressureRule& k = rules.kv_pressure;
    PAGELLM_RETURN_IF_ERROR(Read(r, "enabled", &k.enabled));
    PAGELLM_RETURN_IF_ERROR(Read(r, "above", &k.above));
    PAGELLM_RETURN_IF_ERROR(Read(r, "for_s", &k.for_s));
    PAGELLM_RETURN_IF_ERROR(Read(r, "release_below", &k.release_below));
    PAGELLM_RETURN_IF_ERROR(Read(r, "preempt_to", &k.preempt_to));
    if (!(k.preempt_to >= 0.0 && k.preempt_to <= 1.0)) return InvalidArgumentError("rules: kv_pressure.preempt_to must be in [0, 1]");
    if (k.release_below > k.above) return InvalidArgumentError("rules: kv_pressure.release_below must be <= above");
  }
  if (j.contains("unready")) {
    const OrderedJson& r = j["unready"];
    if (!r.is_object()) return InvalidArgumentError("rules: unready must be an object");
    PAGELLM_RETURN_IF_ERROR(CheckKeys(r, "unready", {"enabled", "failures", "restart_command", "restart_timeout_s",
                                                     "fallback_command", "max_restarts", "restart_window_s"}));
    UnreadyRule& u = rules.unready;
    PAGELLM_RETURN_IF_ERROR(Read(r, "enabled", &u.enabled));
    PAGELLM_RETURN_IF_ERROR(Read(r, "failures", &u.failures));
    PAGELLM_RETURN_IF_ERROR(Read(r, "restart_command", &u.restart_command));
    PAGELLM_RETURN_IF_ERROR(Read(r, "restart_timeout_s", &u.restart_timeout_s));
    PAGELLM_RETURN_IF_ERROR(Read(r, "fallback_command", &u.fallback_command));
    PAGELLM_RETURN_IF_ERROR(Read(r, "max_restarts", &u.max_restarts));
    PAGELLM_RETURN_IF_ERROR(Read(r, "restart_window_s", &u.restart_window_s));
    if (u.max_restarts < 1) return InvalidArgumentError("rules: unready.max_restarts must be >= 1");
    if (u.failures < 1) return InvalidArgumentError("rules: unready.failures must be >= 1");
  }
  return rules;
}

const char* DecisionName(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kDrainAndReclaim: return "drain_and_reclaim";
    case DecisionKind::kReadmit: return "readmit";
    case DecisionKind::kRestart: return "restart";
    case DecisionKind::kRestartDegraded: return "restart_degraded";
    case DecisionKind::kAlert: return "alert";
  }
  return "?";
}

std::vector<Decision> RuleEvaluator::Observe(const WorkerSample& s) {
  std::vector<Decision> out;
  State& st = state_[s.url];
  if (st.restarting) return out;  // the restart owns the worker until it is done
  const bool progressing = s.scraped && st.last_tokens_total >= 0 && s.tokens_total > st.last_tokens_total;
  if (s.scraped) st.last_tokens_total = s.tokens_total;
  const bool healthy = s.scraped && (s.probe_ok || progressing);
  st.probe_failures = healthy ? 0 : st.probe_failures + 1;
  const UnreadyRule& u = rules_.unready;
  if (u.enabled && st.probe_failures >= u.failures) {
    st.restarting = true;
    std::erase_if(st.restart_times, [&](double t) { return s.now_s - t > u.restart_window_s; });
    const int recent = static_cast<int>(st.restart_times.size());
    OrderedJson m = {{"consecutive_failures", st.probe_failures}, {"scraped", s.scraped}, {"probe_ok", s.probe_ok},
                     {"tokens_total", s.tokens_total},
                     {"restarts_in_window", recent}, {"last_restart_failed", st.last_restart_failed}};
    DecisionKind kind = u.restart_command.empty() ? DecisionKind::kAlert : DecisionKind::kRestart;
    const bool degraded = st.last_restart_failed || recent >= u.max_restarts;
    if (!u.fallback_command.empty() && degraded) kind = DecisionKind::kRestartDegraded;
    out.push_back({kind, "unready", s.url, m});
    return out;
  }
  const KvPressureRule& k = rules_.kv_pressure;
  if (!k.enabled || !s.scraped) return out;
  if (s.kv_usage > k.above) {
    if (!st.kv_high_since) st.kv_high_since = s.now_s;
    if (!st.drained_for_kv && s.now_s - *st.kv_high_since >= k.for_s) {
      st.drained_for_kv = true;
      out.push_back({DecisionKind::kDrainAndReclaim, "kv_pressure", s.url,
                     {{"kv_cache_usage_perc", s.kv_usage}, {"above", k.above}, {"for_s", s.now_s - *st.kv_high_since},
                      {"preempt_to", k.preempt_to}}});
    }
    return out;
  }
  st.kv_high_since.reset();
  if (st.drained_for_kv && s.kv_usage < k.release_below) {
    st.drained_for_kv = false;
    out.push_back({DecisionKind::kReadmit, "kv_pressure", s.url,
                   {{"kv_cache_usage_perc", s.kv_usage}, {"release_below", k.release_below}}});
  }
  return out;
}

void RuleEvaluator::OnRestartDone(const std::string& url, bool came_back, double now_s) {
  State& st = state_[url];
  std::vector<double> times = std::move(st.restart_times);
  times.push_back(now_s);
  st = State{};
  st.restart_times = std::move(times);
  st.last_restart_failed = !came_back;
}

}  // namespace pagellm::agent
