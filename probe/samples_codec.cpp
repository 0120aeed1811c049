#include "probe/samples_codec.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace corenoise {
namespace {

using nlohmann::json;

json optional_json(const auto& value) { return value ? json(*value) : json(nullptr); }

template <typename T>
std::optional<T> optional_from(const json& j) {
  return j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
}

json detour_json(const DetourResult& d) {
  return {{"window", d.window_seconds},
          {"threshold", d.threshold_seconds},
          {"count", d.count},
          {"total", d.total_seconds},
          {"max", d.max_seconds},
          {"histogram", d.histogram},
          {"interrupts", optional_json(d.interrupts)},
          {"softirqs", optional_json(d.softirqs)},
          {"steal", optional_json(d.steal_seconds)},
          {"preemptions", d.preemptions},
          {"preempted", optional_json(d.preempted_seconds)}};
}

DetourResult detour_from(const json& j) {
  DetourResult d;
  d.window_seconds = j.at("window").get<double>();
  d.threshold_seconds = j.at("threshold").get<double>();
  d.count = j.at("count").get<std::uint64_t>();
  d.total_seconds = j.at("total").get<double>();
  d.max_seconds = j.at("max").get<double>();
  d.histogram = j.at("histogram").get<decltype(d.histogram)>();
  d.interrupts = optional_from<std::uint64_t>(j.at("interrupts"));
  d.softirqs = optional_from<std::uint64_t>(j.at("softirqs"));
  d.steal_seconds = optional_from<double>(j.at("steal"));
  d.preemptions = j.at("preemptions").get<std::uint64_t>();
  d.preempted_seconds = optional_from<double>(j.at("preempted"));
  return d;
}

// What the rank's own tracer charged its detours to (matched on the rank,
// which alone has its windows' marks).
json culprits_json(const std::optional<trace::Attribution>& a) {
  if (!a) return nullptr;
  json list = json::array();
  for (const trace::Culprit& c : a->culprits) {
    list.push_back({static_cast<int>(c.kind), c.name, c.id, c.prio, c.scheduling, c.ticks,
                    c.detours, c.seconds});
  }
  return {{"ticks", a->detour_ticks},
          {"seconds", a->detour_seconds},
          {"culprits", std::move(list)},
          {"lost", a->lost_events},
          {"overran", a->overran}};
}

std::optional<trace::Attribution> culprits_from(const json& j) {
  if (j.is_null()) return std::nullopt;
  trace::Attribution a;
  a.detour_ticks = j.at("ticks").get<std::uint64_t>();
  a.detour_seconds = j.at("seconds").get<double>();
  a.lost_events = j.at("lost").get<std::uint64_t>();
  a.overran = j.at("overran").get<bool>();
  for (const json& c : j.at("culprits")) {
    const int kind = c.at(0).get<int>();
    if (kind < 0 || kind > static_cast<int>(trace::CulpritKind::untraced))
      throw std::invalid_argument("a culprit of unknown kind " + std::to_string(kind));
    a.culprits.push_back({static_cast<trace::CulpritKind>(kind), c.at(1).get<std::string>(),
                          c.at(2).get<int>(), c.at(3).get<int>(), c.at(4).get<std::string>(),
                          c.at(5).get<std::uint64_t>(), c.at(6).get<std::uint64_t>(),
                          c.at(7).get<double>()});
  }
  return a;
}

json work_json(const KernelWork& w) { return {w.flops, w.bytes, w.cycles}; }

KernelWork work_from(const json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>()};
}

}  // namespace

std::vector<std::byte> encode_samples(const CpuSamples& s) {
  json detours = json::array();
  for (const auto& d : s.detours) detours.push_back(detour_json(d));
  // Each kind's samples and work under its name (probe_kinds.h).
  json samples = json::object(), work = json::object();
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    const std::string name(d.name);
    samples[name] = s.samples[d.kind];
    work[name] = work_json(s.work[d.kind]);
  }
  const json j = {{"cpu", s.cpu},
                  {"matmul", s.matmul_seconds},
                  {"products", s.matmul_product_seconds},
                  {"samples", std::move(samples)},
                  {"detours", std::move(detours)},
                  {"work", std::move(work)},
                  {"culprits", culprits_json(s.culprits)},
                  {"error", s.error}};
  // MessagePack keeps doubles as their 8 bytes, so nothing is rounded.
  const std::vector<std::uint8_t> packed = json::to_msgpack(j);
  const auto* first = reinterpret_cast<const std::byte*>(packed.data());
  return {first, first + packed.size()};
}

CpuSamples decode_samples(std::span<const std::byte> bytes) {
  try {
    const auto* first = reinterpret_cast<const std::uint8_t*>(bytes.data());
    const json j = json::from_msgpack(first, first + bytes.size());
    CpuSamples s;
    s.cpu = j.at("cpu").get<unsigned>();
    s.matmul_seconds = j.at("matmul").get<std::vector<double>>();
    s.matmul_product_seconds = j.at("products").get<std::vector<double>>();
    for (const ProbeDescriptor& d : kProbeDescriptors) {
      const std::string name(d.name);
      s.samples[d.kind] = j.at("samples").at(name).get<std::vector<double>>();
      s.work[d.kind] = work_from(j.at("work").at(name));
    }
    for (const json& d : j.at("detours")) s.detours.push_back(detour_from(d));
    s.culprits = culprits_from(j.at("culprits"));
    s.error = j.at("error").get<std::string>();
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("not a CPU's encoded samples: ") + e.what());
  }
}

}  // namespace corenoise
