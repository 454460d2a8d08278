// HEALPix map and alm FITS files (cfitsio), in the layout healpy reads and writes.
#include <fitsio.h>
#include <healpix_base.h>
#include <healpix_map.h>
#include <weight_utils.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"

namespace almagest::sht {
namespace {

std::string fits_text(int status) {
  char buf[FLEN_STATUS] = {0};
  fits_get_errstatus(status, buf);
  return buf;
}

/// RAII fitsfile handle with error helpers naming the file.
class Fits {
public:
  Fits(std::string shown, fitsfile* f) : shown_(std::move(shown)), f_(f) {}
  ~Fits() {
    if (f_) {
      int st = 0;
      fits_close_file(f_, &st);
    }
  }
  Fits(const Fits&) = delete;
  Fits& operator=(const Fits&) = delete;
  static Fits open(const std::string& path) {
    fitsfile* f = nullptr;
    int st = 0;
    if (fits_open_file(&f, path.c_str(), READONLY, &st))
      throw IoError(path, "", "cannot open FITS file: " + fits_text(st));
    return Fits(path, f);
  }
  static Fits create(const std::string& temp, const std::string& shown) {
    fitsfile* f = nullptr;
    int st = 0;
    if (fits_create_file(&f, ("!" + temp).c_str(), &st))
      throw IoError(shown, "", "cannot create FITS file: " + fits_text(st));
    return Fits(shown, f);
  }
  void close() {
    int st = 0;
    fitsfile* f = f_;
    f_ = nullptr;
    if (fits_close_file(f, &st)) fail(st, "", "closing the file");
  }
  fitsfile* get() const { return f_; }
  [[noreturn]] void fail(int st, const std::string& field, const std::string& what) const {
    throw IoError(shown_, field, what + ": " + fits_text(st));
  }
  const std::string& name() const { return shown_; }

  bool key_string(const char* key, std::string& out) const {
    char v[FLEN_VALUE] = {0};
    int st = 0;
    if (fits_read_key(f_, TSTRING, key, v, nullptr, &st)) return false;
    out = v;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return true;
  }
  bool key_long(const char* key, long long& out) const {
    int st = 0;
    return fits_read_key(f_, TLONGLONG, key, &out, nullptr, &st) == 0;
  }

private:
  std::string shown_;
  fitsfile* f_ = nullptr;
};

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void move_to_table(const Fits& f, int hdu) {
  int st = 0, type = 0;
  if (hdu < 1) throw IoError(f.name(), "HDU", "extension number must be >= 1");
  if (fits_movabs_hdu(f.get(), hdu + 1, &type, &st))
    f.fail(st, "HDU " + std::to_string(hdu), "no such extension");
  if (type != BINARY_TBL)
    throw IoError(f.name(), "XTENSION", "extension " + std::to_string(hdu) + " is not a BINTABLE");
}

/// Reads all nrows * repeat values of column `col` (1-based) as doubles.
std::vector<double> read_column_double(const Fits& f, int col, const std::string& cname) {
  int st = 0, typecode = 0;
  long repeat = 0, width = 0;
  long long nrows = 0;
  if (fits_get_coltypell(f.get(), col, &typecode, reinterpret_cast<LONGLONG*>(&repeat), reinterpret_cast<LONGLONG*>(&width), &st))
    f.fail(st, cname, "cannot read the column type");
  if (fits_get_num_rowsll(f.get(), &nrows, &st)) f.fail(st, "NAXIS2", "cannot read the row count");
  std::vector<double> v(static_cast<std::size_t>(nrows) * static_cast<std::size_t>(repeat));
  int anynul = 0;
  double nulval = kUnseen;
  if (!v.empty() && fits_read_col(f.get(), TDOUBLE, col, 1, 1, static_cast<LONGLONG>(v.size()),
                                  &nulval, v.data(), &anynul, &st))
    f.fail(st, cname, "cannot read the column data");
  return v;
}

std::vector<std::int64_t> read_column_int64(const Fits& f, int col, const std::string& cname) {
  int st = 0, typecode = 0;
  LONGLONG repeat = 0, width = 0, nrows = 0;
  if (fits_get_coltypell(f.get(), col, &typecode, &repeat, &width, &st))
    f.fail(st, cname, "cannot read the column type");
  if (fits_get_num_rowsll(f.get(), &nrows, &st)) f.fail(st, "NAXIS2", "cannot read the row count");
  std::vector<LONGLONG> v(static_cast<std::size_t>(nrows * repeat));
  int anynul = 0;
  if (!v.empty() && fits_read_col(f.get(), TLONGLONG, col, 1, 1, static_cast<LONGLONG>(v.size()),
                                  nullptr, v.data(), &anynul, &st))
    f.fail(st, cname, "cannot read the column data");
  return {v.begin(), v.end()};
}

std::string column_name(const Fits& f, int col) {
  char key[FLEN_KEYWORD];
  std::snprintf(key, sizeof key, "TTYPE%d", col);
  std::string s;
  if (!f.key_string(key, s)) throw IoError(f.name(), key, "missing column name");
  return s;
}

std::vector<std::string> default_names(std::size_t n) {
  if (n == 1) return {"TEMPERATURE"};
  if (n == 2) return {"Q_POLARISATION", "U_POLARISATION"};
  if (n == 3) return {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  std::vector<std::string> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back("COLUMN" + std::to_string(i + 1));
  return v;
}

bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

std::int64_t ring2nest(int nside, std::int64_t pix) {
  Healpix_Base2 hb(nside, RING, SET_NSIDE);
  return hb.ring2nest(pix);
}
std::int64_t nest2ring(int nside, std::int64_t pix) {
  Healpix_Base2 hb(nside, NEST, SET_NSIDE);
  return hb.nest2ring(pix);
}

std::vector<double> ring_to_nest(const std::vector<double>& ring, int nside) {
  if (!is_pow2(nside)) throw ConfigError("nside", "NESTED ordering needs a power-of-two nside");
  Healpix_Base2 hb(nside, RING, SET_NSIDE);
  std::vector<double> out(ring.size());
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(ring.size()); ++i)
    out[hb.ring2nest(i)] = ring[i];
  return out;
}

std::vector<double> nest_to_ring(const std::vector<double>& nest, int nside) {
  if (!is_pow2(nside)) throw ConfigError("nside", "NESTED ordering needs a power-of-two nside");
  Healpix_Base2 hb(nside, NEST, SET_NSIDE);
  std::vector<double> out(nest.size());
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(nest.size()); ++i)
    out[hb.nest2ring(i)] = nest[i];
  return out;
}

std::vector<double> read_ring_weights(const std::string& path, int nside) {
  if (nside < 1) throw ConfigError("nside", "read_ring_weights: nside must be >= 1");
  Fits f = Fits::open(path);
  move_to_table(f, 1);
  long long file_nside = 0;
  if (f.key_long("NSIDE", file_nside) && file_nside != nside)
    throw IoError(path, "NSIDE", "ring weights for NSIDE " + std::to_string(file_nside) +
                                     ", the map has NSIDE " + std::to_string(nside));
  int ncols = 0, st = 0;
  if (fits_get_num_cols(f.get(), &ncols, &st) || ncols < 1)
    throw IoError(path, "TFIELDS", "no columns in the ring weight table");
  const std::string cname = column_name(f, 1);
  std::vector<double> v = read_column_double(f, 1, cname);
  const std::size_t need = 2 * static_cast<std::size_t>(nside);
  if (v.size() < need)
    throw IoError(path, cname, "has " + std::to_string(v.size()) + " values; NSIDE " +
                                   std::to_string(nside) + " needs 2 NSIDE = " + std::to_string(need) +
                                   " (is this the weight file of another NSIDE?)");
  v.resize(need);
  for (std::size_t r = 0; r < need; ++r) {
    if (!std::isfinite(v[r]) || v[r] == kUnseen)
      throw IoError(path, cname, "ring " + std::to_string(r + 1) + " has no finite weight");
    v[r] += 1.0;  // the files store w - 1
  }
  return v;
}

std::vector<double> read_pixel_weights(const std::string& path, int nside) {
  if (nside < 1) throw ConfigError("nside", "read_pixel_weights: nside must be >= 1");
  Fits f = Fits::open(path);
  move_to_table(f, 1);
  const std::string cname = column_name(f, 1);
  if (upper(cname) != "COMPRESSED PIXEL WEIGHTS")
    throw IoError(path, "TTYPE1", "is '" + cname + "', not COMPRESSED PIXEL WEIGHTS (a HEALPix full-weight file)");
  long long file_nside = 0;
  if (!f.key_long("NSIDE", file_nside)) throw IoError(path, "NSIDE", "missing keyword");
  if (file_nside != nside)
    throw IoError(path, "NSIDE", "pixel weights for NSIDE " + std::to_string(file_nside) +
                                     ", the map has NSIDE " + std::to_string(nside));
  std::vector<double> w = read_column_double(f, 1, cname);
  // One weight per pixel class of the symmetric layout healpix_cxx uses (weight_utils).
  const std::size_t need =
      (static_cast<std::size_t>(3 * static_cast<long long>(nside) + 1) * static_cast<std::size_t>(nside + 1)) / 4;
  if (w.size() != need)
    throw IoError(path, cname, "has " + std::to_string(w.size()) + " values; NSIDE " +
                                   std::to_string(nside) + " needs " + std::to_string(need));
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!std::isfinite(w[i]) || w[i] == kUnseen)
      throw IoError(path, cname, "value " + std::to_string(i + 1) + " is not finite");
  Healpix_Map<double> ones(nside, RING, SET_NSIDE);
  ones.fill(1.0);
  apply_fullweights(ones, w);  // pixel *= 1 + w of its class
  std::vector<double> out(static_cast<std::size_t>(ones.Npix()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = ones[static_cast<int>(i)];
  return out;
}

HealpixMap read_healpix_map(const std::string& path, bool to_ring, int hdu) {
  Fits f = Fits::open(path);
  move_to_table(f, hdu);
  HealpixMap m;
  long long nside = 0;
  if (!f.key_long("NSIDE", nside)) throw IoError(path, "NSIDE", "missing keyword");
  if (nside < 1 || nside > (1 << 29)) throw IoError(path, "NSIDE", "invalid value " + std::to_string(nside));
  m.nside = static_cast<int>(nside);
  std::string ord;
  if (!f.key_string("ORDERING", ord)) throw IoError(path, "ORDERING", "missing keyword");
  ord = upper(ord);
  if (ord == "RING")
    m.ordering = Ordering::Ring;
  else if (ord == "NESTED" || ord == "NEST")
    m.ordering = Ordering::Nested;
  else
    throw IoError(path, "ORDERING", "unknown ordering '" + ord + "' (expected RING or NESTED)");
  if (m.ordering == Ordering::Nested && !is_pow2(m.nside))
    throw IoError(path, "NSIDE", "NESTED ordering needs a power-of-two NSIDE");
  std::string pixtype;
  if (f.key_string("PIXTYPE", pixtype) && upper(pixtype) != "HEALPIX")
    throw IoError(path, "PIXTYPE", "is '" + pixtype + "', not HEALPIX");
  std::string indx = "IMPLICIT";
  f.key_string("INDXSCHM", indx);
  indx = upper(indx);
  if (indx != "IMPLICIT" && indx != "EXPLICIT")
    throw IoError(path, "INDXSCHM", "unknown index scheme '" + indx + "'");
  f.key_string("COORDSYS", m.coordsys);
  int st = 0, ncols = 0;
  if (fits_get_num_cols(f.get(), &ncols, &st)) f.fail(st, "TFIELDS", "cannot read column count");
  const std::int64_t npix = npix_of(m.nside);
  int first = 1;
  if (indx == "EXPLICIT") {
    if (ncols < 2) throw IoError(path, "TFIELDS", "explicit-index map needs PIXEL and data columns");
    const std::string pname = column_name(f, 1);
    if (upper(pname) != "PIXEL")
      throw IoError(path, "TTYPE1", "explicit-index map: first column is '" + pname + "', not PIXEL");
    m.pixels = read_column_int64(f, 1, "PIXEL");
    for (auto p : m.pixels)
      if (p < 0 || p >= npix)
        throw IoError(path, "PIXEL", "pixel index " + std::to_string(p) + " outside 0.." + std::to_string(npix - 1));
    first = 2;
  }
  for (int c = first; c <= ncols; ++c) {
    std::string name = column_name(f, c);
    auto v = read_column_double(f, c, name);
    const std::size_t want = m.pixels.empty() ? static_cast<std::size_t>(npix) : m.pixels.size();
    if (v.size() != want)
      throw IoError(path, m.pixels.empty() ? "NSIDE" : name,
                    "column " + name + " holds " + std::to_string(v.size()) + " values, expected " +
                        std::to_string(want) + (m.pixels.empty() ? " (12 NSIDE^2)" : " (one per PIXEL)"));
    char key[FLEN_KEYWORD];
    std::snprintf(key, sizeof key, "TUNIT%d", c);
    std::string unit;
    f.key_string(key, unit);
    // Nulls and near-UNSEEN values are the blind value.
    for (auto& x : v)
      if (std::isnan(x) || std::fabs(x - kUnseen) < 1e-5 * std::fabs(kUnseen)) x = kUnseen;
    m.names.push_back(name);
    m.units.push_back(unit);
    m.columns.push_back(std::move(v));
  }
  if (m.columns.empty()) throw IoError(path, "TFIELDS", "no map columns");
  if (to_ring && m.ordering == Ordering::Nested) {
    if (m.pixels.empty()) {
      for (auto& col : m.columns) col = nest_to_ring(col, m.nside);
    } else {
      Healpix_Base2 hb(m.nside, NEST, SET_NSIDE);
      std::vector<std::int64_t> rp(m.pixels.size());
      for (std::size_t i = 0; i < rp.size(); ++i) rp[i] = hb.nest2ring(m.pixels[i]);
      std::vector<std::size_t> order(rp.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](auto a, auto b) { return rp[a] < rp[b]; });
      std::vector<std::int64_t> np(rp.size());
      for (std::size_t i = 0; i < rp.size(); ++i) np[i] = rp[order[i]];
      for (auto& col : m.columns) {
        std::vector<double> nc(col.size());
        for (std::size_t i = 0; i < col.size(); ++i) nc[i] = col[order[i]];
        col = std::move(nc);
      }
      m.pixels = std::move(np);
    }
    m.ordering = Ordering::Ring;
  }
  return m;
}

void write_healpix_map(const std::string& path, const HealpixMap& map) {
  if (map.nside < 1) throw ConfigError("nside", "map has no valid nside");
  if (map.columns.empty()) throw ConfigError("columns", "map has no columns");
  if (map.ordering == Ordering::Nested && !is_pow2(map.nside))
    throw ConfigError("nside", "NESTED ordering needs a power-of-two nside");
  const std::int64_t npix = npix_of(map.nside);
  const std::size_t n = map.partial() ? map.pixels.size() : static_cast<std::size_t>(npix);
  for (const auto& c : map.columns)
    if (c.size() != n) throw ConfigError("columns", "every column needs " + std::to_string(n) + " values");
  auto names = map.names.size() == map.columns.size() ? map.names : default_names(map.columns.size());
  AtomicFile af(path);
  {
    Fits f = Fits::create(af.temp_path(), path);
    int st = 0;
    long naxes[1] = {0};
    if (fits_create_img(f.get(), 8, 0, naxes, &st)) f.fail(st, "PRIMARY", "cannot write the primary HDU");
    std::vector<std::string> ttype, tform, tunit;
    if (map.partial()) {
      ttype.push_back("PIXEL");
      tform.push_back("K");
      tunit.push_back("");
    }
    for (std::size_t i = 0; i < map.columns.size(); ++i) {
      ttype.push_back(names[i]);
      tform.push_back("D");
      tunit.push_back(i < map.units.size() ? map.units[i] : "");
    }
    std::vector<char*> tt, tf, tu;
    for (std::size_t i = 0; i < ttype.size(); ++i) {
      tt.push_back(ttype[i].data());
      tf.push_back(tform[i].data());
      tu.push_back(tunit[i].data());
    }
    char extname[] = "xtension";
    if (fits_create_tbl(f.get(), BINARY_TBL, static_cast<LONGLONG>(n), static_cast<int>(tt.size()), tt.data(),
                        tf.data(), tu.data(), extname, &st))
      f.fail(st, "BINTABLE", "cannot create the table");
    auto key_str = [&](const char* k, const std::string& v, const char* c) {
      if (fits_update_key(f.get(), TSTRING, k, const_cast<char*>(v.c_str()), const_cast<char*>(c), &st))
        f.fail(st, k, "cannot write keyword");
    };
    auto key_ll = [&](const char* k, long long v, const char* c) {
      if (fits_update_key(f.get(), TLONGLONG, k, &v, const_cast<char*>(c), &st)) f.fail(st, k, "cannot write keyword");
    };
    key_str("PIXTYPE", "HEALPIX", "HEALPIX pixelisation");
    key_str("ORDERING", map.ordering == Ordering::Ring ? "RING" : "NESTED", "Pixel ordering scheme");
    if (!map.coordsys.empty()) key_str("COORDSYS", map.coordsys, "Ecliptic, Galactic or Celestial");
    key_ll("NSIDE", map.nside, "Resolution parameter of HEALPIX");
    key_ll("FIRSTPIX", 0, "First pixel # (0 based)");
    key_ll("LASTPIX", npix - 1, "Last pixel # (0 based)");
    key_str("INDXSCHM", map.partial() ? "EXPLICIT" : "IMPLICIT", "Indexing: IMPLICIT or EXPLICIT");
    key_str("OBJECT", map.partial() ? "PARTIAL" : "FULLSKY", "Sky coverage");
    double bad = kUnseen;
    if (fits_update_key(f.get(), TDOUBLE, "BAD_DATA", &bad, const_cast<char*>("Sentinel value given to bad pixels"), &st))
      f.fail(st, "BAD_DATA", "cannot write keyword");
    int col = 1;
    if (map.partial()) {
      std::vector<LONGLONG> px(map.pixels.begin(), map.pixels.end());
      if (fits_write_col(f.get(), TLONGLONG, col, 1, 1, static_cast<LONGLONG>(n), px.data(), &st))
        f.fail(st, "PIXEL", "cannot write column");
      ++col;
    }
    for (std::size_t i = 0; i < map.columns.size(); ++i, ++col)
      if (fits_write_col(f.get(), TDOUBLE, col, 1, 1, static_cast<LONGLONG>(n),
                         const_cast<double*>(map.columns[i].data()), &st))
        f.fail(st, names[i], "cannot write column");
    f.close();
  }
  af.commit();
}

HealpixMap to_full_sky(const HealpixMap& map) {
  if (!map.partial()) return map;
  HealpixMap out = map;
  out.pixels.clear();
  const auto npix = static_cast<std::size_t>(npix_of(map.nside));
  for (std::size_t c = 0; c < map.columns.size(); ++c) {
    out.columns[c].assign(npix, kUnseen);
    for (std::size_t i = 0; i < map.pixels.size(); ++i) out.columns[c][map.pixels[i]] = map.columns[c][i];
  }
  return out;
}

std::vector<std::complex<double>> read_alm(const std::string& path, int hdu, int lmax, int* lmax_out) {
  Fits f = Fits::open(path);
  move_to_table(f, hdu);
  int st = 0, ncols = 0;
  if (fits_get_num_cols(f.get(), &ncols, &st)) f.fail(st, "TFIELDS", "cannot read column count");
  if (ncols < 3) throw IoError(path, "TFIELDS", "alm table needs INDEX, REAL and IMAG columns");
  const std::string n1 = upper(column_name(f, 1)), n2 = upper(column_name(f, 2)), n3 = upper(column_name(f, 3));
  if (n1 != "INDEX") throw IoError(path, "TTYPE1", "is '" + n1 + "', expected INDEX");
  if (n2 != "REAL") throw IoError(path, "TTYPE2", "is '" + n2 + "', expected REAL");
  if (n3 != "IMAG") throw IoError(path, "TTYPE3", "is '" + n3 + "', expected IMAG");
  const auto idx = read_column_int64(f, 1, "INDEX");
  const auto re = read_column_double(f, 2, "REAL");
  const auto im = read_column_double(f, 3, "IMAG");
  if (re.size() != idx.size() || im.size() != idx.size())
    throw IoError(path, "REAL", "INDEX, REAL and IMAG have different lengths");
  int lfound = 0;
  std::vector<std::pair<int, int>> lm(idx.size());
  for (std::size_t i = 0; i < idx.size(); ++i) {
    const std::int64_t k = idx[i] - 1;
    if (k < 0) throw IoError(path, "INDEX", "index " + std::to_string(idx[i]) + " < 1");
    int l = static_cast<int>(std::sqrt(static_cast<double>(k)));
    while (static_cast<std::int64_t>(l) * l > k) --l;
    while (static_cast<std::int64_t>(l + 1) * (l + 1) <= k) ++l;
    const int m = static_cast<int>(k - static_cast<std::int64_t>(l) * l - l);
    if (m < 0) throw IoError(path, "INDEX", "index " + std::to_string(idx[i]) + " has m < 0");
    lm[i] = {l, m};
    lfound = std::max(lfound, l);
  }
  const int L = lmax >= 0 ? lmax : lfound;
  std::vector<std::complex<double>> alm(alm_size(L), 0.0);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    auto [l, m] = lm[i];
    if (l > L) continue;
    alm[alm_index(L, l, m)] = {re[i], im[i]};
  }
  if (lmax_out) *lmax_out = L;
  return alm;
}

void write_alm(const std::string& path, const std::vector<std::vector<std::complex<double>>>& sets, int lmax) {
  if (lmax < 0) throw ConfigError("lmax", "must be >= 0");
  if (sets.empty()) throw ConfigError("alm", "no alm sets to write");
  for (const auto& s : sets)
    if (s.size() != alm_size(lmax)) throw ConfigError("alm", "each alm set needs alm_size(lmax) entries");
  AtomicFile af(path);
  {
    Fits f = Fits::create(af.temp_path(), path);
    int st = 0;
    long naxes[1] = {0};
    if (fits_create_img(f.get(), 8, 0, naxes, &st)) f.fail(st, "PRIMARY", "cannot write the primary HDU");
    const std::size_t n = alm_size(lmax);
    std::vector<LONGLONG> idx(n);
    std::vector<double> re(n), im(n);
    for (const auto& s : sets) {
      char c1[] = "INDEX", c2[] = "REAL", c3[] = "IMAG", f1[] = "K", f2[] = "D", f3[] = "D", u[] = "";
      char* tt[] = {c1, c2, c3};
      char* tf[] = {f1, f2, f3};
      char* tu[] = {u, u, u};
      if (fits_create_tbl(f.get(), BINARY_TBL, static_cast<LONGLONG>(n), 3, tt, tf, tu, nullptr, &st))
        f.fail(st, "BINTABLE", "cannot create the alm table");
      std::size_t k = 0;
      for (int l = 0; l <= lmax; ++l)
        for (int m = 0; m <= l; ++m, ++k) {
          idx[k] = static_cast<LONGLONG>(l) * l + l + m + 1;
          const auto a = s[alm_index(lmax, l, m)];
          re[k] = a.real();
          im[k] = a.imag();
        }
      long long lm = lmax;
      if (fits_update_key(f.get(), TLONGLONG, "MAX-LPOL", &lm, const_cast<char*>("Maximum L multipole order"), &st) ||
          fits_update_key(f.get(), TLONGLONG, "MAX-MPOL", &lm, const_cast<char*>("Maximum M multipole degree"), &st))
        f.fail(st, "MAX-LPOL", "cannot write keyword");
      if (fits_write_col(f.get(), TLONGLONG, 1, 1, 1, static_cast<LONGLONG>(n), idx.data(), &st) ||
          fits_write_col(f.get(), TDOUBLE, 2, 1, 1, static_cast<LONGLONG>(n), re.data(), &st) ||
          fits_write_col(f.get(), TDOUBLE, 3, 1, 1, static_cast<LONGLONG>(n), im.data(), &st))
        f.fail(st, "INDEX", "cannot write the alm columns");
    }
    f.close();
  }
  af.commit();
}

}  // namespace almagest::sht
