// Each core's own calibration: its figures from a calibration round,
// persisted in the state directory so that drift ("this core is 8 % slower
// than it was last month") survives restarts. Written atomically (temp file,
// fsync, rename, fsync of the directory): after a crash the file is the old
// one or the new one, never a mix.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "daemon/snapshot.h"
#include "probe/report.h"

namespace corenoise {

// The figures of the calibrated kinds (ProbeDescriptor::calibrated), kept
// under their figure_name.
struct CoreCalibration {
  PerKind<std::optional<double>> figure;
  friend bool operator==(const CoreCalibration&, const CoreCalibration&) = default;
};

struct Calibration {
  // Figures are only comparable under the same fixed work on the same ISA.
  std::string fingerprint;
  double calibrated_unix_seconds = 0;
  std::map<std::pair<unsigned, Mode>, CoreCalibration> cores;
};

// "f64 n=128 reps=32 avx512": what must match for a calibration to apply.
std::string calibration_fingerprint(const ProbeSettings& settings, Isa isa);
// Takes the figures of every measured core of `mode` into `calibration`.
void calibrate_from(Calibration& calibration, const ModeReport& mode);
// Latest figure relative to the calibration (>1 worse), per (cpu, probe, mode).
std::map<ProbeKey, double> baseline_slowdowns(const Calibration& calibration,
                                              const NodeReport& report);

class CalibrationStore {
 public:
  explicit CalibrationStore(std::string state_dir);
  // nullopt if there is no file; throws std::runtime_error naming the file
  // if it exists but cannot be read or parsed. Removes a temp file left by
  // a save that a crash interrupted.
  std::optional<Calibration> load() const;
  // Throws std::runtime_error naming the path and the errno text.
  void save(const Calibration& calibration) const;
  std::string path() const { return dir_ + "/calibration.json"; }

 private:
  std::string dir_;
};

}  // namespace corenoise
