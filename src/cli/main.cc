// brisk: serve, chat with, generate from and benchmark Hugging Face LLM folders.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "brisk/status.h"
#include "cli/commands.h"
#include "core/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"brisk: a fast LLM inference engine for Hugging Face models (CPU reference, CUDA for Hopper)"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")->capture_default_str();
  std::vector<std::pair<CLI::App*, brisk::cli::Runner>> commands;
  auto register_command = [&](brisk::cli::Runner (*add)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    brisk::cli::Runner run = add(app);
    commands.emplace_back(app.get_subcommands({}).at(before), std::move(run));
  };
  register_command(&brisk::cli::add_serve_command);
  register_command(&brisk::cli::add_chat_command);
  register_command(&brisk::cli::add_generate_command);
  register_command(&brisk::cli::add_tokenize_command);
  register_command(&brisk::cli::add_bench_command);
  register_command(&brisk::cli::add_quantize_command);
  register_command(&brisk::cli::add_perplexity_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    brisk::log_to_stderr();
    brisk::set_log_level(log_level);
    for (auto& [command, run] : commands)
      if (command->parsed()) return run();
  } catch (const brisk::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
