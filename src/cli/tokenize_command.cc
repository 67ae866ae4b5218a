// `brisk tokenize`: the model's tokenizer and chat template from the command line, for scripts
// and debugging. Reads stdin, prints JSON.
#include <iostream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "tokenizer/chat_prompt.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

struct TokenizeArgs {
  std::string model;
  bool raw = false;
  bool decode = false;
  bool chat = false;
  bool keep_special = false;
};

nlohmann::ordered_json parse_stdin_json(const std::string& input, const char* expected) {
  try {
    return nlohmann::ordered_json::parse(input);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kInvalidArgument, "stdin is not valid JSON ({} expected): {}", expected, e.what());
  }
}

int run_tokenize(const TokenizeArgs& args) {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (args.chat) {
    auto messages = parse_stdin_json(input, "a list of messages");
    BRISK_CHECK(messages.is_array(), "stdin must hold a JSON list of messages like [{{\"role\": \"user\", "
                                     "\"content\": \"Hi\"}}]");
    fmt::print("{}", ChatPrompt::from_folder(args.model).render(messages, /*add_generation_prompt=*/true));
    return 0;
  }
  auto tokenizer = Tokenizer::from_folder(args.model);
  if (args.decode) {
    auto ids = parse_stdin_json(input, "a list of token ids");
    BRISK_CHECK(ids.is_array(), "stdin must hold a JSON list of token ids like [1, 2, 3]");
    std::vector<int32_t> values;
    for (const auto& id : ids) {
      BRISK_CHECK(id.is_number_integer(), "token id {} is not an integer", id.dump());
      values.push_back(id.get<int32_t>());
    }
    fmt::print("{}", tokenizer->decode(values, !args.keep_special));
    return 0;
  }
  fmt::print("{}\n", nlohmann::json(tokenizer->encode(input, /*add_special_tokens=*/!args.raw)).dump());
  return 0;
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Tokenize stdin with the model's tokenizer and print the ids as a JSON list (HF's encode)");
  cmd->add_option("--model", args->model, "Hugging Face model folder with tokenizer files")->required();
  auto* raw = cmd->add_flag("--raw", args->raw, "no BOS/EOS: encode(text, add_special_tokens=False)");
  auto* decode = cmd->add_flag("--decode", args->decode, "read a JSON list of ids and print the text");
  auto* chat = cmd->add_flag("--chat", args->chat,
                             "read a JSON list of messages and print the prompt the chat template renders");
  cmd->add_flag("--keep-special", args->keep_special, "with --decode: keep special tokens in the text");
  decode->excludes(chat)->excludes(raw);
  chat->excludes(raw);
  return [args] { return run_tokenize(*args); };
}

}  // namespace brisk::cli
