// Running real commands from tests: capture exit status, stdout and stderr,
// and start background helpers that are killed when the test ends.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../shell_word.h"

namespace corenoise::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `command` with /bin/sh; stdout and stderr are captured separately.
// A path spliced into `command` goes in as a shell_word (../shell_word.h).
inline CommandResult run_command(const std::string& command) {
  char err_path[] = "/tmp/corenoise-test-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  close(fd);
  CommandResult result;
  FILE* pipe = popen((command + " 2>" + err_path).c_str(), "r");
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  result.err = text.str();
  unlink(err_path);
  return result;
}

// A background process; its first stdout line is read by wait_line().
class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~BackgroundProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ != nullptr) fclose(out_);
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // The next line of the process's stdout ("" at end of file).
  std::string wait_line() {
    char line[512];
    if (out_ == nullptr || fgets(line, sizeof line, out_) == nullptr) return "";
    return line;
  }
  void signal(int number) const { kill(pid_, number); }
  pid_t pid() const { return pid_; }
  // The exit status (128 + signal if killed), or -1 if it still runs after
  // `seconds`.
  int wait_exit(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    do {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (std::chrono::steady_clock::now() < end);
    return -1;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

}  // namespace corenoise::testing
