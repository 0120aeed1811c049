#include "daemon/calibration_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace corenoise {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", path);
    done += static_cast<std::size_t>(n);
  }
}

void put(json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

std::optional<double> get(const json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return j.at(key).get<double>();
}

Mode parse_mode(const std::string& text) {
  if (text == "isolated") return Mode::isolated;
  if (text == "concurrent") return Mode::concurrent;
  throw std::runtime_error("unknown mode '" + text + "'");
}

}  // namespace

std::string calibration_fingerprint(const ProbeSettings& s, Isa isa) {
  return std::string(to_string(s.dtype)) + " n=" + std::to_string(s.matmul_size) +
         " reps=" + std::to_string(s.reps) + " " + std::string(to_string(isa)) +
         " stream=" + std::to_string(s.stream_bytes);
}

void calibrate_from(Calibration& calibration, const ModeReport& mode) {
  for (const CoreFigures& c : mode.verdicts.cores) {
    if (c.state == CoreState::skipped) continue;
    CoreCalibration& core = calibration.cores[{c.cpu, mode.mode}];
    core = {};
    for (const ProbeDescriptor& d : kProbeDescriptors) {
      if (d.calibrated) core.figure[d.kind] = c.figure[d.kind];
    }
  }
  calibration.calibrated_unix_seconds = mode.started_unix_seconds;
}

std::map<ProbeKey, double> baseline_slowdowns(const Calibration& calibration,
                                              const NodeReport& report) {
  std::map<ProbeKey, double> result;
  for (const ModeReport& mode : report.modes) {
    for (const CoreFigures& c : mode.verdicts.cores) {
      const auto it = calibration.cores.find({c.cpu, mode.mode});
      if (c.state == CoreState::skipped || it == calibration.cores.end()) continue;
      const CoreCalibration& base = it->second;
      for (const ProbeDescriptor& d : kProbeDescriptors) {
        if (!d.calibrated || !d.slowdown_metric) continue;
        const Reference own_past{base.figure[d.kind], d.direction};
        if (const auto slowdown = own_past.slowdown(c.figure[d.kind]))
          result[{c.cpu, ratio_probe(d.kind), mode.mode}] = *slowdown;
      }
    }
  }
  return result;
}

CalibrationStore::CalibrationStore(std::string state_dir) : dir_(std::move(state_dir)) {}

std::optional<Calibration> CalibrationStore::load() const {
  // A temp file left by a crash mid-save is a save that never happened: the
  // real file is still the old one. One daemon per state directory, so no
  // save of another process is in flight.
  ::unlink((path() + ".tmp").c_str());
  std::ifstream file(path());
  if (!file) {
    if (errno == ENOENT) return std::nullopt;
    fail("cannot read", path());
  }
  try {
    const json doc = json::parse(file);
    Calibration c;
    c.fingerprint = doc.at("fingerprint").get<std::string>();
    c.calibrated_unix_seconds = doc.at("calibrated_unix_seconds").get<double>();
    for (const json& core : doc.at("cores")) {
      CoreCalibration& figures =
          c.cores[{core.at("cpu").get<unsigned>(), parse_mode(core.at("mode").get<std::string>())}];
      for (const ProbeDescriptor& d : kProbeDescriptors) {
        if (d.calibrated) figures.figure[d.kind] = get(core, std::string(d.figure_name).c_str());
      }
    }
    return c;
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot parse " + path() + ": " + e.what());
  }
}

void CalibrationStore::save(const Calibration& c) const {
  json cores = json::array();
  for (const auto& [key, figures] : c.cores) {
    json core = {{"cpu", key.first}, {"mode", to_string(key.second)}};
    for (const ProbeDescriptor& d : kProbeDescriptors) {
      if (d.calibrated) put(core, std::string(d.figure_name).c_str(), figures.figure[d.kind]);
    }
    cores.push_back(std::move(core));
  }
  const json doc = {{"fingerprint", c.fingerprint},
                    {"calibrated_unix_seconds", c.calibrated_unix_seconds},
                    {"cores", cores}};
  const std::string text = doc.dump(1) + "\n";
  const std::string final_path = path();
  const std::string temp_path = final_path + ".tmp";
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", temp_path);
  try {
    write_all(fd, text, temp_path);
    if (::fsync(fd) != 0) fail("cannot fsync", temp_path);
  } catch (...) {
    ::close(fd);
    ::unlink(temp_path.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp_path.c_str());
    errno = saved;
    fail("cannot rename onto", final_path);
  }
  // The rename itself must reach the disk too.
  const int dir = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace corenoise
