#pragma once
// `almagest-cli stack psiphi|search|stamps|simulate`: the shift-and-stack moving-object search
// from the command line (docs/cli.md, section "stack"; engine: docs/stack.md).
namespace CLI {
class App;
}

namespace almagest::cli {

struct Command;

/// Registers `stack` and its four subcommands on `parent`.
Command add_stack_command(CLI::App& parent);
/// Registers `stack simulate` on the `stack` command (stack_simulate.cpp).
Command add_stack_simulate_command(CLI::App& stack);

}  // namespace almagest::cli
