#pragma once
// Seeded alm for the SHT tests that drive almagest-cli (tests/cli/test_cli_sht.cpp,
// test_cli_sht_schema.cpp). Header-only. The draws come from std::normal_distribution, so they
// may differ between standard libraries; these tests compare the CLI with the engine on the same
// alm, so nothing they check depends on the values.
#include <cstdint>
#include <random>
#include <vector>

#include "almagest/sht/alm.hpp"

namespace almagest::test {

/// Seeded Gaussian alm of one component (length alm_size(lmax)), Im a_l0 = 0; spin2: the l < 2
/// entries zero.
inline std::vector<sht::Complex> random_alm(int lmax, bool spin2, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<sht::Complex> a(sht::alm_size(lmax));
  for (auto& x : a) x = {g(rng), g(rng)};
  for (int l = 0; l <= lmax; ++l) a[l] = {a[l].real(), 0.0};
  if (spin2)
    for (int m = 0; m <= 1; ++m)
      for (int l = m; l < 2; ++l) a[sht::alm_index(lmax, l, m)] = 0.0;
  return a;
}

}  // namespace almagest::test
