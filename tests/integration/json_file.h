// A JSON document read from a file a command wrote.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace corenoise::testing {

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace corenoise::testing
