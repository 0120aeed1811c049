#include "probe/cpu_list.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace corenoise {
namespace {

using Cpus = std::vector<unsigned>;

// The std::invalid_argument message for `text`, "" if it parses.
std::string message(std::string_view text) {
  try {
    parse_cpu_list(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CpuListTest, ParsesValidForms) {
  EXPECT_EQ(parse_cpu_list("0"), (Cpus{0}));
  EXPECT_EQ(parse_cpu_list("0-3"), (Cpus{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (Cpus{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5-5"), (Cpus{5}));
  EXPECT_EQ(parse_cpu_list("007"), (Cpus{7}));
  EXPECT_EQ(parse_cpu_list("65535"), (Cpus{65535}));
  EXPECT_EQ(parse_cpu_list("65534-65535"), (Cpus{65534, 65535}));
}

TEST(CpuListTest, SortsAndDeduplicates) {
  EXPECT_EQ(parse_cpu_list("3,1,2"), (Cpus{1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("1,1,0-2,2-3"), (Cpus{0, 1, 2, 3}));
}

TEST(CpuListTest, TrimsOnlyTheEnds) {
  // As read from /sys/devices/system/cpu/online.
  EXPECT_EQ(parse_cpu_list("0-1\n"), (Cpus{0, 1}));
  EXPECT_EQ(parse_cpu_list("  4,6\t\r\n"), (Cpus{4, 6}));
  // /sys/devices/system/cpu/offline with no offline CPU.
  EXPECT_EQ(parse_cpu_list(""), Cpus{});
  EXPECT_EQ(parse_cpu_list("\n"), Cpus{});
}

TEST(CpuListTest, RejectsEveryMalformedForm) {
  const std::vector<std::string> bad = {
      ",",    "0,",   ",0",     "0,,1", "a",     "1a",      "-1",
      "1-",   "-",    "1-2-3",  "3-1",  "65536", "0-65536", "99999999999999999999",
      "1, 2", "1 2",  "+1",     "0x1",  "1..3",  "1:2",     "0-7:2",
      "1-a",  "\xff", "\uff12",
  };
  for (const std::string& input : bad) {
    try {
      parse_cpu_list(input);
      ADD_FAILURE() << "accepted \"" << input << "\"";
    } catch (const std::invalid_argument& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("\"" + std::string(input) + "\""), std::string::npos)
          << "message does not quote the input: " << msg;
    }
  }
}

TEST(CpuListTest, MessagesEscapeControlCharacters) {
  EXPECT_EQ(message("1,\n2"),
            "invalid CPU list \"1,\\n2\": item \"\\n2\" is not a number: "
            "expected N or N-M (decimal CPU numbers)");
  EXPECT_EQ(message(std::string_view("1\0002", 3)),
            "invalid CPU list \"1\\x002\": item \"1\\x002\" is not a number: expected N or N-M "
            "(decimal CPU numbers)");
  EXPECT_EQ(message("\"1\""),
            "invalid CPU list \"\\\"1\\\"\": item \"\\\"1\\\"\" is not a number: "
            "expected N or N-M (decimal CPU numbers)");
}

TEST(CpuListTest, MessagesSayWhatWasExpected) {
  EXPECT_EQ(message("0,x"),
            "invalid CPU list \"0,x\": item \"x\" is not a number: expected N or N-M "
            "(decimal CPU numbers)");
  EXPECT_EQ(message("0,,1"), "invalid CPU list \"0,,1\": item \"\" is empty: expected N or N-M");
  EXPECT_EQ(message("5-3"),
            "invalid CPU list \"5-3\": item \"5-3\" is a reversed range: expected N-M with N <= M");
  EXPECT_EQ(message("70000"), "invalid CPU list \"70000\": item \"70000\" is above 65535");
  EXPECT_EQ(message("1-"),
            "invalid CPU list \"1-\": item \"1-\" has an empty number: expected N or N-M");
}

TEST(CpuListTest, Formats) {
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({0}), "0");
  EXPECT_EQ(format_cpu_list({0, 1}), "0-1");
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(format_cpu_list({0, 2, 4}), "0,2,4");
  EXPECT_EQ(format_cpu_list({11, 10, 3, 2, 1, 0, 8, 8}), "0-3,8,10-11");
}

TEST(CpuListTest, RoundTripExamples) {
  for (const char* text : {"0", "0-3,8,10-11", "1,3,5-7,65535", "0-1"}) {
    EXPECT_EQ(format_cpu_list(parse_cpu_list(text)), text);
  }
  EXPECT_EQ(format_cpu_list(parse_cpu_list("3,2,1,1,7,8")), "1-3,7-8");
}

// Random lists of items (single CPUs and ranges, overlapping, unsorted):
// parsing gives exactly the set they name, and format/parse are inverse.
TEST(CpuListTest, RandomizedRoundTrip) {
  std::mt19937 rng(20240601);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::uniform_int_distribution<unsigned> max_cpu_dist(0, iteration % 2 ? 300 : 65535);
    unsigned max_cpu = max_cpu_dist(rng);
    std::uniform_int_distribution<unsigned> cpu(0, max_cpu);
    std::uniform_int_distribution<int> items(1, 12);
    std::set<unsigned> expected;
    std::string text;
    for (int i = items(rng); i > 0; --i) {
      unsigned a = cpu(rng);
      if (!text.empty()) text += ',';
      if (rng() % 2) {
        unsigned b = std::min(max_cpu, a + static_cast<unsigned>(rng() % 40));
        text += std::to_string(a) + "-" + std::to_string(b);
        for (unsigned c = a; c <= b; ++c) expected.insert(c);
      } else {
        text += std::to_string(a);
        expected.insert(a);
      }
    }
    Cpus parsed = parse_cpu_list(text);
    ASSERT_EQ(parsed, Cpus(expected.begin(), expected.end())) << text;
    std::string formatted = format_cpu_list(parsed);
    ASSERT_EQ(parse_cpu_list(formatted), parsed) << text << " -> " << formatted;
    ASSERT_EQ(format_cpu_list(parse_cpu_list(formatted)), formatted);
    ASSERT_LE(formatted.size(), text.size()) << "canonical form is never longer";
  }
}

// Random bytes from the list alphabet: the parser either throws
// std::invalid_argument or returns a sorted, unique list whose canonical
// form parses back to itself. It never crashes or throws anything else.
TEST(CpuListTest, RandomizedMalformedInputOnlyThrowsInvalidArgument) {
  std::mt19937 rng(7);
  const std::string alphabet = "0123456789,- x\n";
  for (int iteration = 0; iteration < 5000; ++iteration) {
    std::string text;
    for (int n = static_cast<int>(rng() % 12); n > 0; --n)
      text += alphabet[rng() % alphabet.size()];
    try {
      Cpus cpus = parse_cpu_list(text);
      ASSERT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
      ASSERT_EQ(std::adjacent_find(cpus.begin(), cpus.end()), cpus.end());
      ASSERT_EQ(parse_cpu_list(format_cpu_list(cpus)), cpus) << text;
    } catch (const std::invalid_argument&) {
    }
  }
}

}  // namespace
}  // namespace corenoise
