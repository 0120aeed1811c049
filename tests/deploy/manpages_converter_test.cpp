// The help-text-to-roff converter behind the man pages (docs/man/): the
// layout it reads, the roff it writes, and that it refuses what it cannot
// read instead of dropping lines.
#include <gtest/gtest.h>

#include <stdexcept>

#include "docs/man/help_text.h"
#include "docs/man/pages.h"
#include "docs/man/roff.h"

namespace corenoise::man {
namespace {

constexpr const char* kHelp = R"(Usage: prog sub [OPTIONS]
       prog other --form

Intro line one
line two.

Exit status: 0 ok,
1 bad.

Heading that goes
on:
  --alpha N           does alpha;
                      more
  --beta-gamma-long-name VALUE
                      beta text
  --help, --version
  cmd                 a command
)";

TEST(ManPages, HelpLayoutIsParsed) {
  const HelpText help = parse_help(kHelp);
  EXPECT_EQ(help.usage, (std::vector<std::string>{"prog sub [OPTIONS]", "prog other --form"}));
  ASSERT_EQ(help.blocks.size(), 4u);
  EXPECT_EQ(help.blocks[0].kind, HelpBlock::Kind::paragraph);
  EXPECT_EQ(help.blocks[0].lines, (std::vector<std::string>{"Intro line one", "line two."}));
  EXPECT_TRUE(is_exit_status(help.blocks[1]));
  EXPECT_FALSE(is_exit_status(help.blocks[0]));
  EXPECT_EQ(help.blocks[2].kind, HelpBlock::Kind::heading);
  EXPECT_EQ(help.blocks[2].lines, (std::vector<std::string>{"Heading that goes", "on:"}));
  const auto& entries = help.blocks[3].entries;
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].term, "--alpha N");
  EXPECT_EQ(entries[0].text, (std::vector<std::string>{"does alpha;", "more"}));
  EXPECT_EQ(entries[1].term, "--beta-gamma-long-name VALUE");
  EXPECT_EQ(entries[1].text, (std::vector<std::string>{"beta text"}));
  EXPECT_EQ(entries[2].term, "--help, --version");
  EXPECT_TRUE(entries[2].text.empty());
  EXPECT_EQ(command_names(help), (std::vector<std::string>{"cmd"}));
}

TEST(ManPages, UnreadableHelpIsAnError) {
  EXPECT_THROW(parse_help("prog [OPTIONS]\n"), std::invalid_argument);
  EXPECT_THROW(parse_help("Usage: prog\n\nText\n          stray indented line\n"),
               std::invalid_argument);
  EXPECT_THROW(parse_help("Usage: prog\n\n\tTabbed\n"), std::invalid_argument);
  EXPECT_THROW(roff_text("broken \xC3"), std::invalid_argument);
  EXPECT_THROW(exit_status_section(parse_help("Usage: prog\n\nNo status.\n")),
               std::invalid_argument);
}

TEST(ManPages, RoffIsEscaped) {
  // A leading '.' would be read as a request and the line lost.
  EXPECT_EQ(roff_line(".hidden text"), "\\&.hidden text\n");
  EXPECT_EQ(roff_line("'-' writes to stdout"), "\\(aq\\-\\(aq writes to stdout\n");
  EXPECT_EQ(roff_text("a\\b"), "a\\eb");
  EXPECT_EQ(roff_text("1 \xC2\xB5s \xC3\x97 2"), "1 \\[u00B5]s \\[u00D7] 2");
  EXPECT_EQ(roff_text("fixed-work on 0-3"), "fixed-work on 0\\-3");
  EXPECT_EQ(roff_text("use --cpus-list, not --Foo"),
            "use \\fB\\%\\-\\-cpus\\-list\\fR, not \\-\\-Foo");
  EXPECT_EQ(roff_text("run with -bind-to core, node-local"),
            "run with \\fB\\%\\-bind\\-to\\fR core, node-local");
  EXPECT_EQ(roff_text("see `corenoise resume`."), "see \\fBcorenoise resume\\fR.");
  EXPECT_EQ(roff_text("see `x --y`", false), "see \\(gax \\-\\-y\\(ga");
  EXPECT_EQ(roff_term("--listen HOST:PORT"), "\\fB\\%\\-\\-listen\\fR \\fIHOST:PORT\\fR");
  EXPECT_EQ(roff_term("[--OPTION VALUE]..."), "[\\fB\\%\\-\\-OPTION\\fR \\fIVALUE\\fR]...");
  EXPECT_EQ(roff_term("mpiexec.mpich -ppn 1 state-dir"),
            "\\fB\\%mpiexec.mpich\\fR \\fB\\%\\-ppn\\fR 1 \\fB\\%state\\-dir\\fR");
}

TEST(ManPages, SectionsFollowTheHelp) {
  const HelpText help = parse_help(kHelp);
  const std::string sections = help_sections(help, "OPTIONS");
  const auto synopsis = sections.find(".SH SYNOPSIS\n");
  const auto description = sections.find(".SH DESCRIPTION\n.PP\nIntro line one\n");
  // A heading of two lines is no .SS: it would be set like a tag.
  const auto options = sections.find(".SH OPTIONS\n.PP\n\\fBHeading that goes on:\\fR\n.TP\n");
  EXPECT_LT(synopsis, description) << sections;
  EXPECT_LT(description, options) << sections;
  EXPECT_NE(options, std::string::npos) << sections;
  EXPECT_EQ(sections.find("Exit status"), std::string::npos) << sections;
  EXPECT_EQ(exit_status_section(help), ".SH \"EXIT STATUS\"\n.PP\n0 ok,\n1 bad.\n");
  const HelpText short_heading = parse_help("Usage: prog\n\nOptions:\n  --a  b\n");
  EXPECT_NE(help_sections(short_heading, "").find(".SS \"Options\"\n.TP\n"), std::string::npos);
  // Inside a command's subsection, headings are bold paragraphs.
  EXPECT_NE(command_sections("prog", {{"sub", short_heading}}).find(".PP\n\\fBOptions:\\fR\n"),
            std::string::npos);
}

TEST(ManPages, TemplatePlaceholdersAreChecked) {
  EXPECT_EQ(fill_template("a @X@ b\n@BLOCK@\nend\n", {{"X", "1"}, {"BLOCK", "l1\nl2\n"}}),
            "a 1 b\nl1\nl2\nend\n");
  EXPECT_THROW(fill_template("@UNKNOWN@\n", {{"X", "1"}}), std::invalid_argument);
}

}  // namespace
}  // namespace corenoise::man
