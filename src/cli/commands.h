// Subcommands of the `brisk` binary. Each registers its options on the app and returns the
// function that runs it after parsing.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace brisk::cli {

using Runner = std::function<int()>;

Runner add_generate_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);
Runner add_chat_command(CLI::App& app);
Runner add_quantize_command(CLI::App& app);
Runner add_perplexity_command(CLI::App& app);
// `bench serve`, under the `bench` command.
Runner add_bench_serve_command(CLI::App& bench);

}  // namespace brisk::cli
