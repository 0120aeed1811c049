// collector/job/model/job_options.h: the in-job library's settings from its
// environment, with a malformed number kept at its default and named.
#include "collector/job/model/job_options.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <string>

namespace corenoise {
namespace {

class Environment {
 public:
  Environment(std::initializer_list<std::pair<const std::string, std::string>> variables)
      : variables_(variables) {}
  JobEnvironment lookup() const {
    return [this](const char* name) -> const char* {
      const auto it = variables_.find(name);
      return it == variables_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> variables_;
};

TEST(JobOptionsTest, Defaults) {
  const Environment empty({});
  std::string warnings;
  const JobOptions o = job_options_from(empty.lookup(), &warnings);
  EXPECT_EQ(warnings, "");
  EXPECT_EQ(o.json_path, "");
  EXPECT_EQ(o.html_path, "");
  EXPECT_EQ(o.socket_path, "");
  EXPECT_EQ(o.spill_dir, "");
  EXPECT_EQ(o.program, "");
  EXPECT_EQ(o.family, "");
  EXPECT_DOUBLE_EQ(o.budget, 0.0005);
  EXPECT_DOUBLE_EQ(o.min_interval_seconds, 0.01);
  EXPECT_DOUBLE_EQ(o.max_interval_seconds, 2.0);
  EXPECT_DOUBLE_EQ(o.finalize_timeout_seconds, 30);
  EXPECT_TRUE(o.banner);
  EXPECT_EQ(o.proc_root, "/proc");
  // No warnings wanted: none written anywhere.
  EXPECT_DOUBLE_EQ(job_options_from(empty.lookup(), nullptr).budget, 0.0005);
}

TEST(JobOptionsTest, EachVariable) {
  const Environment env({
      {"CORENOISE_JOB_JSON", "/tmp/out/job.json"},
      {"CORENOISE_JOB_HTML", "/tmp/out/job.html"},
      {"CORENOISE_JOB_SOCKET", "/run/corenoise/ctl.sock"},
      {"CORENOISE_JOB_SPILL", "/scratch/spill"},
      {"CORENOISE_JOB_PROGRAM", "./solver --steps 50"},
      {"CORENOISE_JOB_FAMILY", "openmpi"},
      {"CORENOISE_JOB_BUDGET", "0.002"},
      {"CORENOISE_JOB_FINALIZE_TIMEOUT", "2.5"},
      {"CORENOISE_JOB_QUIET", "1"},
      {"CORENOISE_JOB_PROC_ROOT", "/tmp/fake-proc"},
  });
  std::string warnings;
  const JobOptions o = job_options_from(env.lookup(), &warnings);
  EXPECT_EQ(warnings, "");
  EXPECT_EQ(o.json_path, "/tmp/out/job.json");
  EXPECT_EQ(o.html_path, "/tmp/out/job.html");
  EXPECT_EQ(o.socket_path, "/run/corenoise/ctl.sock");
  EXPECT_EQ(o.spill_dir, "/scratch/spill");
  EXPECT_EQ(o.program, "./solver --steps 50");
  EXPECT_EQ(o.family, "openmpi");
  EXPECT_DOUBLE_EQ(o.budget, 0.002);
  EXPECT_DOUBLE_EQ(o.finalize_timeout_seconds, 2.5);
  EXPECT_FALSE(o.banner);
  EXPECT_EQ(o.proc_root, "/tmp/fake-proc");
}

TEST(JobOptionsTest, QuietIsAnythingButEmptyOrZero) {
  for (const auto& [value, banner] :
       std::map<std::string, bool>{{"", true}, {"0", true}, {"1", false}, {"yes", false}}) {
    const Environment env({{"CORENOISE_JOB_QUIET", value}});
    EXPECT_EQ(job_options_from(env.lookup(), nullptr).banner, banner) << "'" << value << "'";
  }
  // An empty proc root keeps /proc.
  const Environment root({{"CORENOISE_JOB_PROC_ROOT", ""}});
  EXPECT_EQ(job_options_from(root.lookup(), nullptr).proc_root, "/proc");
}

TEST(JobOptionsTest, MalformedNumbersKeepTheDefaultAndAreNamed) {
  for (const char* budget :
       {"abc", "0.001x", "", " 0.001", "nan", "inf", "0.5", "0", "-0.001", "1e-9"}) {
    const Environment env({{"CORENOISE_JOB_BUDGET", budget}});
    std::string warnings;
    const JobOptions o = job_options_from(env.lookup(), &warnings);
    EXPECT_DOUBLE_EQ(o.budget, 0.0005) << "'" << budget << "'";
    if (*budget == '\0') {
      EXPECT_EQ(warnings, "") << "an empty variable is an unset one";
    } else {
      EXPECT_NE(warnings.find("CORENOISE_JOB_BUDGET='" + std::string(budget) + "'"),
                std::string::npos)
          << warnings;
    }
  }
  const Environment both({{"CORENOISE_JOB_BUDGET", "lots"},
                          {"CORENOISE_JOB_FINALIZE_TIMEOUT", "-1"},
                          {"CORENOISE_JOB_JSON", "/tmp/j.json"}});
  std::string warnings;
  const JobOptions o = job_options_from(both.lookup(), &warnings);
  EXPECT_DOUBLE_EQ(o.budget, 0.0005);
  EXPECT_DOUBLE_EQ(o.finalize_timeout_seconds, 30);
  EXPECT_EQ(o.json_path, "/tmp/j.json");  // the rest still read
  EXPECT_NE(warnings.find("CORENOISE_JOB_BUDGET='lots'"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("CORENOISE_JOB_FINALIZE_TIMEOUT='-1'"), std::string::npos) << warnings;
  // Without a warnings string the defaults are kept all the same.
  EXPECT_DOUBLE_EQ(job_options_from(both.lookup(), nullptr).finalize_timeout_seconds, 30);
}

TEST(JobOptionsTest, BoundsAreInclusive) {
  const Environment low(
      {{"CORENOISE_JOB_BUDGET", "1e-6"}, {"CORENOISE_JOB_FINALIZE_TIMEOUT", "0.1"}});
  std::string warnings;
  JobOptions o = job_options_from(low.lookup(), &warnings);
  EXPECT_EQ(warnings, "");
  EXPECT_DOUBLE_EQ(o.budget, 1e-6);
  EXPECT_DOUBLE_EQ(o.finalize_timeout_seconds, 0.1);
  const Environment high(
      {{"CORENOISE_JOB_BUDGET", "0.1"}, {"CORENOISE_JOB_FINALIZE_TIMEOUT", "3600"}});
  o = job_options_from(high.lookup(), &warnings);
  EXPECT_EQ(warnings, "");
  EXPECT_DOUBLE_EQ(o.budget, 0.1);
  EXPECT_DOUBLE_EQ(o.finalize_timeout_seconds, 3600);
  const Environment over({{"CORENOISE_JOB_FINALIZE_TIMEOUT", "3600.5"}});
  EXPECT_DOUBLE_EQ(job_options_from(over.lookup(), &warnings).finalize_timeout_seconds, 30);
  EXPECT_NE(warnings.find("CORENOISE_JOB_FINALIZE_TIMEOUT"), std::string::npos);
}

// The records in full (job_selection.h): a whole count of ranks, 64 by
// default; anything else kept at the default and named.
TEST(JobOptionsTest, FullIsAWholeCountOfRanks) {
  std::string warnings;
  EXPECT_EQ(job_options_from(Environment({}).lookup(), &warnings).full_ranks, 64u);
  const Environment many({{"CORENOISE_JOB_FULL", "100000"}});
  EXPECT_EQ(job_options_from(many.lookup(), &warnings).full_ranks, 100000u);
  const Environment none({{"CORENOISE_JOB_FULL", "0"}});
  EXPECT_EQ(job_options_from(none.lookup(), &warnings).full_ranks, 0u);
  EXPECT_EQ(warnings, "");
  for (const char* bad : {"2.5", "-1", "lots", "64 "}) {
    const Environment odd({{"CORENOISE_JOB_FULL", bad}});
    warnings.clear();
    EXPECT_EQ(job_options_from(odd.lookup(), &warnings).full_ranks, 64u) << bad;
    EXPECT_NE(warnings.find("CORENOISE_JOB_FULL"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace corenoise
