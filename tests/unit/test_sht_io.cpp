// HEALPix FITS and HDF5 I/O: round trips, a healpy-layout file built here from the format
// description with cfitsio, ordering conversion, partial-sky files and header errors.
#include <QtTest>
#include <fitsio.h>

#include <cmath>
#include <random>

#include "almagest/core/error.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "fits_tables.hpp"

using namespace almagest;
using namespace almagest::sht;

namespace {
QString tmp_dir() {
  const QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
}

/// Writes a map FITS file the way healpy 1.16 write_map does (float32 'E' or float64 'D'
/// columns, `per_row` values per row), with optional keyword overrides to corrupt the header.
void write_healpy_style(const std::string& path, int nside, const std::vector<std::vector<double>>& cols,
                        const std::vector<std::string>& names, const char* ordering, int per_row,
                        bool write_nside = true, long long nside_key = -1) {
  fitsfile* f = nullptr;
  int st = 0;
  fits_create_file(&f, ("!" + path).c_str(), &st);
  fits_create_img(f, 8, 0, nullptr, &st);
  const long long npix = 12LL * nside * nside;
  const long long nrows = npix / per_row;
  std::vector<std::string> tform(cols.size(), std::to_string(per_row) + "D"), tt = names;
  std::vector<char*> ttp, tfp, tup;
  char empty[] = "";
  for (std::size_t i = 0; i < cols.size(); ++i) {
    ttp.push_back(tt[i].data());
    tfp.push_back(tform[i].data());
    tup.push_back(empty);
  }
  char ext[] = "xtension";
  fits_create_tbl(f, BINARY_TBL, nrows, static_cast<int>(cols.size()), ttp.data(), tfp.data(), tup.data(), ext, &st);
  char pixtype[] = "HEALPIX", indx[] = "IMPLICIT", obj[] = "FULLSKY", coord[] = "G";
  fits_update_key(f, TSTRING, "PIXTYPE", pixtype, nullptr, &st);
  fits_update_key(f, TSTRING, "ORDERING", const_cast<char*>(ordering), nullptr, &st);
  fits_update_key(f, TSTRING, "COORDSYS", coord, nullptr, &st);
  fits_update_key(f, TSTRING, "EXTNAME", ext, nullptr, &st);
  if (write_nside) {
    long long ns = nside_key > 0 ? nside_key : nside;
    fits_update_key(f, TLONGLONG, "NSIDE", &ns, nullptr, &st);
  }
  long long first = 0, last = npix - 1;
  fits_update_key(f, TLONGLONG, "FIRSTPIX", &first, nullptr, &st);
  fits_update_key(f, TLONGLONG, "LASTPIX", &last, nullptr, &st);
  fits_update_key(f, TSTRING, "INDXSCHM", indx, nullptr, &st);
  fits_update_key(f, TSTRING, "OBJECT", obj, nullptr, &st);
  for (std::size_t i = 0; i < cols.size(); ++i)
    fits_write_col(f, TDOUBLE, static_cast<int>(i + 1), 1, 1, npix, const_cast<double*>(cols[i].data()), &st);
  fits_close_file(f, &st);
  QCOMPARE(st, 0);
}

/// A HEALPix ring weight file as the HEALPix / healpy data hold them: columns TEMPERATURE, Q- and
/// U-POLARISATION WEIGHTS (float32) of w - 1 for rings 1..2 nside, `per_row` values per row.
void write_ring_weight_file(const std::string& path, const std::vector<double>& w_minus_1, int per_row,
                            long long nside_key) {
  QCOMPARE(testing::write_fits_table(path,
                                     {"TEMPERATURE WEIGHTS", "Q-POLARISATION WEIGHTS", "U-POLARISATION WEIGHTS"},
                                     w_minus_1, 'E', per_row, nside_key),
           0);
}

/// A HEALPix full-weight file as the healpy data hold it: the column COMPRESSED PIXEL WEIGHTS (w - 1
/// per pixel class, float64) and NSIDE.
void write_pixel_weight_file(const std::string& path, const std::vector<double>& w_minus_1,
                             long long nside_key, const char* column = "COMPRESSED PIXEL WEIGHTS") {
  QCOMPARE(testing::write_fits_table(path, {column}, w_minus_1, 'D', 1, nside_key), 0);
}

/// Runs fn, which must throw IoError with `field` in its message.
template <class Fn>
void expect_io(Fn&& fn, const char* field) {
  try {
    fn();
    QFAIL("expected IoError");
  } catch (const IoError& e) {
    QVERIFY2(std::string(e.what()).find(field) != std::string::npos, e.what());
  }
}

std::vector<double> ramp(std::size_t n, double scale) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37 * i) + 1e-3 * i;
  return v;
}
}  // namespace

class TestShtIo : public QObject {
  Q_OBJECT
private slots:
  void pixel_weight_files() {
    // nside 8: ((3 * 8 + 1) * 9) / 4 = 56 pixel classes, distinct values.
    const int nside = 8;
    const std::size_t nclass = 56;
    std::vector<double> wm1(nclass);
    for (std::size_t i = 0; i < nclass; ++i) wm1[i] = 0.001 * static_cast<double>(i + 1) - 0.02;
    const std::string dir = tmp_dir().toStdString();
    const std::string path = dir + "/healpix_full_weights_nside_0008.fits";
    write_pixel_weight_file(path, wm1, nside);
    const auto w = read_pixel_weights(path, nside);
    QCOMPARE(w.size(), std::size_t(npix_of(nside)));
    // Every pixel carries 1 + one of the file's values, every value is used, and the weights have
    // the symmetries of the rings: a north ring of 4 q pixels repeats with period q, and its
    // mirror ring in the south has the same weights in the same order.
    std::vector<int> used(nclass, 0);
    for (double v : w) {
      bool found = false;
      for (std::size_t i = 0; i < nclass; ++i)
        if (std::fabs(v - (1.0 + wm1[i])) < 1e-15) {
          ++used[i];
          found = true;
        }
      QVERIFY(found);
    }
    for (int u : used) QVERIFY(u > 0);
    std::int64_t start = 0;
    for (int i = 1; i <= 2 * nside; ++i) {  // north rings and the equator
      const int q = std::min(i, nside), n = 4 * q;
      const std::int64_t south = npix_of(nside) - start - n;
      for (int j = 0; j < n; ++j) {
        QCOMPARE(w[start + j], w[start + (j + q) % n]);
        QCOMPARE(w[south + j], w[start + j]);
      }
      start += n;
    }
    expect_io([&] { read_pixel_weights(path, 16); }, "NSIDE");
    const std::string no_key = dir + "/pw_no_nside.fits";
    write_pixel_weight_file(no_key, wm1, -1);
    expect_io([&] { read_pixel_weights(no_key, nside); }, "NSIDE");
    const std::string wrong_col = dir + "/pw_wrong_column.fits";
    write_pixel_weight_file(wrong_col, wm1, nside, "TEMPERATURE WEIGHTS");
    expect_io([&] { read_pixel_weights(wrong_col, nside); }, "TTYPE1");
    const std::string short_file = dir + "/pw_short.fits";
    write_pixel_weight_file(short_file, std::vector<double>(nclass - 1, 0.0), nside);
    expect_io([&] { read_pixel_weights(short_file, nside); }, "COMPRESSED PIXEL WEIGHTS");
    auto bad = wm1;
    bad[3] = std::nan("");
    const std::string nan_file = dir + "/pw_nan.fits";
    write_pixel_weight_file(nan_file, bad, nside);
    expect_io([&] { read_pixel_weights(nan_file, nside); }, "value 4");
  }

  void ring_weight_files() {
    const int nside = 16;
    std::vector<double> wm1(2 * nside);
    for (int r = 0; r < 2 * nside; ++r) wm1[r] = 0.01 * std::sin(0.7 * r) - 0.002 * r;
    const std::string dir = tmp_dir().toStdString();
    // One value per row (with NSIDE) and vector rows of 8 (without): both read as w = 1 + stored.
    for (int per_row : {1, 8}) {
      const std::string path = dir + "/weight_ring_n00016_" + std::to_string(per_row) + ".fits";
      write_ring_weight_file(path, wm1, per_row, per_row == 1 ? nside : -1);
      const auto w = read_ring_weights(path, nside);
      QCOMPARE(w.size(), std::size_t(2 * nside));
      for (int r = 0; r < 2 * nside; ++r)
        QVERIFY(std::fabs(w[r] - (1.0 + static_cast<float>(wm1[r]))) < 1e-15);
    }
    // A file for another NSIDE: by its keyword, and by its length.
    const std::string other = dir + "/weight_ring_n00008.fits";
    write_ring_weight_file(other, std::vector<double>(16, 0.0), 1, 8);
    expect_io([&] { read_ring_weights(other, nside); }, "NSIDE");
    const std::string short_file = dir + "/weight_ring_short.fits";
    write_ring_weight_file(short_file, std::vector<double>(16, 0.0), 1, -1);
    expect_io([&] { read_ring_weights(short_file, nside); }, "TEMPERATURE WEIGHTS");
    // A NaN weight, a missing file, a file without a table.
    auto bad = wm1;
    bad[5] = std::nan("");
    const std::string nan_file = dir + "/weight_ring_nan.fits";
    write_ring_weight_file(nan_file, bad, 1, nside);
    expect_io([&] { read_ring_weights(nan_file, nside); }, "ring 6");
    expect_io([&] { read_ring_weights(dir + "/no_such_weight_file.fits", nside); }, "no_such_weight_file");
    const std::string img = dir + "/weight_ring_image.fits";
    {
      fitsfile* f = nullptr;
      int st = 0;
      fits_create_file(&f, ("!" + img).c_str(), &st);
      fits_create_img(f, 8, 0, nullptr, &st);
      fits_close_file(f, &st);
    }
    expect_io([&] { read_ring_weights(img, nside); }, "HDU 1");
  }

  void map_round_trip() {
    const int nside = 8;
    HealpixMap m;
    m.nside = nside;
    m.names = {"I_STOKES", "Q_STOKES", "U_STOKES"};
    m.units = {"K", "K", "K"};
    m.coordsys = "G";
    for (int c = 0; c < 3; ++c) m.columns.push_back(ramp(npix_of(nside), c + 1.0));
    m.columns[1][17] = kUnseen;
    const std::string path = (tmp_dir() + "/sht_map_rt.fits").toStdString();
    write_healpix_map(path, m);
    const auto r = read_healpix_map(path);
    QCOMPARE(r.nside, nside);
    QVERIFY(r.ordering == Ordering::Ring);
    QCOMPARE(r.names, m.names);
    QCOMPARE(r.units[0], std::string("K"));
    QCOMPARE(r.coordsys, std::string("G"));
    for (int c = 0; c < 3; ++c) QVERIFY(r.columns[c] == m.columns[c]);
    QCOMPARE(r.columns[1][17], kUnseen);
  }

  void nested_round_trip_and_conversion() {
    const int nside = 4;
    std::vector<double> ring = ramp(npix_of(nside), 2.0);
    const auto nest = ring_to_nest(ring, nside);
    QVERIFY(nest_to_ring(nest, nside) == ring);
    // Known correspondences (nside 4): RING 0 is the north corner of face 0 (NESTED
    // nside^2 - 1 = 15); NESTED 0 is the south corner of face 0: ring 2 nside - 1 = 7, a belt
    // ring starting at 2 nside (nside - 1) + 3 * 4 nside = 72, shifted, 4th pixel -> 74.
    QCOMPARE(ring2nest(nside, 0), std::int64_t(15));
    QCOMPARE(nest2ring(nside, 15), std::int64_t(0));
    QCOMPARE(nest2ring(nside, 0), std::int64_t(74));
    HealpixMap m;
    m.nside = nside;
    m.ordering = Ordering::Nested;
    m.columns = {nest};
    const std::string path = (tmp_dir() + "/sht_map_nest.fits").toStdString();
    write_healpix_map(path, m);
    const auto raw = read_healpix_map(path, false);
    QVERIFY(raw.ordering == Ordering::Nested);
    QVERIFY(raw.columns[0] == nest);
    const auto conv = read_healpix_map(path, true);
    QVERIFY(conv.ordering == Ordering::Ring);
    QVERIFY(conv.columns[0] == ring);
  }

  void healpy_layout_file() {
    // As healpy writes NESTED maps: 1024 values per row; RING maps: one value per row.
    const int nside = 16;
    const auto t = ramp(npix_of(nside), 1.5), q = ramp(npix_of(nside), -0.5);
    const std::string p1 = (tmp_dir() + "/sht_healpy_nest.fits").toStdString();
    write_healpy_style(p1, nside, {ring_to_nest(t, nside), ring_to_nest(q, nside)},
                       {"TEMPERATURE", "Q_POLARISATION"}, "NESTED", 1024);
    const auto r1 = read_healpix_map(p1);
    QCOMPARE(r1.nside, nside);
    QCOMPARE(r1.names[0], std::string("TEMPERATURE"));
    QVERIFY(r1.columns[0] == t);
    QVERIFY(r1.columns[1] == q);
    const std::string p2 = (tmp_dir() + "/sht_healpy_ring.fits").toStdString();
    write_healpy_style(p2, nside, {t}, {"TEMPERATURE"}, "RING", 1);
    QVERIFY(read_healpix_map(p2).columns[0] == t);
  }

  void invalid_headers() {
    const int nside = 4;
    const auto t = ramp(npix_of(nside), 1.0);
    const std::string p = (tmp_dir() + "/sht_bad.fits").toStdString();
    write_healpy_style(p, nside, {t}, {"TEMPERATURE"}, "RING", 1, false);
    try {
      read_healpix_map(p);
      QFAIL("missing NSIDE accepted");
    } catch (const IoError& e) {
      QCOMPARE(e.field(), std::string("NSIDE"));
      QCOMPARE(e.file(), p);
    }
    write_healpy_style(p, nside, {t}, {"TEMPERATURE"}, "SPIRAL", 1);
    try {
      read_healpix_map(p);
      QFAIL("unknown ORDERING accepted");
    } catch (const IoError& e) {
      QCOMPARE(e.field(), std::string("ORDERING"));
    }
    write_healpy_style(p, nside, {t}, {"TEMPERATURE"}, "RING", 1, true, 8);  // npix != 12 NSIDE^2
    try {
      read_healpix_map(p);
      QFAIL("wrong npix accepted");
    } catch (const IoError& e) {
      QCOMPARE(e.field(), std::string("NSIDE"));
    }
  }

  void partial_sky() {
    const int nside = 8;
    HealpixMap m;
    m.nside = nside;
    m.ordering = Ordering::Nested;
    m.pixels = {3, 100, 101, 500, 767};
    m.columns = {{1.0, 2.0, 3.0, 4.0, 5.0}};
    const std::string path = (tmp_dir() + "/sht_partial.fits").toStdString();
    write_healpix_map(path, m);
    const auto raw = read_healpix_map(path, false);
    QVERIFY(raw.partial());
    QVERIFY(raw.pixels == m.pixels);
    QVERIFY(raw.columns[0] == m.columns[0]);
    const auto ring = read_healpix_map(path, true);
    QCOMPARE(ring.pixels.size(), std::size_t(5));
    for (std::size_t i = 0; i < 5; ++i) {
      if (i) QVERIFY(ring.pixels[i] > ring.pixels[i - 1]);
      // Each value sits at the RING index of its NESTED pixel.
      const auto it = std::find(m.pixels.begin(), m.pixels.end(), ring2nest(nside, ring.pixels[i]));
      QVERIFY(it != m.pixels.end());
      QCOMPARE(ring.columns[0][i], m.columns[0][it - m.pixels.begin()]);
    }
    const auto full = to_full_sky(raw);
    QCOMPARE(full.columns[0].size(), std::size_t(npix_of(nside)));
    QCOMPARE(full.columns[0][0], kUnseen);
    QCOMPARE(full.columns[0][100], 2.0);
  }

  void alm_round_trip_and_healpy_index() {
    const int lmax = 12;
    std::mt19937_64 rng(1);
    std::normal_distribution<double> g;
    std::vector<std::vector<std::complex<double>>> sets(3, std::vector<std::complex<double>>(alm_size(lmax)));
    for (auto& s : sets)
      for (auto& a : s) a = {g(rng), g(rng)};
    const std::string path = (tmp_dir() + "/sht_alm.fits").toStdString();
    write_alm(path, sets, lmax);
    for (int h = 1; h <= 3; ++h) {
      int L = -1;
      const auto r = read_alm(path, h, -1, &L);
      QCOMPARE(L, lmax);
      QVERIFY(r == sets[h - 1]);
    }
    // A file built from the format description: INDEX = l^2 + l + m + 1 (int32), REAL, IMAG
    // (float64), rows in arbitrary order, some entries absent.
    fitsfile* f = nullptr;
    int st = 0;
    const std::string p2 = (tmp_dir() + "/sht_alm_healpy.fits").toStdString();
    fits_create_file(&f, ("!" + p2).c_str(), &st);
    fits_create_img(f, 8, 0, nullptr, &st);
    char c1[] = "INDEX", c2[] = "REAL", c3[] = "IMAG", f1[] = "1J", f2[] = "1D", f3[] = "1D", u[] = "";
    char* tt[] = {c1, c2, c3};
    char* tf[] = {f1, f2, f3};
    char* tu[] = {u, u, u};
    fits_create_tbl(f, BINARY_TBL, 3, 3, tt, tf, tu, nullptr, &st);
    int idx[] = {5 * 5 + 5 + 3 + 1, 0 + 0 + 0 + 1, 2 * 2 + 2 + 1 + 1};  // (5,3), (0,0), (2,1)
    double re[] = {1.5, -2.0, 0.25}, im[] = {-0.5, 0.0, 4.0};
    fits_write_col(f, TINT, 1, 1, 1, 3, idx, &st);
    fits_write_col(f, TDOUBLE, 2, 1, 1, 3, re, &st);
    fits_write_col(f, TDOUBLE, 3, 1, 1, 3, im, &st);
    fits_close_file(f, &st);
    QCOMPARE(st, 0);
    int L = -1;
    const auto a = read_alm(p2, 1, -1, &L);
    QCOMPARE(L, 5);
    QCOMPARE(a[alm_index(5, 5, 3)], std::complex<double>(1.5, -0.5));
    QCOMPARE(a[alm_index(5, 0, 0)], std::complex<double>(-2.0, 0.0));
    QCOMPARE(a[alm_index(5, 2, 1)], std::complex<double>(0.25, 4.0));
    QCOMPARE(a[alm_index(5, 3, 3)], std::complex<double>(0.0, 0.0));
  }

  void hdf5_round_trip() {
    HealpixMap m;
    m.nside = 4;
    m.names = {"TEMPERATURE"};
    m.columns = {ramp(npix_of(4), 3.0)};
    const std::string p = (tmp_dir() + "/sht_map.h5").toStdString();
    write_map_hdf5(p, m);
    const auto r = read_map_hdf5(p);
    QCOMPARE(r.nside, 4);
    QVERIFY(r.columns[0] == m.columns[0]);
    QCOMPARE(r.names, m.names);
    const int lmax = 6;
    std::vector<std::vector<std::complex<double>>> sets(2, std::vector<std::complex<double>>(alm_size(lmax)));
    for (std::size_t i = 0; i < sets[0].size(); ++i) {
      sets[0][i] = {0.5 * i, -1.0 * i};
      sets[1][i] = {std::sin(1.0 * i), 2.0};
    }
    const std::string pa = (tmp_dir() + "/sht_alm.h5").toStdString();
    write_alm_hdf5(pa, sets, lmax);
    int L = -1;
    QVERIFY(read_alm_hdf5(pa, &L) == sets);
    QCOMPARE(L, lmax);
  }
};

QTEST_GUILESS_MAIN(TestShtIo)
#include "test_sht_io.moc"
