// The control-protocol parsers on arbitrary bytes, as a line from a client
// (parse_request) and as a line from the daemon (parse_reply). Each either
// refuses the line with ProtocolError, the only exception it documents, or
// returns a value that survives a round trip: a request re-encoded with
// to_json, written as a line and parsed again is the same request.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/control/control_protocol.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using corenoise::ProtocolError;

void check_request(std::string_view line) {
  corenoise::ControlRequest request;
  try {
    request = corenoise::parse_request(line);
  } catch (const ProtocolError&) {
    return;
  }
  // Whatever the parser accepts, the encoder can express (to_json throws
  // only for values the wire cannot carry).
  const nlohmann::json wire = corenoise::to_json(request);
  FUZZ_CHECK(wire.at("command") == corenoise::command_name(request));
  const std::string encoded = corenoise::encode_line(wire);
  FUZZ_CHECK(!encoded.empty() && encoded.back() == '\n');
  FUZZ_CHECK(encoded.find('\n') == encoded.size() - 1);  // one line, as the protocol needs
  const corenoise::ControlRequest again =
      corenoise::parse_request(std::string_view(encoded).substr(0, encoded.size() - 1));
  FUZZ_CHECK(again.index() == request.index());
  FUZZ_CHECK(corenoise::to_json(again) == wire);
}

void check_reply(std::string_view line) {
  nlohmann::json reply;
  try {
    reply = corenoise::parse_reply(line);
  } catch (const ProtocolError&) {
    return;
  }
  FUZZ_CHECK(reply.is_object() && reply.at("ok").is_boolean());
  FUZZ_CHECK(reply["ok"].get<bool>() || reply.at("error").is_string());
  // The daemon's encoder must take any reply a client can read (it repairs
  // invalid UTF-8 instead of throwing).
  const std::string encoded = corenoise::encode_line(reply);
  FUZZ_CHECK(encoded.find('\n') == encoded.size() - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  check_request(line);
  check_reply(line);
  return 0;
}
