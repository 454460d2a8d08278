// Bounded, seeded fuzzing of the engine's file readers (harness: fuzz_harness.hpp): catalogue
// text, CSV, FITS and HDF5; HEALPix map FITS and HDF5; alm FITS and HDF5; stack WorkUnit FITS
// and HDF5 cube. Each reader gets its intact file (must be read), the corrupt fixtures that broke
// it (tests/fixtures/corrupt) and ALMAGEST_FUZZ_CASES (300) mutations; every case must return or
// throw almagest::Error within the time bound and the memory bound.
#include <QtTest>

#include <complex>
#include <random>
#include <string>
#include <vector>

#include "almagest/io/catalogue.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "fits_tables.hpp"

#include "fuzz_harness.hpp"

using namespace almagest;
using almagest::fuzz::Campaign;
using almagest::fuzz::corrupt_fixture;
using almagest::fuzz::run_campaign;

namespace {

io::Catalogue small_catalogue() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  io::Catalogue c;
  for (int i = 0; i < 40; ++i) {
    c.x.push_back(u(rng));
    c.y.push_back(u(rng));
    c.z.push_back(u(rng));
    c.w.push_back(0.5 + u(rng) / 100.0);
  }
  return c;
}

void read_catalogue(const std::string& path, std::vector<std::string> columns = {},
                    std::vector<std::string> weights = {}) {
  io::CatalogueSpec s;
  s.path = path;
  s.columns = std::move(columns);
  s.weight_columns = std::move(weights);
  (void)io::load_catalogue(s);
}

sht::HealpixMap small_map() {
  sht::HealpixMap m;
  m.nside = 4;
  m.names = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  m.units = {"K", "K", "K"};
  const std::int64_t npix = sht::npix_of(m.nside);
  for (int c = 0; c < 3; ++c) {
    std::vector<double> v(static_cast<std::size_t>(npix));
    for (std::int64_t p = 0; p < npix; ++p) v[std::size_t(p)] = std::sin(0.1 * double(p) + c);
    m.columns.push_back(std::move(v));
  }
  m.coordsys = "G";
  return m;
}

std::vector<std::vector<sht::Complex>> small_alm(int lmax, int sets) {
  std::vector<std::vector<sht::Complex>> out;
  for (int s = 0; s < sets; ++s) {
    std::vector<sht::Complex> a(sht::alm_size(lmax));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = {std::cos(double(i + s)), std::sin(0.5 * double(i))};
    // m = 0 coefficients of a real field are real.
    for (int l = 0; l <= lmax; ++l) a[sht::alm_index(lmax, l, 0)].imag(0.0);
    out.push_back(std::move(a));
  }
  return out;
}

stack::ExposureStack small_stack() {
  stack::SyntheticConfig cfg;
  cfg.n_exp = 4;
  cfg.width = 16;
  cfg.height = 12;
  cfg.holes = 1;
  cfg.seed = 3;
  return stack::make_synthetic(cfg).stack;
}

}  // namespace

class TestFuzzReaders : public QObject {
  Q_OBJECT

private slots:
  void catalogue_text() {
    run_campaign({"catalogue-text", ".txt",
                  [](const std::string& p) { io::save_catalogue_text(small_catalogue(), p); },
                  [](const std::string& p) { read_catalogue(p); },
                  {}});
  }

  void catalogue_csv() {
    run_campaign({"catalogue-csv", ".csv",
                  [](const std::string& p) {
                    const io::Catalogue c = small_catalogue();
                    std::ofstream out(p);
                    out.precision(17);
                    out << "x,y,z,w\n";
                    for (std::size_t i = 0; i < c.size(); ++i)
                      out << c.x[i] << ',' << c.y[i] << ',' << c.z[i] << ',' << c.w[i] << '\n';
                  },
                  [](const std::string& p) { read_catalogue(p, {"x", "y", "z"}, {"w"}); },
                  {}});
  }

  void catalogue_fits() {
    run_campaign({"catalogue-fits", ".fits",
                  [](const std::string& p) {
                    const io::Catalogue c = small_catalogue();
                    QCOMPARE(testing::write_fits_table(p, {"x", "y", "z"}, c.x), 0);
                  },
                  [](const std::string& p) { read_catalogue(p); },
                  {}});
  }

  void catalogue_hdf5() {
    run_campaign({"catalogue-hdf5", ".h5",
                  [](const std::string& p) {
                    const io::Catalogue c = small_catalogue();
                    io::Hdf5Writer w(p);
                    w.write("/x", c.x);
                    w.write("/y", c.y);
                    w.write("/z", c.z);
                    w.write("/w", c.w);
                    w.attr("/", "units", std::string("Mpc/h"));
                    w.commit();
                  },
                  [](const std::string& p) { read_catalogue(p, {}, {"w"}); },
                  {corrupt_fixture("oom_cath5_286.h5")}});
  }

  void map_fits() {
    run_campaign({"map-fits", ".fits",
                  [](const std::string& p) { sht::write_healpix_map(p, small_map()); },
                  [](const std::string& p) { (void)sht::read_healpix_map(p); },
                  {corrupt_fixture("map_cks.fits"), corrupt_fixture("map_cks_bad.fits")}});
  }

  void map_fits_nested_partial() {
    // The NESTED -> RING conversion and the explicit-index (PIXEL column) path.
    run_campaign({"map-fits-partial", ".fits",
                  [](const std::string& p) {
                    sht::HealpixMap m = small_map();
                    m.ordering = sht::Ordering::Nested;
                    m.names.resize(1);
                    m.units.resize(1);
                    m.columns.resize(1);
                    std::vector<double> keep;
                    for (std::int64_t px = 0; px < sht::npix_of(m.nside); px += 3) {
                      m.pixels.push_back(px);
                      keep.push_back(m.columns[0][std::size_t(px)]);
                    }
                    m.columns[0] = keep;
                    sht::write_healpix_map(p, m);
                  },
                  [](const std::string& p) { (void)sht::read_healpix_map(p, true); },
                  {}});
  }

  void map_hdf5() {
    run_campaign({"map-hdf5", ".h5",
                  [](const std::string& p) { sht::write_map_hdf5(p, small_map()); },
                  [](const std::string& p) { (void)sht::read_map_hdf5(p); },
                  {corrupt_fixture("crash_maph5_168.h5"), corrupt_fixture("asan_hbo_maph5_246.h5"),
                   corrupt_fixture("ubsan_maph5_235.h5")}});
  }

  void alm_fits() {
    run_campaign({"alm-fits", ".fits",
                  [](const std::string& p) { sht::write_alm(p, small_alm(12, 3), 12); },
                  [](const std::string& p) {
                    int lmax = -1;
                    (void)sht::read_alm(p, 1, -1, &lmax);
                    (void)sht::read_alm(p, 3, 6);
                  },
                  {corrupt_fixture("oom_almfits_105.fits")}});
  }

  void alm_hdf5() {
    run_campaign({"alm-hdf5", ".h5",
                  [](const std::string& p) { sht::write_alm_hdf5(p, small_alm(12, 3), 12); },
                  [](const std::string& p) {
                    int lmax = -1;
                    (void)sht::read_alm_hdf5(p, &lmax);
                  },
                  {}});
  }

  void stack_workunit() {
    run_campaign({"stack-workunit", ".fits",
                  [](const std::string& p) { stack::write_workunit(p, small_stack()); },
                  [](const std::string& p) { stack::read_workunit(p).validate(); },
                  {}});
  }

  void stack_hdf5() {
    run_campaign({"stack-hdf5", ".h5",
                  [](const std::string& p) { stack::write_stack_hdf5(p, small_stack()); },
                  [](const std::string& p) { stack::read_stack_hdf5(p).validate(); },
                  {corrupt_fixture("hang_stackh5_094.h5"), corrupt_fixture("oom_stackh5_014.h5")}});
  }
};

ALMAGEST_FUZZ_MAIN(TestFuzzReaders)
#include "test_fuzz_readers.moc"
