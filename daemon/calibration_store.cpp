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
    calibration.cores[{c.cpu, mode.mode}] = {c.matmul_seconds, c.clock_hertz,
                                             c.stream_bytes_per_second};
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
      if (c.matmul_seconds && base.matmul_seconds && *base.matmul_seconds > 0) {
        result[{c.cpu, RatioProbe::matmul, mode.mode}] = *c.matmul_seconds / *base.matmul_seconds;
      }
      if (c.clock_hertz && base.clock_hertz && *c.clock_hertz > 0) {
        result[{c.cpu, RatioProbe::clock, mode.mode}] = *base.clock_hertz / *c.clock_hertz;
      }
      if (c.stream_bytes_per_second && base.stream_bytes_per_second &&
          *c.stream_bytes_per_second > 0) {
        result[{c.cpu, RatioProbe::stream, mode.mode}] =
            *base.stream_bytes_per_second / *c.stream_bytes_per_second;
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
      c.cores[{core.at("cpu").get<unsigned>(), parse_mode(core.at("mode").get<std::string>())}] = {
          get(core, "matmul_seconds"), get(core, "clock_hertz"),
          get(core, "stream_bytes_per_second")};
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
    put(core, "matmul_seconds", figures.matmul_seconds);
    put(core, "clock_hertz", figures.clock_hertz);
    put(core, "stream_bytes_per_second", figures.stream_bytes_per_second);
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
