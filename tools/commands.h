// Registration of each `neuronc` subcommand with the CLI11 application.
#pragma once

namespace CLI {
class App;
}

namespace neuronc::tools {

void register_analyze_command(CLI::App& app);
void register_compile_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_verify_command(CLI::App& app);
void register_bench_command(CLI::App& app);
void register_profile_command(CLI::App& app);
void register_generate_command(CLI::App& app);
void register_compare_command(CLI::App& app);

}  // namespace neuronc::tools
