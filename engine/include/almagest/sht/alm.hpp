#pragma once
// a_lm layout helpers (healpy): complex128, triangular, mmax = lmax,
// index(l, m) = m (2 lmax + 1 - m) / 2 + l for 0 <= m <= l <= lmax.
// HEALPix pixel counts and the real inner product on a_lm vectors (m > 0 counted twice).
#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>

namespace almagest::sht {

using Complex = std::complex<double>;

constexpr std::size_t alm_size(int lmax) noexcept {
  return static_cast<std::size_t>(lmax + 1) * static_cast<std::size_t>(lmax + 2) / 2;
}
constexpr std::size_t alm_index(int lmax, int l, int m) noexcept {
  return static_cast<std::size_t>(m) * static_cast<std::size_t>(2 * lmax + 1 - m) / 2 +
         static_cast<std::size_t>(l);
}
/// Largest NSIDE HEALPix defines (npix = 12 * 2^58 still fits in 64 bits).
constexpr std::int64_t kMaxHealpixNside = std::int64_t{1} << 29;
/// True for 1 <= nside <= 2^29, and a power of two when `power_of_two` (NESTED ordering).
constexpr bool valid_nside(std::int64_t nside, bool power_of_two = false) noexcept {
  return nside >= 1 && nside <= kMaxHealpixNside && (!power_of_two || (nside & (nside - 1)) == 0);
}
/// 12 nside^2; -1 for an nside outside 0..2^29 (never overflows, whatever a file holds).
constexpr std::int64_t npix_of(std::int64_t nside) noexcept {
  if (nside < 0 || nside > kMaxHealpixNside) return -1;
  return 12 * nside * nside;
}
/// nside with 12 nside^2 == npix, or -1 if npix is not a HEALPix map size.
int nside_of_npix(std::int64_t npix) noexcept;

/// Real inner product of two alm vectors of one component each (length alm_size(lmax)):
/// sum_l Re(a_l0 conj b_l0) + 2 sum_{m>0} Re(a_lm conj b_lm). With this product the adjoint
/// transform is the exact transpose of synthesis: <Y a, map> = <a, Y^T map>.
double alm_dot(std::span<const Complex> a, std::span<const Complex> b, int lmax);

/// sum_p a_p b_p.
double map_dot(std::span<const double> a, std::span<const double> b);

}  // namespace almagest::sht
