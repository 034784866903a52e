// Every `neuronc` subcommand's --help shows an example, and bench/profile/compile --report work
// through the real command line (exit codes, files written, JSON on stdout).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/fixture_artifacts.h"
#include "tools/cli_output.h"
#include "tools/npy.h"

namespace neuronc::tools {
namespace {

using testing::fixture_artifact;
using testing::fixture_model;
using testing::scratch_dir;

using testing::neuronc;
using testing::Ran;
using testing::run_shell;

TEST(CliHelp, EverySubcommandHasAnExample) {
  for (const char* sub : {"analyze", "compile", "run", "verify", "bench", "profile", "inspect",
                          "generate", "compare"}) {
    const Ran r = neuronc(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << sub << " --help:\n" << r.out;
    EXPECT_NE(r.out.find("neuronc " + std::string(sub)), std::string::npos) << sub;
  }
}

TEST(Cli, BenchJsonOnStdout) {
  const Ran r = neuronc("bench " + fixture_artifact("mlp") + " --iterations 3 --json");
  ASSERT_EQ(r.code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["simulated_latency_us"]["p50"].get<double>(), 0);
  EXPECT_TRUE(j["cost_per_million_usd"].is_number());
}

TEST(Cli, BenchUsageErrors) {
  EXPECT_EQ(neuronc("bench " + fixture_artifact("mlp") + " --iterations 0").code, 2);
  EXPECT_EQ(neuronc("bench " + fixture_artifact("mlp") + " --instance nosuch.large").code, 2);
  EXPECT_EQ(neuronc("bench /nonexistent.nca").code, 1);
}

// A malformed --dim is a usage error (exit 2) that says what the option expects, for every
// command that takes one, before any model is read.
TEST(Cli, DimBindingErrorsSayWhatIsExpected) {
  const std::string model = fixture_model("dynamic_batch");
  for (const char* cmd : {"compile", "verify"}) {
    for (const auto& [dim, says] :
         {std::pair<std::string, std::string>{"s0=eight", "'eight' is not an integer"},
          {"s0=8x", "'8x' is not an integer"},
          {"s0", "expected SYMBOL=VALUE"},
          {"=8", "expected SYMBOL=VALUE"}}) {
      const Ran r = run_shell(
          std::string(NEURONC_BINARY_DIR) + "/tools/neuronc " + cmd + " " + model + " --dim " + dim,
          /*with_stderr=*/true);
      EXPECT_EQ(r.code, 2) << cmd << " --dim " << dim << ":\n" << r.out;
      EXPECT_NE(r.out.find(says), std::string::npos) << cmd << " --dim " << dim << ":\n" << r.out;
      EXPECT_EQ(r.out.find("stoll"), std::string::npos) << r.out;
    }
  }
}

// The custom-kernel inventory (issue 20): a library's operator in a .pt2 and in a TorchScript
// archive is flagged with its source line, and the portability line counts it out.
TEST(Cli, AnalyzeFlagsCustomKernels) {
  const Ran pt2 = neuronc("analyze " + fixture_model("custom_op") + " --json");
  EXPECT_EQ(pt2.code, 1) << pt2.out;  // the kernel runs nowhere
  const auto j = nlohmann::json::parse(pt2.out);
  ASSERT_EQ(j["custom_kernels"].size(), 1u) << pt2.out;
  const auto& k = j["custom_kernels"][0];
  EXPECT_EQ(k["op"], "demo_kernels.fused_scale_gelu.default");
  EXPECT_EQ(k["origin"], "custom");
  EXPECT_EQ(k["ports"], false);
  EXPECT_EQ(k["count"], 1);
  ASSERT_FALSE(k["locations"].empty());
  EXPECT_NE(k["locations"][0].get<std::string>().find("zoo.py"), std::string::npos) << k;
  const auto& p = j["portability"];
  EXPECT_EQ(p["portable_nodes"].get<size_t>() + 1, p["nodes"].get<size_t>());
  EXPECT_NE(p["summary"].get<std::string>().find("1 custom kernel needs a port"), std::string::npos)
      << p;

  const Ran text = neuronc("analyze " + fixture_model("custom_op"));
  EXPECT_NE(text.out.find("custom kernels (1):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("will not port"), std::string::npos) << text.out;

  const Ran ts =
      neuronc("analyze " + std::string(NEURONC_SOURCE_DIR) + "/models/custom_op/model.pt --json");
#ifdef NEURONC_HAVE_TORCH
  EXPECT_EQ(ts.code, 1) << ts.out;
  const auto t = nlohmann::json::parse(ts.out);
  ASSERT_EQ(t["custom_kernels"].size(), 1u) << ts.out;
  EXPECT_EQ(t["custom_kernels"][0]["op"], "demo_kernels.fused_scale_gelu");
  EXPECT_NE(t["custom_kernels"][0]["locations"][0].get<std::string>().find(
                "ops.demo_kernels.fused_scale_gelu("),
            std::string::npos)
      << ts.out;
#endif

  // A model of PyTorch's own operators is portable as is.
  const auto mlp =
      nlohmann::json::parse(neuronc("analyze " + fixture_model("mlp") + " --json").out);
  EXPECT_TRUE(mlp["custom_kernels"].empty());
  EXPECT_EQ(mlp["portability"]["portable_nodes"], mlp["portability"]["nodes"]);
  EXPECT_NE(mlp["portability"]["summary"].get<std::string>().find("no custom kernels"),
            std::string::npos);
}

#ifdef NEURONC_HAVE_TORCH
// libtorch is opened only for TorchScript files: the executable does not link it (its start-up
// costs 0.7 s), a .pt2 file never opens the reader module, and a module that cannot be opened is
// an error naming it.
TEST(Cli, TorchScriptReaderIsOpenedOnlyForTorchScript) {
  const std::string exe = std::string(NEURONC_BINARY_DIR) + "/tools/neuronc";
  const Ran needed = run_shell("readelf -d " + exe, /*with_stderr=*/true);
  ASSERT_EQ(needed.code, 0) << needed.out;
  EXPECT_NE(needed.out.find("(NEEDED)"), std::string::npos) << needed.out;
  EXPECT_EQ(needed.out.find("libtorch"), std::string::npos) << needed.out;
  EXPECT_EQ(needed.out.find("libc10"), std::string::npos) << needed.out;

  const std::string missing =
      "NEURONC_TORCHSCRIPT_PLUGIN=" + scratch_dir().string() + "/absent.so ";
  const Ran pt2 = run_shell(missing + exe + " analyze " + fixture_model("mlp"), true);
  EXPECT_EQ(pt2.code, 0) << pt2.out;
  const Ran pt = run_shell(
      missing + exe + " analyze " + std::string(NEURONC_SOURCE_DIR) + "/models/mlp/model.pt", true);
  EXPECT_NE(pt.code, 0) << pt.out;
  EXPECT_NE(pt.out.find("TorchScript reader " + scratch_dir().string() +
                        "/absent.so cannot be "
                        "loaded"),
            std::string::npos)
      << pt.out;
  EXPECT_NE(pt.out.find("NEURONC_TORCHSCRIPT_PLUGIN"), std::string::npos) << pt.out;

  const Ran ok = neuronc("analyze " + std::string(NEURONC_SOURCE_DIR) + "/models/mlp/model.pt");
  EXPECT_EQ(ok.code, 0) << ok.out;
}
#endif

TEST(Cli, ProfileWritesBothFormats) {
  for (const char* ext : {".json", ".pftrace"}) {
    const std::string out = (scratch_dir() / (std::string("cli") + ext)).string();
    const Ran r = neuronc("profile " + fixture_artifact("fallback") + " -o " + out + " --json");
    ASSERT_EQ(r.code, 0) << ext;
    EXPECT_TRUE(std::filesystem::file_size(out) > 0);
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["trace"], out);
    EXPECT_GT(j["events"].get<size_t>(), 0u);
  }
  EXPECT_EQ(neuronc("profile " + fixture_artifact("mlp") + " -o trace.txt").code, 2);
}

// profile --entry: one program of an artifact with several (the decode step of an LLM export),
// and an unknown entry is a usage error.
TEST(Cli, ProfileTakesAnEntry) {
  const std::filesystem::path llm =
      std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_tiny";
  const std::string art = (scratch_dir() / "profile_llama_tiny.nca").string();
  ASSERT_EQ(neuronc("compile " + llm.string() + " -o " + art).code, 0);
  const std::string out = (scratch_dir() / "profile_decode.json").string();
  const Ran first = neuronc("profile " + art + " -o " + out + " --json");
  const Ran prefill = neuronc("profile " + art + " --entry prefill_16 -o " + out + " --json");
  const Ran decode = neuronc("profile " + art + " --entry decode -o " + out + " --json");
  ASSERT_EQ(first.code, 0);
  ASSERT_EQ(prefill.code, 0);
  ASSERT_EQ(decode.code, 0);
  // The default is the first entry (the prefill); the decode step is another program.
  const auto jf = nlohmann::json::parse(first.out), jp = nlohmann::json::parse(prefill.out),
             jd = nlohmann::json::parse(decode.out);
  EXPECT_EQ(jf["simulated_device_us"], jp["simulated_device_us"]);
  EXPECT_EQ(jf["plan_steps"], jp["plan_steps"]);
  EXPECT_NE(jd["simulated_device_us"], jp["simulated_device_us"]);
  EXPECT_NE(jd["plan_steps"], jp["plan_steps"]);
  EXPECT_EQ(neuronc("profile " + art + " --entry decode_7 -o " + out).code, 2);
}

TEST(Cli, CompileWritesTheReport) {
  const std::string nca = (scratch_dir() / "cli_mlp.nca").string();
  const std::string html = (scratch_dir() / "cli_mlp.html").string();
  const Ran r = neuronc("compile " + fixture_model("mlp") + " -o " + nca + " --report " + html);
  ASSERT_EQ(r.code, 0);
  ASSERT_TRUE(std::filesystem::exists(html));
  EXPECT_GT(std::filesystem::file_size(html), 1000u);
}

// `compile` through the cache: stored, then a hit with the same bytes, linked to the entry (or
// copied, with --cache-copy); a corrupt entry is reported, compiled again and replaced;
// --no-cache neither reads nor writes it.
TEST(Cli, CompileUsesTheCacheAndRebuildsACorruptEntry) {
  namespace fs = std::filesystem;
  const fs::path dir = scratch_dir() / "cli_cache";
  fs::remove_all(dir);
  fs::create_directories(dir);  // the artifacts' (the cache makes its own)
  const std::string model = fixture_model("mlp");
  auto compile = [&](const std::string& out, const std::string& extra) {
    const Ran r = neuronc("compile " + model + " -o " + (dir / out).string() + " --cache-dir " +
                          (dir / "cache").string() + " --json " + extra);
    EXPECT_EQ(r.code, 0) << r.out;
    return nlohmann::json::parse(r.out);
  };
  auto bytes = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const nlohmann::json first = compile("a.nca", "");
  EXPECT_EQ(first["cache"]["state"], "stored");
  const std::string good = bytes(dir / "a.nca");
  const fs::path entry_artifact =
      dir / "cache" / "entries" / (first["cache"]["key"].get<std::string>() + ".nca");
  EXPECT_TRUE(fs::equivalent(dir / "a.nca", entry_artifact));
  const nlohmann::json second = compile("b.nca", "--threads 1");
  EXPECT_EQ(second["cache"]["state"], "hit");
  EXPECT_EQ(second["cache"]["output"], "linked");
  EXPECT_TRUE(fs::equivalent(dir / "b.nca", entry_artifact));
  const nlohmann::json copied = compile("b2.nca", "--cache-copy");
  EXPECT_EQ(copied["cache"]["state"], "hit");
  EXPECT_EQ(copied["cache"]["output"], "copied");
  EXPECT_FALSE(fs::equivalent(dir / "b2.nca", entry_artifact));
  EXPECT_EQ(bytes(dir / "b2.nca"), good);
  EXPECT_EQ(compile("b.nca", "")["cache"]["output"], "unchanged");
  EXPECT_EQ(second["cache"]["key"], first["cache"]["key"]);
  EXPECT_EQ(second["artifact_bytes"], first["artifact_bytes"]);
  EXPECT_EQ(second["instructions"], first["instructions"]);
  EXPECT_EQ(bytes(dir / "b.nca"), good);

  // One flipped byte in the entry's artifact (a.nca and b.nca are that file too).
  std::string e = bytes(entry_artifact);
  e[e.size() - 10] ^= 1;
  std::ofstream(entry_artifact, std::ios::binary | std::ios::trunc) << e;
  const Ran warned =
      run_shell(std::string(NEURONC_BINARY_DIR) + "/tools/neuronc compile " + model + " -o " +
                    (dir / "c.nca").string() + " --cache-dir " + (dir / "cache").string(),
                /*with_stderr=*/true);
  EXPECT_EQ(warned.code, 0);
  EXPECT_NE(warned.out.find("warning: cache entry"), std::string::npos) << warned.out;
  EXPECT_NE(warned.out.find("artifact CRC32C mismatch"), std::string::npos) << warned.out;
  EXPECT_NE(warned.out.find("compile time"), std::string::npos) << warned.out;
  EXPECT_EQ(bytes(dir / "c.nca"), good);
  EXPECT_EQ(compile("d.nca", "")["cache"]["state"], "hit");
  EXPECT_EQ(bytes(dir / "d.nca"), good);

  const nlohmann::json off = compile("e.nca", "--no-cache");
  EXPECT_EQ(off["cache"]["state"], "off");
  EXPECT_EQ(bytes(dir / "e.nca"), good);

  // With no digest remembered (as after a model is copied, or the cache moved), the sources
  // (the compiler's own executable among them) are hashed beside a compile that starts at
  // once; the key still finds the entry, and the output is the entry's artifact.
  fs::remove_all(dir / "cache" / "sources");
  const nlohmann::json beside = compile("f.nca", "");
  EXPECT_EQ(beside["cache"]["state"], "hit");
  EXPECT_EQ(beside["cache"]["key"], first["cache"]["key"]);
  EXPECT_EQ(bytes(dir / "f.nca"), good);
  EXPECT_TRUE(fs::exists(dir / "cache" / "sources")) << "the digests are remembered again";
  EXPECT_EQ(compile("g.nca", "")["cache"]["state"], "hit");
}

// The ETA line extrapolates the time the estimate took; no ETA below 2 % or when done.
TEST(CliOutput, EtaLineExtrapolatesTheEstimate) {
  EXPECT_EQ(eta_line("[2/4] optimising", 0.5, 10, 10),
            "[2/4] optimising 50 % \u00b7 10 s \u00b7 ~10 s left");
  // Redrawn 4 s later with no new estimate: the ETA counts down.
  EXPECT_EQ(eta_line("[2/4] optimising", 0.5, 14, 10),
            "[2/4] optimising 50 % \u00b7 14 s \u00b7 ~6 s left");
  // Overdue: never a negative or zero ETA.
  EXPECT_EQ(eta_line("w", 0.5, 30, 10), "w 50 % \u00b7 30 s \u00b7 ~1 s left");
  EXPECT_EQ(eta_line("r", 0.01, 3, 3), "r 1 % \u00b7 3 s");
  EXPECT_EQ(eta_line("s", 1.0, 20, 20), "s 100 % \u00b7 20 s");
  EXPECT_EQ(eta_line("s", 1.7, 20, 20), "s 100 % \u00b7 20 s");
}

// verify's criteria: fp32 element-wise; auto-cast scales the absolute tolerance by max|ref| and
// asks for cosine >= 0.999; --min-cosine / --atol override and can make the same run fail.
TEST(Cli, VerifyToleranceFollowsAutoCast) {
  const std::string cnn = fixture_model("cnn");
  Ran r = neuronc("verify " + cnn + " --auto-cast matmul --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["atol_relative_to_max_ref"].get<bool>());
  EXPECT_DOUBLE_EQ(j["min_cosine"].get<double>(), 0.999);
  const double cosine = j["outputs"][0]["cosine"].get<double>();
  EXPECT_GE(cosine, 0.999);
  EXPECT_LT(cosine, 1.0);  // bf16 operands really change the result
  r = neuronc("verify " + cnn + " --auto-cast matmul --no-intermediates --json --min-cosine " +
              std::to_string(1.0 - (1.0 - cosine) / 4));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["outputs"][0]["pass"].get<bool>());
  r = neuronc("verify " + cnn +
              " --auto-cast matmul --no-intermediates --json --atol 1e-7 --rtol 0");
  EXPECT_EQ(r.code, 3) << r.out;
  r = neuronc("verify " + cnn + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["atol_relative_to_max_ref"].get<bool>());
  EXPECT_FALSE(j.contains("min_cosine"));
}

}  // namespace
}  // namespace neuronc::tools

namespace neuronc::tools {
namespace {

using testing::neuronc;
using testing::Ran;
using testing::run_shell;
using testing::scratch_dir;

// `generate` on the tiny Llama's decode program: transformers' greedy tokens, with TTFT, TPOT
// and the steps in the JSON report; the tokens file; the errors a user can make.
TEST(Cli, GenerateGivesTheReferenceTokens) {
  const std::filesystem::path llm =
      std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_tiny";
  const std::string art = (scratch_dir() / "llama_tiny_decode.nca").string();
  ASSERT_EQ(neuronc("compile " + (llm / "decode" / "model.pt2").string() + " -o " + art).code, 0);
  const std::string prompt = (llm / "reference" / "prompt.npy").string();
  const std::string tokens = (scratch_dir() / "generated.npy").string();
  const Ran r = neuronc("generate " + art + " --input-ids " + prompt +
                        " --max-new-tokens 20 --json -o " + tokens);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const NpyArray want = read_npy((llm / "reference" / "tokens.npy").string());
  std::vector<int64_t> ref(20);
  std::memcpy(ref.data(), want.data.data(), 20 * sizeof(int64_t));
  EXPECT_EQ(j["tokens"][0].get<std::vector<int64_t>>(), ref);
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["steps"].size(), 12u + 19u);  // the last new token is not fed back
  // The 12 prompt steps take longer on the device than one decode step, and TTFT holds them
  // (it adds host-op time measured on this machine, so only the device part is compared).
  double prompt_device_us = 0;
  for (const auto& s : j["steps"])
    if (s["kind"] == "prompt") prompt_device_us += s["device_us"].get<double>();
  EXPECT_GT(prompt_device_us, j["steps"].back()["device_us"].get<double>());
  EXPECT_GE(j["ttft_us"].get<double>(), prompt_device_us);
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
  const NpyArray written = read_npy(tokens);
  EXPECT_EQ(written.shape, (std::vector<int64_t>{1, 20}));

  // More positions than the cache holds (80), a token outside the vocab, a program that is
  // not a decode program: usage errors that say what was expected.
  EXPECT_EQ(neuronc("generate " + art + " --input-ids " + prompt + " --max-new-tokens 70").code, 2);
  NpyArray bad = read_npy(prompt);
  const int64_t outside = 999;
  std::memcpy(bad.data.data(), &outside, sizeof outside);
  const std::string bad_prompt = (scratch_dir() / "bad_prompt.npy").string();
  write_npy(bad_prompt, bad);
  EXPECT_EQ(neuronc("generate " + art + " --input-ids " + bad_prompt).code, 2);
  EXPECT_EQ(neuronc("generate " + testing::fixture_artifact("mlp") + " --input-ids " + prompt).code,
            2);
  // With the prefill program the prompt fills the cache in one call: the same tokens, sooner.
  const std::string pre = (scratch_dir() / "llama_tiny_prefill.nca").string();
  ASSERT_EQ(neuronc("compile " + (llm / "prefill_16" / "model.pt2").string() + " -o " + pre).code,
            0);
  const Ran rp = neuronc("generate " + art + " --prefill " + pre + " --input-ids " + prompt +
                         " --max-new-tokens 20 --json");
  ASSERT_EQ(rp.code, 0) << rp.out;
  const auto jp = nlohmann::json::parse(rp.out);
  EXPECT_EQ(jp["tokens"], j["tokens"]);
  EXPECT_LT(jp["ttft_us"].get<double>(), j["ttft_us"].get<double>());
  EXPECT_EQ(jp["steps"].size(), 1u + 19u);
  EXPECT_EQ(jp["steps"][0]["kind"], "prefill");
  // `compile DIR` makes one artifact of both programs: generate uses its prefill entry.
  const std::string both = (scratch_dir() / "llama_tiny.nca").string();
  ASSERT_EQ(neuronc("compile " + llm.string() + "/ -o " + both).code, 0);
  const Ran rb =
      neuronc("generate " + both + " --input-ids " + prompt + " --max-new-tokens 20 --json");
  ASSERT_EQ(rb.code, 0) << rb.out;
  const auto jb = nlohmann::json::parse(rb.out);
  EXPECT_EQ(jb["tokens"], j["tokens"]);
  EXPECT_EQ(jb["steps"][0]["kind"], "prefill");
  EXPECT_NE(jb["ttft_from"].get<std::string>().find("entry prefill_16"), std::string::npos);
  const auto inspected = nlohmann::json::parse(neuronc("inspect " + both + " --json").out);
  EXPECT_EQ(inspected["signature"]["entries"].size(), 2u);
  // Tensor parallel over 2 cores: inspect's text names each per-core state and binding once
  // (NAME@core0..1, "(x2)"); --json keeps every one.
  const std::string tp2 = (scratch_dir() / "llama_tiny_tp2.nca").string();
  ASSERT_EQ(neuronc("compile " + llm.string() + "/ --tp 2 -o " + tp2).code, 0);
  const std::string text = neuronc("inspect " + tp2).out;
  EXPECT_NE(text.find("@core0..1: "), std::string::npos) << text;
  EXPECT_EQ(text.find("@core1: "), std::string::npos) << text;
  EXPECT_NE(text.find(" (x2)"), std::string::npos) << text;
  const auto tp2j = nlohmann::json::parse(neuronc("inspect " + tp2 + " --json").out);
  size_t core1 = 0;
  for (const auto& st : tp2j["signature"]["states"])
    core1 += st["name"].get<std::string>().ends_with("@core1");
  EXPECT_GT(core1, 0u);
  // analyze and verify take one program, and say so for the directory.
  EXPECT_EQ(neuronc("analyze " + llm.string()).code, 2);
  EXPECT_EQ(neuronc("verify " + llm.string() + "/").code, 2);
  // run --entry runs one of its programs; an unknown entry lists them.
  const std::filesystem::path entry_out = scratch_dir() / "entry_run";
  const Ran re = neuronc("run " + both + " --entry decode --input " +
                         (llm / "decode" / "input_0.npy").string() + " --input " +
                         (llm / "decode" / "input_1.npy").string() + " --output-dir " +
                         entry_out.string() + " --json");
  ASSERT_EQ(re.code, 0) << re.out;
  EXPECT_EQ(nlohmann::json::parse(re.out)["outputs"][0]["shape"],
            (std::vector<int64_t>{1, 1, 128}));
  EXPECT_EQ(neuronc("run " + both + " --entry prefill_99 --input x.npy").code, 2);
  // bench --generate on it: TTFT and TPOT percentiles, output tokens/s, cost per million output
  // tokens, each consistent with the others.
  const Ran bg =
      neuronc("bench " + both +
              " --generate -n 2 --prompt-len 12 --new-tokens 8 --price-per-hour 1 --json");
  ASSERT_EQ(bg.code, 0) << bg.out;
  const auto jg = nlohmann::json::parse(bg.out);
  EXPECT_EQ(jg["mode"], "generate");
  EXPECT_GT(jg["ttft_us"]["p50"].get<double>(), 0);
  EXPECT_GT(jg["tpot_us"]["mean"].get<double>(), 0);
  // Tokens/s and cost are end to end, issued synchronously: each decode step pays a runtime
  // call more than its device time; asynchronous issue hides it.
  const auto& e2e = jg["end_to_end"];
  EXPECT_EQ(e2e["issue"], "synchronous");
  const double tpot = e2e["tpot_us"]["mean"].get<double>();
  EXPECT_GT(tpot, jg["tpot_us"]["mean"].get<double>());
  EXPECT_LT(e2e["asynchronous_tpot_us"]["mean"].get<double>(), tpot);
  EXPECT_GT(e2e["ttft_us"]["p50"].get<double>(), jg["ttft_us"]["p50"].get<double>());
  const auto& tps = jg["output_tokens_per_s"];
  EXPECT_NEAR(tps["per_neuron_core"].get<double>(), 1e6 / tpot, 1e-6 * 1e6 / tpot);
  EXPECT_NEAR(jg["cost_per_million_output_tokens_usd"].get<double>(),
              1.0 / 3600.0 / tps["per_instance"].get<double>() * 1e6, 1e-9);
  // --timing-only: each program timed once, no tokens computed; the device time alone, so no
  // more than the functional run's latency (which adds the measured host casts).
  const Ran bt = neuronc("bench " + both +
                         " --generate --timing-only -n 2 --prompt-len 12 --new-tokens 8 --json");
  ASSERT_EQ(bt.code, 0) << bt.out;
  const auto jt = nlohmann::json::parse(bt.out);
  EXPECT_TRUE(jt["timing_only"].get<bool>());
  EXPECT_FALSE(jg["timing_only"].get<bool>());
  EXPECT_GT(jt["tpot_us"]["mean"].get<double>(), 0);
  EXPECT_LE(jt["tpot_us"]["mean"].get<double>(), tpot);
  EXPECT_LE(jt["ttft_us"]["p50"].get<double>(), jg["ttft_us"]["p50"].get<double>());
  // A program that is not a decode program is a usage error.
  EXPECT_EQ(neuronc("bench " + testing::fixture_artifact("mlp") + " --generate").code, 2);
  // A prompt longer than the largest bucket (16) is a usage error.
  NpyArray longer = read_npy(prompt);
  longer.shape = {1, 17};
  longer.data.resize(17 * sizeof(int64_t));
  const std::string long_prompt = (scratch_dir() / "long_prompt.npy").string();
  write_npy(long_prompt, longer);
  EXPECT_EQ(neuronc("generate " + art + " --prefill " + pre + " --input-ids " + long_prompt).code,
            2);
  // A decode program given as the prefill program is a 1-token bucket: too short for the prompt.
  EXPECT_EQ(neuronc("generate " + art + " --prefill " + art + " --input-ids " + prompt).code, 2);
  // `run` writes the state the run left beside the outputs.
  const std::filesystem::path out = scratch_dir() / "decode_run";
  const Ran ran = neuronc("run " + art + " --input " + (llm / "decode" / "input_0.npy").string() +
                          " --input " + (llm / "decode" / "input_1.npy").string() +
                          " --output-dir " + out.string() + " --json");
  ASSERT_EQ(ran.code, 0);
  const auto rj = nlohmann::json::parse(ran.out);
  EXPECT_EQ(rj["states"].size(), 4u);  // 2 layers x (key, value)
  EXPECT_TRUE(std::filesystem::exists(out / "state_0.npy"));
}

// A weights-free export (1.2 GB of weights declared, none saved) compiles to a timing-only
// artifact: inspect says so, bench and bench --generate give its simulated timing with the host
// ops marked as not run, and run and generate refuse it instead of computing from no weights.
TEST(Cli, AWeightsFreeExportCompilesForTimingOnly) {
  const std::string src =
      std::string(NEURONC_SOURCE_DIR) + "/tests/corpus/frontend/weights_free_llama.pt2";
  const std::string art = (scratch_dir() / "weights_free.nca").string();
  ASSERT_EQ(neuronc("compile " + src + " -o " + art).code, 0);
  EXPECT_LT(std::filesystem::file_size(art), uint64_t{16} << 20);  // no weight bytes
  const auto inspected = nlohmann::json::parse(neuronc("inspect " + art + " --json").out);
  EXPECT_EQ(inspected["timing_only"], true);
  EXPECT_GT(inspected["absent_constant_bytes"].get<uint64_t>(), uint64_t{1200000000});
  EXPECT_EQ(inspected["format_version"], "1.3");
  EXPECT_NE(neuronc("inspect " + art).out.find("timing-only"), std::string::npos);

  const Ran b = neuronc("bench " + art + " -n 3 --json");
  ASSERT_EQ(b.code, 0) << b.out;
  const auto jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(jb["timing_only"], true);
  const double p50 = jb["simulated_latency_us"]["p50"].get<double>();
  EXPECT_GT(p50, 0);
  EXPECT_EQ(jb["simulated_latency_us"]["device"].get<double>(), p50);
  bool marked = false;
  for (const auto& a : jb["assumptions"])
    marked |= a["name"] == "bench_host_ops_time" && a["unit"] == "not run";
  EXPECT_TRUE(marked);

  const Ran g = neuronc("bench " + art + " --generate -n 2 --prompt-len 4 --new-tokens 3 --json");
  ASSERT_EQ(g.code, 0) << g.out;
  const auto jg = nlohmann::json::parse(g.out);
  EXPECT_EQ(jg["timing_only"], true);
  // No prefill program: the prompt runs through decode, one token per step, each as long as a
  // decode step.
  EXPECT_NEAR(jg["ttft_us"]["p50"].get<double>(), 4 * jg["tpot_us"]["p50"].get<double>(),
              1e-6 * jg["ttft_us"]["p50"].get<double>());
  EXPECT_NEAR(jg["tpot_us"]["p50"].get<double>(), p50, 1e-6 * p50);

  const Ran r = neuronc("run " + art + " --input x.npy");
  EXPECT_NE(r.code, 0);
  const Ran gen = neuronc("generate " + art + " --input-ids " + std::string(NEURONC_SOURCE_DIR) +
                          "/models/llm/llama_tiny/reference/prompt.npy");
  EXPECT_EQ(gen.code, 2);
}

// generate --top-k / --temperature / --seed on an export with the sampler on the device: the
// tokens PyTorch's run of the same programs chose with the same draws, and the JSON says how.
// A logits artifact refuses to sample.
TEST(Cli, GenerateSamplesOnTheDevice) {
  const std::filesystem::path llm =
      std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_sampling_tiny";
  const std::string art = (scratch_dir() / "llama_sampling_tiny.nca").string();
  ASSERT_EQ(neuronc("compile " + llm.string() + " -o " + art).code, 0);
  const std::string prompt = (llm / "reference" / "prompt.npy").string();
  const Ran r = neuronc("generate " + art + " --input-ids " + prompt +
                        " --max-new-tokens 64 --top-k 5 --temperature 0.8 --seed 7 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const NpyArray want = read_npy((llm / "reference" / "sampled.npy").string());
  std::vector<int64_t> flat;
  for (const auto& row : j["tokens"])
    for (int64_t t : row.get<std::vector<int64_t>>()) flat.push_back(t);
  ASSERT_EQ(flat.size(), want.numel());
  EXPECT_EQ(std::memcmp(flat.data(), want.data.data(), flat.size() * sizeof(int64_t)), 0);
  EXPECT_EQ(j["decoding"], "top-k sampling");
  EXPECT_EQ(j["sampling"]["top_k"], 5);
  EXPECT_TRUE(j["sampling"]["on_device"].get<bool>());
  // bench --generate runs it greedily.
  EXPECT_EQ(neuronc("bench " + art + " --generate -n 1 --prompt-len 12 --new-tokens 4").code, 0);
  // Sampling from a logits artifact, and a temperature of 0, are usage errors.
  const std::string logits = (scratch_dir() / "llama_tiny_logits.nca").string();
  const std::filesystem::path tiny =
      std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_tiny";
  ASSERT_EQ(neuronc("compile " + tiny.string() + " -o " + logits).code, 0);
  EXPECT_EQ(neuronc("generate " + logits + " --input-ids " +
                    (tiny / "reference" / "prompt.npy").string() + " --top-k 3")
                .code,
            2);
  EXPECT_NE(neuronc("generate " + art + " --input-ids " + prompt + " --temperature 0").code, 0);
}

}  // namespace
}  // namespace neuronc::tools
