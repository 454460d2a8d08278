// CPU twin of the CUDA adjoint's polar-pair DFT (kernels/src/sht_polar_dft.cuh): the split by
// four in frequency, the quarter Bluestein convolutions and the self-sorting mixed-radix FFT,
// run over the kernel's own butterflies (each pass all reads, then all writes) with the same
// tables, against a direct DFT of the pair for ring sizes that take every pass plan (radix 3 /
// 8 / 4 / 2 combinations, the smallest and the largest lengths). Runs without a GPU.
#include <QtTest>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "../../kernels/src/sht_polar_dft.cuh"

namespace km = almagest::kernels::sht;
namespace pd = almagest::kernels::sht::pdft;
using C = std::complex<double>;
using km::cplx;

namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

std::vector<cplx> twiddles() {
  std::vector<cplx> tw(pd::kTwiddles);
  for (int k = 0; k < pd::kTwiddles; ++k)
    tw[k] = {std::cos(2 * kPi * k / pd::kTwiddles), -std::sin(2 * kPi * k / pd::kTwiddles)};
  return tw;
}

/// e^{i pi t^2 / n}, the argument reduced in integers.
cplx chirp(long long t, int n) {
  const long long a = (t * t) % (2LL * n);
  return {std::cos(kPi * a / n), std::sin(kPi * a / n)};
}

/// The block's twiddle table of length L (the kernel's tws).
std::vector<cplx> block_twiddles(int L, const std::vector<cplx>& tw) {
  std::vector<cplx> tws(L / 4);
  for (int m = 0; m < L / 4; ++m) tws[m] = tw[static_cast<std::size_t>(m) * (pd::kTwiddles / L)];
  return tws;
}

/// One Stockham pass of radix R over the whole buffer, as the kernel runs it: every
/// butterfly's reads, then every write.
template <int R>
void run_pass(std::vector<cplx>& buf, int L, int lg, int sign, const std::vector<cplx>& tws) {
  const int nb = L / R;
  std::vector<std::array<cplx, R>> v(nb);
  for (int j = 0; j < nb; ++j) {
    cplx x[R];
    for (int r = 0; r < R; ++r) x[r] = buf[j + r * nb];
    pd::butterfly<R>(x, j, lg, sign, tws.data(), L);
    for (int r = 0; r < R; ++r) v[j][r] = x[r];
  }
  for (int j = 0; j < nb; ++j)
    for (int r = 0; r < R; ++r) buf[pd::out_index(j, lg, R, r)] = v[j][r];
}

void fft(std::vector<cplx>& buf, int L, int sign, const std::vector<cplx>& tw) {
  const auto tws = block_twiddles(L, tw);
  int lg = 0;
  for (int p = 0; p < pd::pass_count(L); ++p) {
    const int R = pd::pass_radix(L, p);
    if (R == 2) run_pass<2>(buf, L, lg, sign, tws);
    if (R == 3) run_pass<3>(buf, L, lg, sign, tws);
    if (R == 4) run_pass<4>(buf, L, lg, sign, tws);
    if (R == 8) run_pass<8>(buf, L, lg, sign, tws);
    if (R != 3) lg += R == 8 ? 3 : R == 4 ? 2 : 1;
  }
}

/// The table entry of quarter size n: FFT of the wrapped chirp h, / L.
std::vector<cplx> chirp_spectrum(int n, const std::vector<cplx>& tw) {
  const int L = pd::quarter_length(n);
  std::vector<cplx> h(L, cplx{0, 0});
  for (int j = 0; j < n; ++j) {
    h[j] = chirp(j, n);
    if (j > 0) h[L - j] = chirp(j, n);
  }
  fft(h, L, -1, tw);
  for (auto& x : h) x = {x.re / L, x.im / L};
  return h;
}

/// The pair's row Y(k), k < 4 n, through the quarters.
std::vector<C> twin_row(int n, const std::vector<double>& mn, const std::vector<double>& ms,
                        const std::vector<cplx>& tw) {
  const int N = 4 * n, L = pd::quarter_length(n);
  const auto H = chirp_spectrum(n, tw);
  std::vector<C> Y(N);
  for (int rho = 0; rho < 4; ++rho) {
    std::vector<cplx> buf(L, cplx{0, 0});
    for (int t = 0; t < n; ++t) {
      const cplx w = pd::quarter_twiddle(n, rho, t);
      buf[t] = pd::quarter_input(mn.data(), ms.data(), n, rho, t, w, chirp(t, n));
    }
    fft(buf, L, -1, tw);
    for (int i = 0; i < L; ++i) buf[i] = km::cmul(buf[i], H[i]);
    fft(buf, L, 1, tw);
    for (int s = 0; s < n; ++s) {
      const cplx d = pd::mulc(buf[s], chirp(s, n));
      Y[4 * s + rho] = C(d.re, d.im);
    }
  }
  return Y;
}

}  // namespace

class TestShtPolarDft : public QObject {
  Q_OBJECT
private slots:
  void pass_plans_multiply_to_the_length();
  void fft_matches_direct_dft_data();
  void fft_matches_direct_dft();
  void pair_row_matches_direct_dft_data();
  void pair_row_matches_direct_dft();
};

void TestShtPolarDft::pass_plans_multiply_to_the_length() {
  for (int n = 1; n <= pd::kMaxQuarter; ++n) {
    const int L = pd::quarter_length(n);
    QVERIFY2(L >= 2 * n - 1 && L <= pd::kMaxLength && pd::kTwiddles % L == 0,
             qPrintable(QString("n %1 L %2").arg(n).arg(L)));
    QVERIFY(L / 2 < 2 * n - 1 || L == 8 || L % 3 == 0);  // smallest of its kind
    int prod = 1;
    for (int p = 0; p < pd::pass_count(L); ++p) {
      const int R = pd::pass_radix(L, p);
      QVERIFY(R == 2 || R == 3 || R == 4 || R == 8);
      // 8s, then a 4 or a 2, then a 3
      QVERIFY(R == 8 || (R == 3 && p == pd::pass_count(L) - 1) ||
              (R != 3 && p == pd::pass_count(L) - 1 - (L % 3 == 0 ? 1 : 0)));
      prod *= R;
    }
    QCOMPARE(prod, L);
  }
}

void TestShtPolarDft::fft_matches_direct_dft_data() {
  QTest::addColumn<int>("L");
  for (int L : {8, 12, 16, 24, 32, 48, 64, 96, 128, 384, 1024, 2048, 3072, 4096})
    QTest::newRow(qPrintable(QString::number(L))) << L;
}

void TestShtPolarDft::fft_matches_direct_dft() {
  QFETCH(int, L);
  const auto tw = twiddles();
  std::mt19937_64 rng(1000 + L);
  std::normal_distribution<double> g;
  std::vector<cplx> x(L);
  for (auto& v : x) v = {g(rng), g(rng)};
  for (int sign : {-1, 1}) {
    auto y = x;
    fft(y, L, sign, tw);
    double err = 0, ref = 0;
    for (int k = 0; k < L; ++k) {
      C d = 0;
      for (int j = 0; j < L; ++j)
        d += C(x[j].re, x[j].im) * std::polar(1.0, sign * 2 * kPi * double((1LL * j * k) % L) / L);
      err = std::max(err, std::abs(d - C(y[k].re, y[k].im)));
      ref = std::max(ref, std::abs(d));
    }
    QVERIFY2(err <= 1e-13 * ref, qPrintable(QString("L %1 sign %2 err %3 ref %4")
                                               .arg(L).arg(sign).arg(err).arg(ref)));
  }
}

void TestShtPolarDft::pair_row_matches_direct_dft_data() {
  QTest::addColumn<int>("n");
  // quarter lengths 8 (n = 1..4), 12, 16, 24, ..., 3072 (n = 1025) and 4096 (n = 2047, 2048)
  for (int n : {1, 2, 3, 4, 5, 7, 12, 13, 25, 63, 97, 341, 512, 769, 1025, 1536, 2047, 2048})
    QTest::newRow(qPrintable(QString::number(n))) << n;
}

void TestShtPolarDft::pair_row_matches_direct_dft() {
  QFETCH(int, n);
  const auto tw = twiddles();
  const int N = 4 * n;
  std::mt19937_64 rng(77 + n);
  std::normal_distribution<double> g;
  std::vector<double> mn(N), ms(N);
  for (int j = 0; j < N; ++j) {
    mn[j] = g(rng);
    ms[j] = g(rng);
  }
  std::vector<C> ref(N);
  double scale = 0;
  for (int k = 0; k < N; ++k) {
    C d = 0;
    for (int j = 0; j < N; ++j)
      d += C(mn[j], ms[j]) * std::polar(1.0, -2 * kPi * double((1LL * j * k) % N) / N);
    ref[k] = d;
    scale = std::max(scale, std::abs(d));
  }
  const auto Y = twin_row(n, mn, ms, tw);
  double err = 0;
  for (int k = 0; k < N; ++k) err = std::max(err, std::abs(Y[k] - ref[k]));
  QVERIFY2(err <= 1e-13 * scale,
           qPrintable(QString("n %1 err %2 scale %3").arg(n).arg(err).arg(scale)));
}

QTEST_APPLESS_MAIN(TestShtPolarDft)
#include "test_sht_polar_dft.moc"
