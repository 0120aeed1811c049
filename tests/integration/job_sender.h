// Sending `job-start` and `job` lines to a real corenoised from another
// process, as a rank does (tests/tools/job_report_sender), under whatever
// user, affinity or trick `prefix` and the sender's options set up.
// Needs JOB_REPORT_SENDER_BIN (tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "process.h"
#include "reachable_binary.h"

namespace corenoise::testing {

struct JobSender {
  std::string prefix;          // commands it runs under: "setpriv ...", "taskset -c 0"
  std::string sender_options;  // job_report_sender's own ("--drop-to 65534:65534")
};

// A rank's job-start line.
inline std::string job_start_line(const std::string& id) {
  return nlohmann::json({{"command", "job-start"}, {"job_id", id}}).dump();
}

// A rank's report: `cpus` as the protocol has them, ended when the sender
// sends it ("@now", job_report_sender's) unless `ended` is given.
inline std::string job_report_line(const std::string& id, double elapsed,
                                   const nlohmann::json& cpus,
                                   std::optional<double> ended = std::nullopt) {
  std::string line = nlohmann::json({{"command", "job"},
                                     {"job_id", id},
                                     {"ended_unix_seconds", ended.value_or(0)},
                                     {"elapsed_seconds", elapsed},
                                     {"ranks", 2},
                                     {"cpus", cpus}})
                         .dump();
  if (!ended) {
    const std::string field = "\"ended_unix_seconds\":";
    const std::size_t value = line.find(field) + field.size();
    line.replace(value, line.find_first_of(",}", value) - value, "@now");
  }
  return line;
}

// The replies to `lines`, sent one after another on one connection by one
// sender process (so one SO_PEERCRED pid). A sender that fails, or a reply
// that is not JSON, fails the test.
inline std::vector<nlohmann::json> send_lines(const std::string& socket,
                                              const std::vector<std::string>& lines,
                                              const JobSender& sender = {}) {
  // Run as other users: from where they can reach it.
  std::string command = sender.prefix + " " +
                        shell_word(reachable_by_everyone(JOB_REPORT_SENDER_BIN)) + " " +
                        sender.sender_options + " " + shell_word(socket);
  for (const std::string& line : lines) command += " " + shell_word(line);
  const CommandResult result = run_command(command);
  EXPECT_EQ(result.exit_code, 0) << command << "\n" << result.err;
  std::vector<nlohmann::json> replies;
  std::size_t start = 0;
  for (std::size_t end; (end = result.out.find('\n', start)) != std::string::npos;
       start = end + 1) {
    replies.push_back(nlohmann::json::parse(result.out.substr(start, end - start), nullptr, false));
    EXPECT_FALSE(replies.back().is_discarded()) << result.out;
  }
  EXPECT_EQ(replies.size(), lines.size()) << command << "\n" << result.out << result.err;
  replies.resize(lines.size());
  return replies;
}

}  // namespace corenoise::testing
