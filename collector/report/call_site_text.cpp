#include "collector/report/call_site_text.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace corenoise {

std::string demangled_symbol(std::string_view symbol) {
  // Mangled names start _Z (functions, data) or _GLOBAL_ (static
  // initializers: left alone); anything else is not the demangler's.
  if (!symbol.starts_with("_Z")) return std::string(symbol);
  const std::string name(symbol);
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

std::string readable_site(std::string_view site) {
  // "library+0xoffset (symbol)", as the job's reduction names a return
  // address; a symbol has no spaces, so the last " (" opens it.
  if (!site.ends_with(')')) return std::string(site);
  const std::size_t open = site.rfind(" (");
  if (open == std::string_view::npos) return std::string(site);
  const std::string_view symbol = site.substr(open + 2, site.size() - open - 3);
  return std::string(site.substr(0, open + 2)) + demangled_symbol(symbol) + ")";
}

}  // namespace corenoise
