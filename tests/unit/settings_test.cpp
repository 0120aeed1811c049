#include "probe/settings.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace corenoise {
namespace {

void apply(ProbeSettings& s, const std::string& name, const std::string& value) {
  const OptionSpec* spec = find_probe_option(name);
  ASSERT_NE(spec, nullptr) << name;
  spec->apply(s, value);
}

std::string error_of(const std::string& name, const std::string& value) {
  ProbeSettings s;
  try {
    find_probe_option(name)->apply(s, value);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A confirmation takes confirm-samples samples of what its suspects' tests
// read, and never a probe the round itself did not run.
TEST(Settings, AConfirmationRunsTheNeededProbesTheRoundRan) {
  ProbeSettings s;
  s.probes = {ProbeKind::matmul, ProbeKind::detour, ProbeKind::stream};
  s.confirm_samples = 15;
  const ProbeSettings again = s.for_confirmation({ProbeKind::clock, ProbeKind::detour});
  EXPECT_EQ(again.probes, (std::vector<ProbeKind>{ProbeKind::detour}));
  EXPECT_EQ(again.samples, 15);
  EXPECT_EQ(s.for_confirmation({ProbeKind::stream, ProbeKind::matmul}).probes,
            (std::vector<ProbeKind>{ProbeKind::matmul, ProbeKind::stream}));
}

TEST(Settings, DefaultsKeepTheMatmulInL2) {
  const ProbeSettings s;
  EXPECT_GE(s.matmul_size, 64);
  EXPECT_LE(s.matmul_size, 256);
  EXPECT_EQ(s.probes.size(), 4u);
  EXPECT_EQ(s.modes, std::vector<Mode>{Mode::isolated});
}

TEST(Settings, ParsesEveryKindOfValue) {
  ProbeSettings s;
  apply(s, "probes", "detour,matmul,detour");
  EXPECT_EQ(s.probes, (std::vector<ProbeKind>{ProbeKind::detour, ProbeKind::matmul}));
  apply(s, "mode", "both");
  EXPECT_EQ(s.modes, (std::vector<Mode>{Mode::isolated, Mode::concurrent}));
  apply(s, "samples", "3");
  EXPECT_EQ(s.samples, 3);
  apply(s, "dtype", "f32");
  EXPECT_EQ(s.dtype, Dtype::f32);
  apply(s, "isa", "avx2");
  EXPECT_EQ(s.isa, Isa::avx2);
  apply(s, "isa", "auto");
  EXPECT_FALSE(s.isa.has_value());
  apply(s, "detour-window", "0.5");
  EXPECT_DOUBLE_EQ(s.detour_window_seconds, 0.5);
  apply(s, "noisy-excess-noise", "0.1");
  EXPECT_DOUBLE_EQ(s.thresholds.noisy_excess_noise, 0.1);
}

TEST(Settings, BadValuesSayWhatWasExpected) {
  EXPECT_NE(error_of("probes", "matmul,fft").find("unknown probe 'fft'"), std::string::npos);
  EXPECT_NE(error_of("probes", "").find("unknown probe ''"), std::string::npos);
  EXPECT_NE(error_of("mode", "all").find("expected isolated, concurrent or both"),
            std::string::npos);
  EXPECT_NE(error_of("matmul-size", "0").find("expected a matrix order from 1"), std::string::npos);
  EXPECT_NE(error_of("matmul-size", "-5").find("got '-5'"), std::string::npos);
  EXPECT_NE(error_of("matmul-size", "12x").find("got '12x'"), std::string::npos);
  EXPECT_NE(error_of("samples", "").find("expected a sample count"), std::string::npos);
  EXPECT_NE(error_of("dtype", "f16").find("expected f32 or f64"), std::string::npos);
  EXPECT_NE(error_of("isa", "sse9").find("expected auto, avx512, avx2 or baseline"),
            std::string::npos);
  EXPECT_NE(error_of("detour-window", "nan").find("expected a window in seconds"),
            std::string::npos);
  EXPECT_NE(error_of("noisy-excess-noise", "1.5").find("expected a ratio from 0"),
            std::string::npos);
}

TEST(Settings, OptionNamesAreUniqueAndDocumented) {
  std::set<std::string> names;
  for (const auto& spec : probe_option_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    EXPECT_NE(spec.help.find("default"), std::string::npos)
        << spec.name << " should say its default";
  }
  EXPECT_EQ(find_probe_option("no-such-option"), nullptr);
}

}  // namespace
}  // namespace corenoise
