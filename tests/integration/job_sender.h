// Sending `job` reports to a real corenoised from another process, as a
// rank would (tests/tools/job_report_sender with the in-job library
// preloaded: a process with it mapped) or as a plain process (without).
// Needs JOB_REPORT_SENDER_BIN and JOB_LIBRARY (tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process.h"

namespace corenoise::testing {

// `text` as one word for /bin/sh.
inline std::string shell_word(const std::string& text) {
  std::string word = "'";
  for (char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

struct JobSender {
  bool rank = true;            // with the in-job library preloaded
  std::string prefix;          // commands it runs under: "setpriv ...", "taskset -c 0"
  std::string sender_options;  // job_report_sender's own ("--drop-to 65534:65534")
};

// The replies to `lines`, sent one after another on one connection by one
// sender process (so one SO_PEERCRED pid). A sender that fails, or a reply
// that is not JSON, fails the test.
inline std::vector<nlohmann::json> send_lines(const std::string& socket,
                                              const std::vector<std::string>& lines,
                                              const JobSender& sender = {}) {
  std::string command = sender.prefix + " /usr/bin/env";
  if (sender.rank) command += " LD_PRELOAD=" + shell_word(JOB_LIBRARY);
  command += " " + shell_word(JOB_REPORT_SENDER_BIN) + " " + sender.sender_options + " " +
             shell_word(socket);
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
