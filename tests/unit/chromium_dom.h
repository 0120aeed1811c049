// The report page as a real browser draws it: headless Chromium loads a
// page from a fresh folder, runs its script and dumps the DOM it built
// (--dump-dom), and the helpers below read that DOM back: sections, table
// rows, attributes, and the #cell= probe list the page's script writes
// (collector/report/web/report.js). Shared by the report page's tests.
//
// Chromium is /usr/bin/chromium (deploy/dev-setup.sh --tests installs it),
// or the binary $CORENOISE_CHROMIUM names; a test that needs it fails
// without it rather than skipping, since these are the page's main check.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/shell_word.h"

namespace corenoise::testing {

inline std::string chromium_binary() {
  const char* chromium = std::getenv("CORENOISE_CHROMIUM");
  return chromium != nullptr && *chromium != '\0' ? chromium : "/usr/bin/chromium";
}

// A command's standard output. Not named run_command: process.h's has
// that name and these arguments, and a test linking both (an MPI job's
// page) would get one of them for both calls.
inline std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

// The DOM Chromium built from `page`, loaded as file:///…/report.html
// followed by `fragment` (e.g. "#cell=1,2"). Empty when Chromium is missing
// or failed (the ADD_FAILURE says which).
inline std::string render_in_chromium(const std::string& page, const std::string& fragment = "") {
  const std::string chromium = chromium_binary();
  if (::access(chromium.c_str(), X_OK) != 0) {
    ADD_FAILURE() << chromium << " is missing: install chromium (deploy/dev-setup.sh --tests does)";
    return {};
  }
  char dir_template[] = "/tmp/corenoise-html-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return {};
  }
  const std::filesystem::path dir = dir_template;
  const std::filesystem::path file = dir / "report.html";
  std::ofstream(file, std::ios::binary) << page;
  // A fresh profile each time, and nothing that reaches for the network:
  // the page must draw from its own bytes.
  const std::string dom = command_output(
      "timeout 120 " + shell_word(chromium) +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --user-data-dir=" +
      (dir / "profile").string() + " --virtual-time-budget=10000 --dump-dom 'file://" +
      file.string() + fragment + "' 2>/dev/null");
  std::filesystem::remove_all(dir);
  if (dom.empty()) ADD_FAILURE() << chromium << " dumped no DOM";
  return dom;
}

// `html` from the start of the first `open` (e.g. "<section id=\"drain\"")
// to the end of its element `tag`, or "" (no nesting of the same tag).
inline std::string element(const std::string& html, const std::string& open,
                           const std::string& tag) {
  const auto begin = html.find(open);
  if (begin == std::string::npos) return {};
  const std::string close = "</" + tag + ">";
  const auto end = html.find(close, begin);
  return html.substr(begin,
                     end == std::string::npos ? std::string::npos : end + close.size() - begin);
}

inline std::string section(const std::string& dom, const std::string& id) {
  return element(dom, "<section id=\"" + id + "\"", "section");
}

// The text of a piece of serialized DOM: tags dropped (a </div> or <br>
// becomes a newline, so a cell's lines stay apart), the entities Chromium's
// serializer writes decoded.
inline std::string text_of(const std::string& html) {
  std::string out;
  for (std::size_t i = 0; i < html.size();) {
    if (html[i] == '<') {
      const auto end = html.find('>', i);
      const std::string tag = html.substr(i, end - i);
      if ((tag == "</div" || tag.starts_with("<br")) && !out.empty() && out.back() != '\n')
        out += '\n';
      i = end == std::string::npos ? html.size() : end + 1;
    } else if (html[i] == '&') {
      static const std::pair<const char*, const char*> kEntities[] = {
          {"&amp;", "&"},   {"&lt;", "<"},  {"&gt;", ">"},
          {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", "\u00a0"}};
      bool decoded = false;
      for (const auto& [entity, character] : kEntities) {
        if (html.compare(i, std::char_traits<char>::length(entity), entity) == 0) {
          out += character;
          i += std::char_traits<char>::length(entity);
          decoded = true;
          break;
        }
      }
      if (!decoded) out += html[i++];
    } else {
      out += html[i++];
    }
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The body rows of the first table in `html`, each as its cells' text.
inline std::vector<std::vector<std::string>> table_rows(const std::string& html) {
  std::vector<std::vector<std::string>> rows;
  const std::string body = element(html, "<tbody>", "tbody");
  for (auto at = body.find("<tr"); at != std::string::npos; at = body.find("<tr", at + 3)) {
    const auto end = body.find("</tr>", at);
    const std::string row = body.substr(at, end - at);
    std::vector<std::string> cells;
    for (auto c = row.find("<td"); c != std::string::npos; c = row.find("<td", c + 3)) {
      const auto open_end = row.find('>', c);
      const auto close = row.find("</td>", open_end);
      cells.push_back(text_of(row.substr(open_end + 1, close - open_end - 1)));
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

// The value of attribute `name` in the first start tag of `html` that
// begins with `open` (e.g. "<body", "<canvas class=\"map\""), decoded; ""
// if absent.
inline std::string attribute(const std::string& html, const std::string& open,
                             const std::string& name) {
  const auto begin = html.find(open);
  if (begin == std::string::npos) return {};
  const std::string tag = html.substr(begin, html.find('>', begin) - begin);
  const auto at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return {};
  const auto value = at + name.size() + 3;
  return text_of(tag.substr(value, tag.find('"', value) - value));
}

// What the page's #cell= probe saw, by "A,B": the hover text and the colour
// drawn at the cell.
struct CellSeen {
  std::string text, colour;
};
inline std::map<std::string, CellSeen> probed_cells(const std::string& dom) {
  std::map<std::string, CellSeen> cells;
  // The list follows the page's scripts (whose text the dump holds too).
  const auto scripts_end = dom.rfind("</script>");
  const std::string list = element(dom.substr(scripts_end == std::string::npos ? 0 : scripts_end),
                                   "<ul id=\"cell-probe\"", "ul");
  for (auto at = list.find("<li "); at != std::string::npos; at = list.find("<li ", at + 4)) {
    const std::string item = list.substr(at, list.find("</li>", at) - at);
    const std::string text = text_of(item.substr(item.find('>') + 1));
    cells[attribute(item, "<li", "data-cell")] = {text, attribute(item, "<li", "data-colour")};
  }
  return cells;
}

// The body's data-rendered: "ok" once the script drew every section.
inline std::string rendered(const std::string& dom) {
  return attribute(dom, "<body", "data-rendered");
}

}  // namespace corenoise::testing
