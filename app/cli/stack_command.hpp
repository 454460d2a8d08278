#pragma once
// `almagest-cli stack simulate|psiphi|search|stamps`: the shift-and-stack moving-object search
// from the command line, options generated from the stack job's schema (almagest/stack/job.hpp;
// docs/cli.md, section "stack"; engine: docs/stack.md).
namespace CLI {
class App;
}

namespace almagest::cli {

struct Command;

/// Registers `stack` and its four subcommands on `parent`.
Command add_stack_command(CLI::App& parent);

}  // namespace almagest::cli
