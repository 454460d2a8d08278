#pragma once
// Batched Legendre stage as matrix products (the default for adjoints of >= 8 columns;
// ALMAGEST_SHT_LEGENDRE chooses, sht_module.cu and docs/sht.md). Per mode m and degree parity pi the Legendre values of every ring pair are kept
// in a table, and the stage becomes strided batched DGEMMs (cuBLAS, FP64 tensor cores) between
// the tables and the packed alm or ring data of all columns of a call: the recursion is run once
// per plan instead of once per column group and call. Host and device share everything below;
// the host twin test runs it with a reference GEMM against healpix_cxx
// (tests/identities/test_sht_device_math.cpp).
//
// Spin 2 (docs/sht.md): Q_m = -(aE W + i aB X), U_m = -(aB W - i aE X) on the north ring, with
// W = (lambda+ + lambda-) / 2, X = (lambda- - lambda+) / 2; on the south ring W carries
// (-1)^(l-m) and X -(-1)^(l-m).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "sht_math.cuh"

namespace almagest::kernels::sht {

/// Layout of a plan's tables and of the packed matrices of a call with `ncols` columns.
/// Table t (spin 0: lambda; spin 2: t = 0 W, t = 1 X), matrix (m, pi): column-major Lp x Rp, row
/// i = degree l = m + pi + 2 i (zero above lmax and below l0), column p = ring pair p (north
/// ring p), zero where m is above the pair's mlim.
/// Packed alm side, matrix (m, pi): Lp x rhs (row i as above); packed ring side: Rp x rhs. The
/// rhs real columns: spin 0 j = 2 c + (re, im); spin 2 j = 4 c + 2 k + (re, im) with k = E, B
/// (alm) or the Q and U combinations (ring side).
struct TableLayout {
  int nside = 0, lmax = 0, spin = 0, ncols = 0;
  int Lp = 0;  ///< rows: degrees of one parity, (lmax + 2) / 2
  int Rp = 0;  ///< ring pairs: 2 nside

  SHT_HD int batch() const { return 2 * (lmax + 1); }
  SHT_HD int ntab() const { return spin == 0 ? 1 : 2; }
  SHT_HD int per_col() const { return spin == 0 ? 2 : 4; }
  SHT_HD int rhs() const { return per_col() * ncols; }
  SHT_HD std::size_t mat() const { return static_cast<std::size_t>(Lp) * static_cast<std::size_t>(Rp); }
  SHT_HD std::size_t table_offset(int t, int m, int pi) const {
    return (static_cast<std::size_t>(t) * static_cast<std::size_t>(batch()) + 2 * m + pi) * mat();
  }
  SHT_HD std::size_t table_doubles() const { return static_cast<std::size_t>(ntab()) * batch() * mat(); }
  SHT_HD std::size_t alm_side_doubles() const {
    return static_cast<std::size_t>(batch()) * static_cast<std::size_t>(Lp) * rhs();
  }
  SHT_HD std::size_t ring_side_doubles() const {
    return static_cast<std::size_t>(batch()) * static_cast<std::size_t>(Rp) * rhs();
  }
  SHT_HD std::size_t nalm() const { return static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2; }
  SHT_HD std::size_t alm_index(int l, int m) const {
    return static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2 + static_cast<std::size_t>(l);
  }
};

SHT_HD TableLayout table_layout(int nside, int lmax, int spin, int ncols) {
  TableLayout L;
  L.nside = nside;
  L.lmax = lmax;
  L.spin = spin;
  L.ncols = ncols;
  L.Lp = (lmax + 2) / 2;
  L.Rp = 2 * nside;
  return L;
}

/// One strided batched GEMM, column-major as cuBLAS takes it: for every batch entry b,
/// C_b (m x n, ldc) = op(A_b) (m x k) B_b (k x n, ldb), op = transpose when trans_a.
struct GemmDesc {
  bool trans_a;
  int m, n, k, lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
};

/// Synthesis: ring side of table t = table^T x alm side (per (m, pi)).
SHT_HD GemmDesc synthesis_gemm(const TableLayout& L) {
  return {true, L.Rp, L.rhs(), L.Lp, L.Lp, L.Lp, L.Rp, static_cast<long long>(L.mat()),
          static_cast<long long>(L.Lp) * L.rhs(), static_cast<long long>(L.Rp) * L.rhs(), L.batch()};
}
/// Adjoint: alm side of table t = table x ring side of t (per (m, pi)).
SHT_HD GemmDesc adjoint_gemm(const TableLayout& L) {
  return {false, L.Lp, L.rhs(), L.Rp, L.Lp, L.Rp, L.Lp, static_cast<long long>(L.mat()),
          static_cast<long long>(L.Rp) * L.rhs(), static_cast<long long>(L.Lp) * L.rhs(), L.batch()};
}

/// Element t of the packed alm side (t < alm_side_doubles()): the alm of column c, component k,
/// degree l = m + pi + 2 i, re or im (Im a_l0 and degrees below l0 give 0). alm: [c ncomp + k][nalm].
SHT_HD void pack_alm_element(const TableLayout& L, const cplx* alm, double* side, std::size_t t) {
  const std::size_t per_mat = static_cast<std::size_t>(L.Lp) * L.rhs();
  const int b = static_cast<int>(t / per_mat);
  const std::size_t r = t % per_mat;
  const int j = static_cast<int>(r / L.Lp), i = static_cast<int>(r % L.Lp);
  const int m = b >> 1, pi = b & 1, l = m + pi + 2 * i;
  double v = 0.0;
  if (l <= L.lmax && l >= l0_of(L.spin, m)) {
    const int c = j / L.per_col(), q = j % L.per_col();
    const int k = q >> 1, reim = q & 1;
    const int ncomp = L.spin == 0 ? 1 : 2;
    const cplx a = alm[static_cast<std::size_t>(c * ncomp + k) * L.nalm() + L.alm_index(l, m)];
    v = reim ? (m == 0 ? 0.0 : a.im) : a.re;
  }
  side[t] = v;
}

/// Element t of the ring side(s) of the adjoint (t < batch Rp ncols: one (m, pi, p, c)):
/// spin 0 F_N +- F_S (+ for pi = 0); spin 2 (Q, U) combinations for W (side0: N + (-1)^pi S) and
/// for X (side1: N - (-1)^pi S). Zero where m is above the pair's mlim (F is not written there;
/// rings without an observed pixel have F = 0). F: [c ncomp + k][4 nside - 1][lmax + 1].
SHT_HD void pack_ring_element(const TableLayout& L, const cplx* F, const int* mlim, double* side0,
                              double* side1, std::size_t t) {
  const std::size_t per_b = static_cast<std::size_t>(L.Rp) * L.ncols;
  const int b = static_cast<int>(t / per_b);
  const std::size_t r = t % per_b;
  const int c = static_cast<int>(r / L.Rp), p = static_cast<int>(r % L.Rp);
  const int m = b >> 1, pi = b & 1;
  const int R = 4 * L.nside - 1, s = R - 1 - p;
  const bool on = m <= mlim[p];
  const std::size_t fstride = static_cast<std::size_t>(R) * (L.lmax + 1);
  const std::size_t base = static_cast<std::size_t>(b) * L.Rp * L.rhs() + p;
  auto at = [&](int col) -> std::size_t { return base + static_cast<std::size_t>(col) * L.Rp; };
  auto Fget = [&](int cc, int ring) -> cplx {
    return F[static_cast<std::size_t>(cc) * fstride + static_cast<std::size_t>(ring) * (L.lmax + 1) + m];
  };
  const double sg = pi == 0 ? 1.0 : -1.0;
  if (L.spin == 0) {
    cplx f = {0.0, 0.0};
    if (on) {
      const cplx n = Fget(c, p), so = s != p ? Fget(c, s) : cplx{0.0, 0.0};
      f = {n.re + sg * so.re, n.im + sg * so.im};
    }
    side0[at(2 * c)] = f.re;
    side0[at(2 * c + 1)] = f.im;
    return;
  }
  cplx qn = {0.0, 0.0}, qs = {0.0, 0.0}, un = {0.0, 0.0}, us = {0.0, 0.0};
  if (on) {
    qn = Fget(2 * c, p);
    un = Fget(2 * c + 1, p);
    if (s != p) {
      qs = Fget(2 * c, s);
      us = Fget(2 * c + 1, s);
    }
  }
  // W: N + (-1)^pi S; X: N - (-1)^pi S.
  side0[at(4 * c)] = qn.re + sg * qs.re;
  side0[at(4 * c + 1)] = qn.im + sg * qs.im;
  side0[at(4 * c + 2)] = un.re + sg * us.re;
  side0[at(4 * c + 3)] = un.im + sg * us.im;
  side1[at(4 * c)] = qn.re - sg * qs.re;
  side1[at(4 * c + 1)] = qn.im - sg * qs.im;
  side1[at(4 * c + 2)] = un.re - sg * us.re;
  side1[at(4 * c + 3)] = un.im - sg * us.im;
}

/// Element t of the synthesis output (t < (lmax + 1) Rp ncols: one (m, p, c)): F of the pair's
/// north and south rings from the ring sides of both parities (spin 2: side0 from W, side1 from
/// X). Entries with m above the pair's mlim are not written (the FFT stage does not read them).
SHT_HD void unpack_ring_element(const TableLayout& L, const double* side0, const double* side1,
                                const int* mlim, cplx* F, std::size_t t) {
  const std::size_t per_m = static_cast<std::size_t>(L.Rp) * L.ncols;
  const int m = static_cast<int>(t / per_m);
  const std::size_t r = t % per_m;
  const int c = static_cast<int>(r / L.Rp), p = static_cast<int>(r % L.Rp);
  if (m > mlim[p]) return;
  const int R = 4 * L.nside - 1, s = R - 1 - p;
  const std::size_t fstride = static_cast<std::size_t>(R) * (L.lmax + 1);
  auto get = [&](const double* side, int pi, int col) -> double {
    return side[static_cast<std::size_t>(2 * m + pi) * L.Rp * L.rhs() + static_cast<std::size_t>(col) * L.Rp + p];
  };
  auto Fat = [&](int cc, int ring) -> cplx& {
    return F[static_cast<std::size_t>(cc) * fstride + static_cast<std::size_t>(ring) * (L.lmax + 1) + m];
  };
  if (L.spin == 0) {
    const cplx h0 = {get(side0, 0, 2 * c), get(side0, 0, 2 * c + 1)};
    const cplx h1 = {get(side0, 1, 2 * c), get(side0, 1, 2 * c + 1)};
    Fat(c, p) = {h0.re + h1.re, h0.im + h1.im};
    if (s != p) Fat(c, s) = {h0.re - h1.re, h0.im - h1.im};
    return;
  }
  // Sums of parity pi: P = sum aE W, S = sum aB W (side0), V = sum aE X, Rr = sum aB X (side1).
  cplx P[2], S[2], V[2], Rr[2];
  for (int pi = 0; pi < 2; ++pi) {
    P[pi] = {get(side0, pi, 4 * c), get(side0, pi, 4 * c + 1)};
    S[pi] = {get(side0, pi, 4 * c + 2), get(side0, pi, 4 * c + 3)};
    V[pi] = {get(side1, pi, 4 * c), get(side1, pi, 4 * c + 1)};
    Rr[pi] = {get(side1, pi, 4 * c + 2), get(side1, pi, 4 * c + 3)};
  }
  // Q_N = -(P0 + P1) - i (R0 + R1), Q_S = -(P0 - P1) + i (R0 - R1);
  // U_N = -(S0 + S1) + i (V0 + V1), U_S = -(S0 - S1) - i (V0 - V1).
  const cplx Pp = {P[0].re + P[1].re, P[0].im + P[1].im}, Pm = {P[0].re - P[1].re, P[0].im - P[1].im};
  const cplx Rp_ = {Rr[0].re + Rr[1].re, Rr[0].im + Rr[1].im}, Rm = {Rr[0].re - Rr[1].re, Rr[0].im - Rr[1].im};
  const cplx Sp = {S[0].re + S[1].re, S[0].im + S[1].im}, Sm = {S[0].re - S[1].re, S[0].im - S[1].im};
  const cplx Vp = {V[0].re + V[1].re, V[0].im + V[1].im}, Vm = {V[0].re - V[1].re, V[0].im - V[1].im};
  Fat(2 * c, p) = {-Pp.re + Rp_.im, -Pp.im - Rp_.re};
  Fat(2 * c + 1, p) = {-Sp.re - Vp.im, -Sp.im + Vp.re};
  if (s != p) {
    Fat(2 * c, s) = {-Pm.re - Rm.im, -Pm.im + Rm.re};
    Fat(2 * c + 1, s) = {-Sm.re + Vm.im, -Sm.im - Vm.re};
  }
}

/// Element t of the adjoint output (t < batch Lp ncols: one (m, pi, i, c)): the alm of degree
/// l = m + pi + 2 i from the alm sides (spin 2: side0 from W, side1 from X):
/// spin 2 aE = -W.Q - i X.U, aB = i X.Q - W.U (Q, U the combinations packed for each table).
/// Degrees below l0 get 0, Im a_l0 is 0; degrees above lmax are skipped.
SHT_HD void unpack_alm_element(const TableLayout& L, const double* side0, const double* side1,
                               cplx* alm, std::size_t t) {
  const std::size_t per_b = static_cast<std::size_t>(L.Lp) * L.ncols;
  const int b = static_cast<int>(t / per_b);
  const std::size_t r = t % per_b;
  const int c = static_cast<int>(r / L.Lp), i = static_cast<int>(r % L.Lp);
  const int m = b >> 1, pi = b & 1, l = m + pi + 2 * i;
  if (l > L.lmax) return;
  const bool on = l >= l0_of(L.spin, m);
  auto get = [&](const double* side, int col) -> double {
    return side[static_cast<std::size_t>(b) * L.Lp * L.rhs() + static_cast<std::size_t>(col) * L.Lp + i];
  };
  const std::size_t idx = L.alm_index(l, m);
  if (L.spin == 0) {
    cplx a = on ? cplx{get(side0, 2 * c), get(side0, 2 * c + 1)} : cplx{0.0, 0.0};
    if (m == 0) a.im = 0.0;
    alm[static_cast<std::size_t>(c) * L.nalm() + idx] = a;
    return;
  }
  cplx e = {0.0, 0.0}, bb = {0.0, 0.0};
  if (on) {
    const cplx wq = {get(side0, 4 * c), get(side0, 4 * c + 1)}, wu = {get(side0, 4 * c + 2), get(side0, 4 * c + 3)};
    const cplx xq = {get(side1, 4 * c), get(side1, 4 * c + 1)}, xu = {get(side1, 4 * c + 2), get(side1, 4 * c + 3)};
    e = {-wq.re + xu.im, -wq.im - xu.re};
    bb = {-xq.im - wu.re, xq.re - wu.im};
  }
  if (m == 0) e.im = bb.im = 0.0;
  alm[static_cast<std::size_t>(2 * c) * L.nalm() + idx] = e;
  alm[static_cast<std::size_t>(2 * c + 1) * L.nalm() + idx] = bb;
}

/// Fills the tables' column p of mode m (host; the caller zero-fills first): spin 0 lambda_lm,
/// spin 2 W and X at the pair's north ring for l0 <= l <= lmax, nothing where m > mlim_p. The
/// normalised recursion of fill_mu_table from the scaled start values, a value counted once its
/// scale is 0 (as the kernels do). A, B, N: fill_mu_table(spin, lmax, m), indexed by degree.
inline void fill_table_column(const TableLayout& L, int m, int p, const RingPair& g, int mlim_p,
                              double nu_m, const double* A, const double* B, const double* N,
                              double* tables) {
  const int l0 = l0_of(L.spin, m);
  if (m > mlim_p || l0 > L.lmax) return;
  auto put = [&](int t, int l, double v) {
    const int pi = (l - m) & 1, i = (l - m) >> 1;
    tables[L.table_offset(t, m, pi) + static_cast<std::size_t>(p) * L.Lp + i] = v;
  };
  if (L.spin == 0) {
    double v1, v0 = 0.0;
    int e;
    start_spin0(m, nu_m, g, v1, e);
    for (int l = l0; l <= L.lmax; ++l) {
      if (l > l0) {
        const double vn = A[l] * g.z * v1 - v0;
        v0 = v1;
        v1 = vn;
        if (e < 0 && std::fabs(v1) > kBig) {
          v0 *= kDown;
          v1 *= kDown;
          ++e;
        }
      }
      if (e == 0) put(0, l, N[l] * v1);
    }
    return;
  }
  double v1, w1, v0 = 0.0, w0 = 0.0;
  int e;
  start_spin2(m, nu_m, g, v1, w1, e);
  for (int l = l0; l <= L.lmax; ++l) {
    if (l > l0) {
      const double vn = (A[l] * g.z - B[l]) * v1 - v0;
      const double wn = (A[l] * g.z + B[l]) * w1 - w0;
      v0 = v1;
      v1 = vn;
      w0 = w1;
      w1 = wn;
      if (e < 0 && std::fmax(std::fabs(v1), std::fabs(w1)) > kBig) {
        v0 *= kDown;
        v1 *= kDown;
        w0 *= kDown;
        w1 *= kDown;
        ++e;
      }
    }
    if (e == 0) {
      put(0, l, 0.5 * N[l] * (v1 + w1));  // W
      put(1, l, 0.5 * N[l] * (w1 - v1));  // X
    }
  }
}

/// All tables of a plan (host): zero-filled, then fill_table_column for every mode and ring pair,
/// modes dealt round-robin to the host's threads (each writes its own modes' matrices).
inline std::vector<double> make_tables(const TableLayout& L, const std::vector<int>& mlim) {
  std::vector<double> tab(L.table_doubles(), 0.0);
  std::vector<double> nu(L.lmax + 1, 1.0);
  for (int m = 1; m <= L.lmax; ++m) nu[m] = nu[m - 1] * std::sqrt((2.0 * m - 1.0) / (2.0 * m));
  auto work = [&](int first, int step) {
    std::vector<double> A(L.lmax + 1), B(L.lmax + 1), N(L.lmax + 1);
    for (int m = first; m <= L.lmax; m += step) {
      fill_mu_table(L.spin, L.lmax, m, A.data(), B.data(), N.data());
      for (int p = 0; p < L.Rp; ++p) {
        const RingInfo gi = ring_info(L.nside, p);
        const RingPair g{gi.z, gi.omz, 1.0 + gi.z, gi.sth};
        fill_table_column(L, m, p, g, mlim[static_cast<std::size_t>(p)], nu[m], A.data(), B.data(),
                          N.data(), tab.data());
      }
    }
  };
  const int nthreads = static_cast<int>(std::max(1u, std::min(std::thread::hardware_concurrency(), 32u)));
  std::vector<std::thread> pool;
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(work, t, nthreads);
  work(0, nthreads);
  for (auto& th : pool) th.join();
  return tab;
}

}  // namespace almagest::kernels::sht
