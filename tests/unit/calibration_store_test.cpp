#include "daemon/calibration_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace corenoise {
namespace {

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/corenoised-state-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ModeReport mode_with(unsigned cpu, double matmul, double hz, double bandwidth) {
  ModeReport m;
  m.mode = Mode::isolated;
  m.started_unix_seconds = 1800000000;
  CoreFigures c;
  c.cpu = cpu;
  c.state = CoreState::ok;
  c.figure[ProbeKind::matmul] = matmul;
  c.figure[ProbeKind::clock] = hz;
  c.figure[ProbeKind::stream] = bandwidth;
  m.verdicts.cores.push_back(c);
  CoreFigures skipped;
  skipped.cpu = cpu + 1;
  skipped.state = CoreState::skipped;
  m.verdicts.cores.push_back(skipped);
  return m;
}

TEST(CalibrationStore, SavesAndLoadsExactly) {
  TempDir dir;
  const CalibrationStore store(dir.path());
  EXPECT_FALSE(store.load().has_value());
  Calibration c;
  c.fingerprint = "f64 n=128 reps=32 avx512 stream=0";
  calibrate_from(c, mode_with(3, 0.00125, 3.5e9, 4e10));
  store.save(c);
  EXPECT_FALSE(std::filesystem::exists(store.path() + ".tmp"));
  const auto loaded = store.load();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->fingerprint, c.fingerprint);
  EXPECT_DOUBLE_EQ(loaded->calibrated_unix_seconds, 1800000000);
  ASSERT_EQ(loaded->cores.size(), 1u);  // the skipped core is not calibrated
  const auto& core = loaded->cores.at({3, Mode::isolated});
  EXPECT_DOUBLE_EQ(*core.figure[ProbeKind::matmul], 0.00125);
  EXPECT_DOUBLE_EQ(*core.figure[ProbeKind::clock], 3.5e9);
  EXPECT_DOUBLE_EQ(*core.figure[ProbeKind::stream], 4e10);
}

TEST(CalibrationStore, DriftIsLatestOverCalibration) {
  Calibration c;
  calibrate_from(c, mode_with(0, 0.001, 3e9, 4e10));
  NodeReport report;
  report.modes.push_back(mode_with(0, 0.0011, 2.5e9, 2e10));
  const auto drift = baseline_slowdowns(c, report);
  EXPECT_NEAR(drift.at({0, ratio_probe(ProbeKind::matmul), Mode::isolated}), 1.1, 1e-12);
  EXPECT_NEAR(drift.at({0, ratio_probe(ProbeKind::clock), Mode::isolated}), 1.2, 1e-12);
  EXPECT_NEAR(drift.at({0, ratio_probe(ProbeKind::stream), Mode::isolated}), 2.0, 1e-12);
  EXPECT_FALSE(drift.contains({1, ratio_probe(ProbeKind::matmul), Mode::isolated}));
  EXPECT_FALSE(drift.contains({0, ratio_probe(ProbeKind::matmul), Mode::concurrent}));
}

TEST(CalibrationStore, ErrorsNameTheFile) {
  TempDir dir;
  const CalibrationStore store(dir.path());
  std::ofstream(store.path()) << "{ not json";
  try {
    store.load();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(store.path()), std::string::npos) << e.what();
  }
  const CalibrationStore nowhere("/nonexistent/state");
  try {
    nowhere.save(Calibration{});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/state/calibration.json.tmp"),
              std::string::npos)
        << e.what();
  }
}

TEST(CalibrationStore, FingerprintNamesTheFixedWork) {
  ProbeSettings s;
  EXPECT_EQ(calibration_fingerprint(s, Isa::avx2), "f64 n=128 reps=32 avx2 stream=0");
  s.matmul_size = 96;
  EXPECT_NE(calibration_fingerprint(s, Isa::avx2), "f64 n=128 reps=32 avx2 stream=0");
}

}  // namespace
}  // namespace corenoise
