#pragma once
// `almagest-cli run` (run_command.cpp) and `almagest-cli schema` (schema_command.cpp).
#include "options.hpp"

namespace almagest::cli {

/// `almagest-cli schema [ENGINE] [--markdown|--json]`: every engine's job schema.
Command add_schema_command(CLI::App& parent);

}  // namespace almagest::cli
