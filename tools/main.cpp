// The neuronc command line: compile PyTorch programs for Trainium and inspect, run, verify,
// benchmark and profile the artifacts. Each subcommand lives in its own file.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/inspect_command.h"

int main(int argc, char** argv) {
  using namespace neuronc::tools;
  CLI::App app{"neuronc: ahead-of-time compiler from PyTorch programs to AWS Trainium"};
  app.set_version_flag("--version", std::string("neuronc ") + NEURONC_VERSION);
  app.require_subcommand(1);
  app.footer("Run 'neuronc <command> --help' for the options and an example of each command.");
  register_analyze_command(app);
  register_compile_command(app);
  register_run_command(app);
  register_verify_command(app);
  register_inspect_command(app);
  register_bench_command(app);
  register_profile_command(app);
  register_generate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  } catch (const CommandExit& e) {
    progress_done();
    if (!e.message.empty()) print_error(e.message, e.location);
    return e.code;
  } catch (const std::exception& e) {
    progress_done();
    print_error(e.what());
    return kExitError;
  }
  return kExitOk;
}
