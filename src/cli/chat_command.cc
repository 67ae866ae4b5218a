// `brisk chat`: an interactive terminal chat with the model's chat template; replies stream as
// they are generated and the conversation is kept until /reset.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/error.h"
#include "tokenizer/chat_prompt.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

struct ChatArgs {
  EngineOptions engine;
  SamplingParams sampling;
  std::string system;
};

constexpr const char* kHelp = "commands: /reset (forget the conversation), /exit (or Ctrl-D), /help";

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

class ChatSession {
 public:
  ChatSession(const ChatArgs& args, Engine& engine, const Tokenizer& tokenizer, const ChatPrompt& chat)
      : args_(args), engine_(engine), tokenizer_(tokenizer), chat_(chat) {
    reset();
  }

  void reset() {
    messages_ = nlohmann::ordered_json::array();
    if (!args_.system.empty()) messages_.push_back({{"role", "system"}, {"content", args_.system}});
  }

  // Streams the reply to `user` to stdout and keeps both in the history.
  void reply(const std::string& user) {
    messages_.push_back({{"role", "user"}, {"content", user}});
    // As transformers' apply_chat_template(tokenize=True): the template already holds BOS.
    std::vector<int32_t> prompt = tokenizer_.encode(chat_.render(messages_, true), /*add_special_tokens=*/false);
    const int64_t room = engine_.max_model_len() - static_cast<int64_t>(prompt.size());
    if (room < 1) {
      messages_.erase(messages_.end() - 1);
      fmt::print(stderr, "the conversation ({} tokens) fills the model's context of {} tokens: /reset to start over\n",
                 prompt.size(), engine_.max_model_len());
      return;
    }
    SamplingParams sampling = args_.sampling;
    sampling.max_tokens = std::min(sampling.max_tokens, room);
    auto stream = engine_.submit({std::move(prompt), sampling});
    std::string text;
    RequestEvent event;
    do {
      event = *stream->next();
      text += event.text;
      fmt::print("{}", event.text);
      std::fflush(stdout);
    } while (event.kind != RequestEvent::Kind::kFinished);
    fmt::print("\n");
    if (event.finish_reason == FinishReason::kError) {
      messages_.erase(messages_.end() - 1);
      fmt::print(stderr, "error: {}\n", event.error);
      return;
    }
    if (event.finish_reason == FinishReason::kLength) fmt::print(stderr, "[reply cut at {} tokens]\n", sampling.max_tokens);
    messages_.push_back({{"role", "assistant"}, {"content", text}});
  }

 private:
  const ChatArgs& args_;
  Engine& engine_;
  const Tokenizer& tokenizer_;
  const ChatPrompt& chat_;
  nlohmann::ordered_json messages_;
};

int run_chat(ChatArgs& args) {
  // Fail on a folder without tokenizer or template before the (long) model load.
  auto tokenizer = Tokenizer::from_folder(args.engine.model_dir);
  ChatPrompt chat = ChatPrompt::from_folder(args.engine.model_dir);
  show_load_progress(args.engine);
  auto engine = Engine::create(args.engine);
  ChatSession session(args, *engine, *tokenizer, chat);
  const bool interactive = isatty(STDIN_FILENO);
  if (interactive) fmt::print(stderr, "brisk chat: {} ({})\n", args.engine.model_dir, kHelp);
  std::string line;
  while (true) {
    if (interactive) fmt::print("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    line = trim(line);
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      session.reset();
      fmt::print(stderr, "(conversation cleared)\n");
    } else if (line == "/help") {
      fmt::print(stderr, "{}\n", kHelp);
    } else if (line.starts_with('/')) {
      fmt::print(stderr, "unknown command {}; {}\n", line, kHelp);
    } else {
      session.reply(line);
    }
  }
  engine->shutdown();
  return 0;
}

}  // namespace

Runner add_chat_command(CLI::App& app) {
  auto args = std::make_shared<ChatArgs>();
  args->sampling.max_tokens = 512;
  CLI::App* cmd = app.add_subcommand("chat", "Chat with a model in the terminal (its chat template, streamed replies)");
  cmd->footer("In the chat: /reset forgets the conversation, /exit (or Ctrl-D) quits.");
  add_engine_options(cmd, args->engine);
  cmd->add_option("--system", args->system, "system message that starts every conversation")->group("Chat");
  add_sampling_options(cmd, args->sampling);
  return [args] { return run_chat(*args); };
}

}  // namespace brisk::cli
