// gen_manpages: writes corenoise(1), corenoised(8) and corenoised.conf(5)
// from what the programs themselves say, so the pages cannot drift from
// --help: it runs `corenoise --help`, `corenoise COMMAND --help` for every
// command that help lists, and `corenoised --help`, and reads the daemon's
// option table for the config-file page. Fixed prose (NAME, FILES, SEE
// ALSO, ...) comes from the templates docs/man/*.in.
//
//   gen_manpages --corenoise BIN --corenoised BIN --templates DIR --out DIR
//                --version VERSION --date YYYY-MM-DD
//
// Exit status 0, or 1 with a message naming what it could not read or run.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "docs/man/help_text.h"
#include "docs/man/pages.h"

namespace {

using corenoise::man::HelpText;

// The standard output of `argv`, which must exit 0. No shell: paths are
// passed as they are.
std::string run(const std::vector<std::string>& argv) {
  std::string what;
  for (const auto& arg : argv) what += (what.empty() ? "" : " ") + arg;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::cerr << "gen_manpages: cannot run " << argv[0] << ": " << std::strerror(errno) << '\n';
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("reading from '" + what + "': " + std::strerror(errno));
    out.append(buffer, static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("'" + what + "' failed (status " + std::to_string(status) + ")");
  }
  return out;
}

HelpText help_of(const std::vector<std::string>& argv) {
  std::string what;
  for (const auto& arg : argv) what += " " + arg;
  try {
    return corenoise::man::parse_help(run(argv));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("the output of" + what + ": " + e.what());
  }
}

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.close();
  if (!file) throw std::runtime_error(path + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;  // "--name" -> value
  for (int i = 1; i + 1 < argc; i += 2) args[argv[i]] = argv[i + 1];
  bool complete = argc % 2 == 1;
  for (const char* name :
       {"--corenoise", "--corenoised", "--templates", "--out", "--version", "--date"}) {
    complete = complete && args.contains(name);
  }
  if (!complete || args.size() != 6) {
    std::cerr << "usage: gen_manpages --corenoise BIN --corenoised BIN --templates DIR "
                 "--out DIR --version VERSION --date DATE\n";
    return 1;
  }
  try {
    const std::string corenoise = args["--corenoise"];
    const HelpText main_help = help_of({corenoise, "--help"});
    std::vector<std::pair<std::string, HelpText>> commands;
    for (const auto& command : corenoise::man::command_names(main_help)) {
      commands.emplace_back(command, help_of({corenoise, command, "--help"}));
    }
    if (commands.empty()) throw std::runtime_error(corenoise + " --help lists no commands");
    const HelpText daemon_help = help_of({args["--corenoised"], "--help"});
    std::vector<corenoise::man::ConfigOption> config_options;
    for (const auto& spec : corenoise::daemon_option_specs()) {
      config_options.push_back({spec.name, spec.value_name, spec.help});
    }

    const std::map<std::string, std::string> common = {{"VERSION", args["--version"]},
                                                       {"DATE", args["--date"]}};
    struct Page {
      std::string file;
      std::map<std::string, std::string> parts;
    };
    const Page pages[] = {
        {"corenoise.1",
         {{"HELP", corenoise::man::help_sections(main_help, "")},
          {"COMMANDS", corenoise::man::command_sections("corenoise", commands)},
          {"EXIT_STATUS", corenoise::man::exit_status_section(main_help)}}},
        {"corenoised.8",
         {{"HELP", corenoise::man::help_sections(daemon_help, "OPTIONS")},
          {"EXIT_STATUS", corenoise::man::exit_status_section(daemon_help)}}},
        {"corenoised.conf.5",
         {{"CONFIG_OPTIONS", corenoise::man::config_option_list(config_options)}}},
    };
    for (const auto& page : pages) {
      auto values = page.parts;
      values.insert(common.begin(), common.end());
      const std::string template_path = args["--templates"] + "/" + page.file + ".in";
      try {
        write_file(args["--out"] + "/" + page.file,
                   corenoise::man::fill_template(read_file(template_path), values));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(template_path + ": " + e.what());
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "gen_manpages: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
