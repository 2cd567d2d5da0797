// Registration of pagellm's subcommands. Each Register*Command adds one subcommand
// whose callback runs the work and records the process exit code with SetExitCode.
#pragma once

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace pagellm::cli {

void RegisterAllCommands(CLI::App& app);

void RegisterGenerateCommand(CLI::App& app);        // generate_command.cc
void RegisterTokenizeCommands(CLI::App& app);       // tokenize_command.cc: tokenize, detokenize
void RegisterMakeDummyModelCommand(CLI::App& app);  // make_dummy_model_command.cc
void RegisterUnpackModelCommand(CLI::App& app);     // unpack_model_command.cc
void RegisterChatTemplateCommand(CLI::App& app);    // chat_template_command.cc: render-chat-template
void RegisterLogitsCommand(CLI::App& app);          // logits_command.cc
void RegisterServeCommand(CLI::App& app);           // serve_command.cc
void RegisterConvertCommand(CLI::App& app);         // convert_command.cc
void RegisterBenchCommand(CLI::App& app);           // bench_command.cc: the `bench` group
void RegisterBenchThroughputCommand(CLI::App& bench);  // bench_throughput_command.cc
void RegisterBenchServeCommand(CLI::App& bench);       // bench_serve_command.cc
void RegisterDistWorkerCommand(CLI::App& app);      // dist_worker_command.cc (hidden)

// Exit code of the subcommand that ran (0 if none failed).
int ExitCode();
void SetExitCode(int code);

// Prints "error: <message>" to stderr and sets exit code 1 if `status` is not OK.
// Returns status.ok().
bool ReportStatus(const Status& status);

}  // namespace pagellm::cli
