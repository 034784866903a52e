// `neuronc compile --report`: the page is self-contained (no network references), has every
// section and plot, and renders in headless Chromium with every plot drawn and no console
// error. Chromium comes from tests/tools/install_chromium.sh; without it the render test skips.
#include "tools/report_html.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/tools/fixture_artifacts.h"
#include "tests/tools/headless_chromium.h"

namespace neuronc::tools {
namespace {

using testing::compiled_fixture;
using testing::fixture_model;
using testing::have_chromium;
using testing::kFixtures;
using testing::render_in_chromium;
using testing::RenderedPage;
using testing::scratch_dir;

std::string render(const std::string& name) {
  return render_compile_report(compiled_fixture(name),
                               {fixture_model(name), name + ".nca", "trn1", "none", 2});
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

class ReportFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ReportFixture, HasEverySectionAndPlotAndNoNetwork) {
  const std::string page = render(GetParam());
  for (const char* section :
       {"Op coverage", "Partitions", "Memory plan", "Per-layer simulated time", "Engine timeline",
        "Roofline", "Assumptions in effect"}) {
    EXPECT_NE(page.find(section), std::string::npos) << section;
  }
  for (const char* id : {"id=\"coverage\"", "id=\"memory\"", "id=\"layers\"", "id=\"timeline\"",
                         "id=\"roofline\""}) {
    EXPECT_EQ(count(page, id), 1u) << id;
  }
  EXPECT_EQ(count(page, "class=\"plot\""), 5u);
  // Self-contained: no external resource of any kind.
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  // The timeline has marks and the roofline has at least the whole-model point.
  const size_t tl = page.find("id=\"timeline\"");
  EXPECT_NE(page.find("<rect", tl), std::string::npos);
  const size_t rf = page.find("id=\"roofline\"");
  EXPECT_NE(page.find("<circle", rf), std::string::npos);
  EXPECT_NE(page.find("semaphore_latency_cycles"), std::string::npos);
}

TEST(Report, HostFallbackOpsAreListedWithTheirReason) {
  const std::string page = render("fallback");
  EXPECT_NE(page.find("aten.fft_rfft.default"), std::string::npos);
  EXPECT_NE(page.find("no NeuronCore lowering"), std::string::npos);
  EXPECT_NE(page.find("host CPU"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReportFixture, ::testing::ValuesIn(kFixtures));

TEST_P(ReportFixture, RendersInHeadlessChromium) {
  if (!have_chromium()) {
    GTEST_SKIP() << "chromium is not installed: run tests/tools/install_chromium.sh (Debian "
                    "package 'chromium')";
  }
  const std::string name = GetParam();
  const std::string html = (scratch_dir() / (name + ".html")).string();
  write_compile_report(html, compiled_fixture(name),
                       {fixture_model(name), name + ".nca", "trn1", "none", 2});
  const RenderedPage page = render_in_chromium(html, scratch_dir(), name);
  ASSERT_EQ(page.exit_code, 0) << page.command << "\n" << page.log;
  // The inline script counts the plots with marks and a non-empty box.
  ASSERT_EQ(page.plots, 5) << page.dom.substr(0, 2000);
  EXPECT_EQ(page.plots_drawn, 5);
  EXPECT_FALSE(page.script_errors) << "script errors on the page";
  for (const std::string& line : page.console) ADD_FAILURE() << line;  // the page prints none
}

}  // namespace
}  // namespace neuronc::tools
