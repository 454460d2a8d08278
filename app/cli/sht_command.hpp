#pragma once
// `almagest-cli sht synth|adjoint|inverse|map2alm|cl|smooth`: spherical harmonic transforms of
// HEALPix maps in healpy's conventions (docs/cli.md, section "sht").
namespace CLI {
class App;
}

namespace almagest::cli {

struct Command;

/// Exit code of `sht inverse` when CGLS did not reach --epsilon in --max-iter iterations (no
/// output is written). Listed in `almagest-cli sht --help` and docs/cli.md.
inline constexpr int kExitNotConverged = 6;

/// Registers `sht` and its six subcommands on `parent`.
Command add_sht_command(CLI::App& parent);

}  // namespace almagest::cli
