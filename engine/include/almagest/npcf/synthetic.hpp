#pragma once
// Seeded synthetic catalogues for tests, benchmarks, the CLI demo and the GUI demo.
//
// Reproducibility: every generator draws from std::mt19937_64 (whose output sequence the C++
// standard fixes) through this library's own uniform and normal transforms (53-bit uniforms,
// Box-Muller normals), never through std::uniform_real_distribution or std::normal_distribution,
// whose algorithms differ between standard libraries. The same seed therefore gives the same
// catalogue with any standard library (up to the last ulp of libm's log/sin/cos).
#include <cstddef>
#include <cstdint>
#include <random>

#include "almagest/io/catalogue.hpp"

namespace almagest::npcf::synthetic {

/// n points uniform in the cube [0, box)^3 (Mpc/h), unit weights.
io::Catalogue uniform(std::size_t n, double box, std::uint64_t seed);

/// Neyman-Scott clustered catalogue of exactly n_points points in [0, box)^3 (Mpc/h), unit
/// weights: ceil(n_points / children_per_parent) parents uniform in the box, each with
/// children_per_parent children (the last parent fewer) displaced by a 3-D Gaussian of standard
/// deviation sigma per axis (Mpc/h); children are wrapped periodically into the box. Parents are
/// not part of the catalogue. Throws ConfigError on children_per_parent < 1, sigma < 0, box <= 0.
io::Catalogue neyman_scott(std::size_t n_points, int children_per_parent, double sigma, double box,
                           std::uint64_t seed);

/// The benchmark recipe of docs/benchmarks.md and npcf-conventions.md: data = N/3 (rounded down)
/// Neyman-Scott points (10 children per parent, sigma 5 Mpc/h), randoms = the remaining N - N/3
/// points uniform, both in a box of 1000 Mpc/h (not periodic).
struct CataloguePair {
  io::Catalogue data, randoms;
};
inline constexpr double kBenchmarkBox = 1000.0;
CataloguePair benchmark_catalogues(std::size_t n_total, std::uint64_t seed = 20240601,
                                   double box = kBenchmarkBox);

/// The portable random source used above (exposed for tests that need more draws).
class Rng {
public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();   ///< raw 64-bit output of mt19937_64
  double uniform();       ///< in [0, 1), 53 random bits
  double normal();        ///< standard normal (Box-Muller, both values used)

private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace almagest::npcf::synthetic
