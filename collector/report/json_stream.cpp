#include "collector/report/json_stream.h"

#include <memory>
#include <string>

namespace corenoise {
namespace {

using Protocol = nlohmann::detail::output_adapter_protocol<char>;

class StreamOut : public Protocol {
 public:
  explicit StreamOut(std::ostream& out) : out_(out) {}
  void write_character(char c) override { out_.put(c); }
  void write_characters(const char* s, std::size_t n) override {
    out_.write(s, static_cast<std::streamsize>(n));
  }

 private:
  std::ostream& out_;
};

// '<' as \u003c; U+2028 and U+2029 (E2 80 A8, E2 80 A9) as \u2028 and
// \u2029, their bytes seen across the serializer's chunks.
class ScriptSafeOut : public Protocol {
 public:
  explicit ScriptSafeOut(std::ostream& out) : out_(out) {}
  ~ScriptSafeOut() override { flush_held(); }
  void write_character(char c) override { put(c); }
  void write_characters(const char* s, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) put(s[i]);
  }

 private:
  void put(char c) {
    if (held_ == 2 && (c == '\xA8' || c == '\xA9')) {
      out_ << (c == '\xA8' ? "\\u2028" : "\\u2029");
      held_ = 0;
      return;
    }
    if (held_ == 1 && c == '\x80') {
      held_ = 2;
      return;
    }
    flush_held();
    if (c == '\xE2') {
      held_ = 1;
    } else if (c == '<') {
      out_ << "\\u003c";
    } else {
      out_.put(c);
    }
  }
  void flush_held() {
    if (held_ >= 1) out_.put('\xE2');
    if (held_ == 2) out_.put('\x80');
    held_ = 0;
  }
  std::ostream& out_;
  int held_ = 0;  // of E2 80: how many bytes are held back
};

void serialize(std::shared_ptr<Protocol> out, const nlohmann::json& document, int indent) {
  nlohmann::detail::serializer<nlohmann::json> serializer(std::move(out), ' ',
                                                          nlohmann::json::error_handler_t::replace);
  serializer.dump(document, indent >= 0, false, static_cast<unsigned>(indent >= 0 ? indent : 0));
}

}  // namespace

void write_json(std::ostream& out, const nlohmann::json& document, int indent) {
  serialize(std::make_shared<StreamOut>(out), document, indent);
}

void write_script_safe_json(std::ostream& out, const nlohmann::json& document) {
  // The adapter flushes what it holds back when the serializer lets it go.
  serialize(std::make_shared<ScriptSafeOut>(out), document, -1);
}

}  // namespace corenoise
