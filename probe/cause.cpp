#include "probe/cause.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "probe/analysis.h"
#include "probe/trace/culprit_names.h"

namespace corenoise {

using nlohmann::json;

namespace {

std::optional<std::array<double, 2>> reported_interval(const std::optional<double>& value,
                                                       const Uncertainty& u) {
  if (!value) return std::nullopt;
  const auto i = interval(*value, u, kReportedConfidence);
  if (!i) return std::nullopt;
  return std::array<double, 2>{i->lo, i->hi};
}

// The tracer's culprits a sentence names: the largest first, while each is
// at least half a percent of the lost time.
LostTime::Traced traced_of(const trace::Attribution& a, double lost_seconds) {
  LostTime::Traced t;
  t.matched_seconds = a.detour_seconds;
  t.overran = a.overran;
  const double lost = std::max(lost_seconds, 1e-12);
  for (const trace::Culprit& c : a.culprits) {
    if (t.named.size() == kNamedCulprits || c.seconds / lost < 0.005) break;
    // What a sentence cites, and nothing the tracer kept for itself (its
    // ticks, the kernel priority resolve_scheduling has put into words).
    trace::Culprit named;
    named.kind = c.kind;
    named.name = c.name;
    named.id = c.id;
    named.scheduling = c.scheduling;
    named.detours = c.detours;
    named.seconds = c.seconds;
    t.named.push_back(std::move(named));
  }
  return t;
}

LostTime lost_of(const DetourResult& d, const std::optional<trace::Attribution>& culprits) {
  LostTime l;
  l.noise_ratio = d.noise_ratio();
  l.detours = d.count;
  l.max_seconds = d.max_seconds;
  l.total_seconds = d.total_seconds;
  l.preempted_seconds = d.preempted_seconds;
  l.steal_seconds = d.steal_seconds;
  l.preemptions = d.preemptions;
  l.interrupts = d.interrupts.value_or(0) + d.softirqs.value_or(0);
  if (culprits) l.traced = traced_of(*culprits, d.total_seconds);
  return l;
}

}  // namespace

Cause cause_of(const CoreFigures& c) {
  Cause cause;
  cause.cpu_kind = c.kind;
  switch (c.state) {
    case CoreState::throttled:
      cause.figure = c.figure[ProbeKind::clock];
      cause.reference = c.why.reference;
      cause.ratio = c.slowdown[ProbeKind::clock];
      cause.interval = reported_interval(cause.ratio, c.slowdown_error[ProbeKind::clock]);
      break;
    case CoreState::noisy:
      if (c.detour) cause.lost = lost_of(*c.detour, c.culprits);
      cause.ratio = c.excess_noise;
      cause.interval = reported_interval(c.excess_noise, c.excess_noise_error);
      if (c.why.clock_read_low) cause.clock_read_low = c.slowdown[ProbeKind::clock];
      break;
    case CoreState::contended:
      cause.figure = c.figure[ProbeKind::stream];
      cause.ratio = c.slowdown[ProbeKind::stream];
      cause.interval = reported_interval(cause.ratio, c.slowdown_error[ProbeKind::stream]);
      break;
    case CoreState::slow:
      cause.ratio = c.expected_slowdown;
      cause.interval = reported_interval(c.expected_slowdown, c.expected_slowdown_error);
      break;
    default:
      return cause;
  }
  cause.state = c.state;
  return cause;
}

namespace {

bool finite(const std::optional<double>& x) { return x && std::isfinite(*x); }
bool positive(const std::optional<double>& x) { return finite(x) && *x > 0; }

bool skipped_complete(const Cause& c) {
  if (!c.skipped) return false;
  return *c.skipped != SkipReason::busy || finite(c.figure);
}

}  // namespace

bool complete(const Cause& c) {
  switch (c.state) {
    case CoreState::throttled:
      return finite(c.figure) && finite(c.reference) && positive(c.ratio);
    case CoreState::noisy:
      return c.lost && finite(c.ratio) && (!c.clock_read_low || positive(c.clock_read_low));
    case CoreState::contended:
      return finite(c.figure) && positive(c.ratio);
    case CoreState::slow:
      return finite(c.ratio);
    case CoreState::skipped:
      return skipped_complete(c);
    default:
      return true;
  }
}

Cause skipped_cause(SkipReason reason, std::string detail) {
  Cause cause;
  cause.state = CoreState::skipped;
  cause.skipped = reason;
  cause.detail = std::move(detail);
  return cause;
}

// --- The wire form --------------------------------------------------------

namespace {

constexpr std::array<std::pair<SkipReason, const char*>, 6> kSkipNames{{
    {SkipReason::not_selected, "not_selected"},
    {SkipReason::not_probed, "not_probed"},
    {SkipReason::no_samples, "no_samples"},
    {SkipReason::busy, "busy"},
    {SkipReason::no_rank, "no_rank"},
    {SkipReason::other, "other"},
}};

constexpr std::array<trace::CulpritKind, 8> kCulpritKinds{
    trace::CulpritKind::task,        trace::CulpritKind::irq,          trace::CulpritKind::softirq,
    trace::CulpritKind::work,        trace::CulpritKind::below_kernel, trace::CulpritKind::kernel,
    trace::CulpritKind::events_lost, trace::CulpritKind::untraced};

const char* skip_name(SkipReason r) {
  for (const auto& [reason, name] : kSkipNames) {
    if (reason == r) return name;
  }
  return "other";
}

template <typename Enum, std::size_t N, typename NameOf>
Enum parse_name(const std::array<Enum, N>& all, NameOf name_of, const std::string& name,
                const char* what) {
  for (Enum e : all) {
    if (name == name_of(e)) return e;
  }
  throw std::invalid_argument(std::string("unknown ") + what + " '" + name + "'");
}

CoreState state_named(const std::string& name) {
  if (const auto state = core_state_named(name)) return *state;
  throw std::invalid_argument("unknown state '" + name + "'");
}

template <typename T>
void put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

// A figure where it is there: nlohmann writes a NaN or an infinity as null,
// which reads back as absent (and complete() then judges the cause).
template <typename T>
void get(const json& j, const char* key, std::optional<T>& value) {
  if (j.contains(key) && !j.at(key).is_null()) value = j.at(key).get<T>();
}

// A count from another process: a non-negative integer that fits, never a
// float cast to an integer or a negative number wrapped round.
template <typename Int>
Int count_at(const json& j, const char* key) {
  const json& v = j.at(key);
  const bool non_negative =
      v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
  if (!non_negative || v.get<std::uint64_t>() > std::numeric_limits<Int>::max())
    throw std::invalid_argument(std::string("'") + key + "' is not a count");
  return static_cast<Int>(v.get<std::uint64_t>());
}

// An id: -1 (none) or a non-negative integer that fits an int.
int id_at(const json& j, const char* key) {
  if (!j.contains(key)) return -1;
  return count_at<int>(j, key);
}

trace::Culprit culprit_from_json(const json& j) {
  trace::Culprit c;
  c.kind =
      parse_name(kCulpritKinds, trace::kind_name, j.at("kind").get<std::string>(), "culprit kind");
  c.seconds = j.at("seconds").get<double>();
  c.detours = count_at<std::uint64_t>(j, "detours");
  c.name = j.value("name", std::string());
  c.id = id_at(j, "id");
  c.scheduling = j.value("scheduling", std::string());
  return c;
}

json lost_json(const LostTime& l) {
  json j = {{"noise_ratio", l.noise_ratio}, {"detours", l.detours},
            {"max_seconds", l.max_seconds}, {"total_seconds", l.total_seconds},
            {"preemptions", l.preemptions}, {"interrupts", l.interrupts}};
  put(j, "preempted_seconds", l.preempted_seconds);
  put(j, "steal_seconds", l.steal_seconds);
  if (l.traced) {
    json named = json::array();
    for (const auto& c : l.traced->named) named.push_back(culprit_json(c));
    j["traced"] = {{"named", std::move(named)},
                   {"matched_seconds", l.traced->matched_seconds},
                   {"overran", l.traced->overran}};
  }
  return j;
}

LostTime lost_from_json(const json& j) {
  LostTime l;
  l.noise_ratio = j.at("noise_ratio").get<double>();
  l.detours = count_at<std::uint64_t>(j, "detours");
  l.max_seconds = j.at("max_seconds").get<double>();
  l.total_seconds = j.at("total_seconds").get<double>();
  l.preemptions = count_at<std::uint64_t>(j, "preemptions");
  l.interrupts = count_at<std::uint64_t>(j, "interrupts");
  get(j, "preempted_seconds", l.preempted_seconds);
  get(j, "steal_seconds", l.steal_seconds);
  if (j.contains("traced")) {
    const json& t = j.at("traced");
    LostTime::Traced traced;
    const json& named = t.at("named");
    if (!named.is_array() || named.size() > kNamedCulprits)
      throw std::invalid_argument("not a list of at most three culprits");
    for (const json& c : named) traced.named.push_back(culprit_from_json(c));
    traced.matched_seconds = t.at("matched_seconds").get<double>();
    traced.overran = t.at("overran").get<bool>();
    l.traced = std::move(traced);
  }
  return l;
}

void put_decorations(json& j, const Cause& c) {
  if (c.confirmation) {
    j["confirmation"] = {{"confirmed", c.confirmation->confirmed},
                         {"rounds", c.confirmation->rounds}};
    put(j["confirmation"], "figure", c.confirmation->figure);
  }
  if (c.thermal) {
    j["thermal"] = {{"core_events", c.thermal->core_events},
                    {"package_events", c.thermal->package_events}};
  }
  if (c.recurrence) {
    j["recurrence"] = {{"state", to_string(c.recurrence->state)},
                       {"unhealthy", c.recurrence->unhealthy},
                       {"rounds", c.recurrence->rounds},
                       {"needed", c.recurrence->needed}};
  }
}

void get_decorations(const json& j, Cause& c) {
  if (j.contains("confirmation")) {
    const json& x = j.at("confirmation");
    Cause::Confirmation confirmation;
    confirmation.confirmed = x.at("confirmed").get<bool>();
    confirmation.rounds = count_at<int>(x, "rounds");
    get(x, "figure", confirmation.figure);
    c.confirmation = confirmation;
  }
  if (j.contains("thermal")) {
    const json& x = j.at("thermal");
    c.thermal = Cause::Thermal{count_at<std::uint64_t>(x, "core_events"),
                               count_at<std::uint64_t>(x, "package_events")};
  }
  if (j.contains("recurrence")) {
    const json& x = j.at("recurrence");
    c.recurrence = Cause::Recurrence{
        state_named(x.at("state").get<std::string>()), count_at<std::size_t>(x, "unhealthy"),
        count_at<std::size_t>(x, "rounds"), count_at<std::size_t>(x, "needed")};
  }
}

}  // namespace

json culprit_json(const trace::Culprit& c) {
  json j = {{"kind", trace::kind_name(c.kind)}, {"seconds", c.seconds}, {"detours", c.detours}};
  if (!c.name.empty()) j["name"] = c.name;
  if (c.id >= 0) j["id"] = c.id;
  if (!c.scheduling.empty()) j["scheduling"] = c.scheduling;
  return j;
}

json to_json(const Cause& c) {
  json j = {{"state", to_string(c.state)}};
  if (!c.cpu_kind.empty()) j["cpu_kind"] = c.cpu_kind;
  put(j, "figure", c.figure);
  put(j, "reference", c.reference);
  put(j, "ratio", c.ratio);
  put(j, "interval", c.interval);
  if (c.lost) j["lost"] = lost_json(*c.lost);
  put(j, "clock_read_low", c.clock_read_low);
  put_decorations(j, c);
  if (c.skipped) j["skipped"] = skip_name(*c.skipped);
  if (!c.detail.empty()) j["detail"] = c.detail;
  return j;
}

Cause cause_from_json(const json& j) {
  Cause c;
  c.state = state_named(j.at("state").get<std::string>());
  c.cpu_kind = j.value("cpu_kind", std::string());
  get(j, "figure", c.figure);
  get(j, "reference", c.reference);
  get(j, "ratio", c.ratio);
  get(j, "interval", c.interval);
  if (j.contains("lost")) c.lost = lost_from_json(j.at("lost"));
  get(j, "clock_read_low", c.clock_read_low);
  get_decorations(j, c);
  if (j.contains("skipped")) {
    const std::string name = j.at("skipped").get<std::string>();
    std::array<SkipReason, kSkipNames.size()> all{};
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = kSkipNames[i].first;
    c.skipped = parse_name(all, skip_name, name, "skip reason");
  }
  c.detail = j.value("detail", std::string());
  if (!complete(c)) throw std::invalid_argument("a cause without the figures its state cites");
  return c;
}

Cause cause_in(const json& holder) {
  if (!holder.is_object() || !holder.contains("why")) return {};
  try {
    return cause_from_json(holder.at("why"));
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace corenoise
