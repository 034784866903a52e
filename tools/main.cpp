// The neuronc command line: compile PyTorch programs for Trainium and inspect, run, verify,
// benchmark and profile the artifacts. Each subcommand lives in its own file.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/inspect_command.h"
#include "tools/mpi_processes.h"

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
  register_compare_command(app);
  // Under `mpirun -np K` (K > 1) each rank runs the command: only generate splits its work over
  // them; any other command would run K times over the same files.
  if (const MpiLaunch launch = mpi_launch(); launch.size > 1) {
    std::string command;
    for (int i = 1; i < argc && command.empty(); ++i)
      if (argv[i][0] != '-') command = argv[i];
    if (command != "generate") {
      print_error("neuronc " + command + " was launched as " + std::to_string(launch.size) +
                  " MPI processes: only `neuronc generate` splits its work over MPI ranks; run "
                  "this command as one process");
      return kExitUsage;
    }
  }
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
    if (e.code != kExitOk) abort_mpi_launch(e.code);
    return e.code;
  } catch (const std::exception& e) {
    progress_done();
    print_error(e.what());
    abort_mpi_launch(kExitError);
    return kExitError;
  }
  return kExitOk;
}
