// HEALPix map and alm FITS files (cfitsio), in the layout healpy reads and writes.
#include <fitsio.h>
#include <healpix_base.h>
#include <healpix_map.h>
#include <weight_utils.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <numeric>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"

namespace almagest::sht {
namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

using io::FitsFile;

/// Label of extension `hdu` (1 = first extension, as healpy and astropy count them).
std::string hdu_label(int hdu) { return "HDU " + std::to_string(hdu); }

void move_to_table(FitsFile& f, int hdu) {
  if (hdu < 1) throw IoError(f.name(), "HDU", "extension number must be >= 1");
  const int type = f.move(hdu + 1, hdu_label(hdu));
  if (type != BINARY_TBL)
    throw IoError(f.name(), "XTENSION", "extension " + std::to_string(hdu) + " is not a BINTABLE");
}

std::string column_name(const FitsFile& f, int col) {
  const std::string key = "TTYPE" + std::to_string(col);
  std::string s;
  if (!f.read_key(key, s)) throw IoError(f.name(), key, "missing column name");
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
  FitsFile f = FitsFile::open(path);
  move_to_table(f, 1);
  long long file_nside = 0;
  if (f.read_key("NSIDE", file_nside) && file_nside != nside)
    throw IoError(path, "NSIDE", "ring weights for NSIDE " + std::to_string(file_nside) +
                                     ", the map has NSIDE " + std::to_string(nside));
  if (f.table_columns("TFIELDS") < 1)
    throw IoError(path, "TFIELDS", "no columns in the ring weight table");
  const std::string cname = column_name(f, 1);
  std::vector<double> v = f.read_doubles(1, cname);
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
  FitsFile f = FitsFile::open(path);
  move_to_table(f, 1);
  const std::string cname = column_name(f, 1);
  if (upper(cname) != "COMPRESSED PIXEL WEIGHTS")
    throw IoError(path, "TTYPE1", "is '" + cname + "', not COMPRESSED PIXEL WEIGHTS (a HEALPix full-weight file)");
  long long file_nside = 0;
  if (!f.read_key("NSIDE", file_nside)) throw IoError(path, "NSIDE", "missing keyword");
  if (file_nside != nside)
    throw IoError(path, "NSIDE", "pixel weights for NSIDE " + std::to_string(file_nside) +
                                     ", the map has NSIDE " + std::to_string(nside));
  std::vector<double> w = f.read_doubles(1, cname);
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
  FitsFile f = FitsFile::open(path);
  move_to_table(f, hdu);
  HealpixMap m;
  long long nside = 0;
  if (!f.read_key("NSIDE", nside)) throw IoError(path, "NSIDE", "missing keyword");
  if (nside < 1 || nside > kMaxFileNside)
    throw IoError(path, "NSIDE", "invalid value " + std::to_string(nside) + " (expected 1..2^29)");
  m.nside = static_cast<int>(nside);
  std::string ord;
  if (!f.read_key("ORDERING", ord)) throw IoError(path, "ORDERING", "missing keyword");
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
  if (f.read_key("PIXTYPE", pixtype) && upper(pixtype) != "HEALPIX")
    throw IoError(path, "PIXTYPE", "is '" + pixtype + "', not HEALPIX");
  std::string indx = "IMPLICIT";
  f.read_key("INDXSCHM", indx);
  indx = upper(indx);
  if (indx != "IMPLICIT" && indx != "EXPLICIT")
    throw IoError(path, "INDXSCHM", "unknown index scheme '" + indx + "'");
  f.read_key("COORDSYS", m.coordsys);
  const int ncols = f.table_columns("TFIELDS");
  const long long rows = f.table_rows(hdu_label(hdu));  // NAXIS2 x NAXIS1 fit in the file
  const std::int64_t npix = npix_of(m.nside);           // no overflow for NSIDE <= 2^29
  int first = 1;
  if (indx == "EXPLICIT") {
    if (ncols < 2) throw IoError(path, "TFIELDS", "explicit-index map needs PIXEL and data columns");
    const std::string pname = column_name(f, 1);
    if (upper(pname) != "PIXEL")
      throw IoError(path, "TTYPE1", "explicit-index map: first column is '" + pname + "', not PIXEL");
    m.pixels = f.read_int64s(1, "PIXEL");
    for (auto p : m.pixels)
      if (p < 0 || p >= npix)
        throw IoError(path, "PIXEL", "pixel index " + std::to_string(p) + " outside 0.." + std::to_string(npix - 1));
    first = 2;
  }
  for (int c = first; c <= ncols; ++c) {
    std::string name = column_name(f, c);
    // The column's size from its header first: a wrong NSIDE is named before anything is read.
    const long long holds = rows * f.column(c, name).repeat;  // bounded by the file's size
    const std::size_t want = m.pixels.empty() ? static_cast<std::size_t>(npix) : m.pixels.size();
    if (static_cast<std::size_t>(holds) != want)
      throw IoError(path, m.pixels.empty() ? "NSIDE" : name,
                    "column " + name + " holds " + std::to_string(holds) + " values, expected " +
                        std::to_string(want) + (m.pixels.empty() ? " (12 NSIDE^2)" : " (one per PIXEL)"));
    auto v = f.read_doubles(c, name);  // no null substitution: NaN and inf come back as stored
    std::string unit;
    f.read_key("TUNIT" + std::to_string(c), unit);
    // NaN (and TNULL cells of integer columns) and near-UNSEEN values are the blind value, as
    // documented; an infinite value is damage, never map data.
    for (std::size_t i = 0; i < v.size(); ++i) {
      double& x = v[i];
      if (std::isinf(x))
        throw IoError(path, name,
                      fmt::format("pixel {} holds {}: map values must be finite (NaN and UNSEEN mark "
                                  "blind pixels)", m.pixels.empty() ? static_cast<std::int64_t>(i) : m.pixels[i], x));
      if (std::isnan(x) || std::fabs(x - kUnseen) < 1e-5 * std::fabs(kUnseen)) x = kUnseen;
    }
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

void require_finite_map(const std::string& output, const HealpixMap& map) {
  for (std::size_t c = 0; c < map.columns.size(); ++c) {
    const auto& col = map.columns[c];
    for (std::size_t i = 0; i < col.size(); ++i)
      if (!std::isfinite(col[i])) {
        const std::string name = c < map.names.size() && !map.names[c].empty()
                                     ? map.names[c]
                                     : "column " + std::to_string(c + 1);
        const std::int64_t pix = i < map.pixels.size() ? map.pixels[i] : static_cast<std::int64_t>(i);
        throw IoError(output, name,
                      fmt::format("the result is not finite ({} at pixel {}, the first such value); "
                                  "the map was not written", col[i], pix));
      }
  }
}

void require_finite_alm(const std::string& output, const std::vector<std::vector<Complex>>& sets,
                        int lmax) {
  for (std::size_t s = 0; s < sets.size(); ++s)
    for (std::size_t i = 0; i < sets[s].size(); ++i) {
      const Complex a = sets[s][i];
      if (std::isfinite(a.real()) && std::isfinite(a.imag())) continue;
      // (l, m) of healpy index i: m runs in blocks of lmax + 1 - m entries.
      std::size_t m = 0, k = i;
      while (lmax >= 0 && static_cast<int>(m) <= lmax && k >= static_cast<std::size_t>(lmax + 1) - m) {
        k -= static_cast<std::size_t>(lmax + 1) - m;
        ++m;
      }
      throw IoError(output, "alm set " + std::to_string(s),
                    fmt::format("the result is not finite ({} + {}i at index {}, l = {}, m = {}, the "
                                "first such value); the alm were not written",
                                a.real(), a.imag(), i, k + m, m));
    }
}

void write_healpix_map(const std::string& path, const HealpixMap& map) {
  if (map.nside < 1 || map.nside > kMaxFileNside)
    throw ConfigError("nside", "map has no valid nside (1..2^29): " + std::to_string(map.nside));
  if (map.columns.empty()) throw ConfigError("columns", "map has no columns");
  if (map.ordering == Ordering::Nested && !is_pow2(map.nside))
    throw ConfigError("nside", "NESTED ordering needs a power-of-two nside");
  const std::int64_t npix = npix_of(map.nside);
  const std::size_t n = map.partial() ? map.pixels.size() : static_cast<std::size_t>(npix);
  for (const auto& c : map.columns)
    if (c.size() != n) throw ConfigError("columns", "every column needs " + std::to_string(n) + " values");
  auto names = map.names.size() == map.columns.size() ? map.names : default_names(map.columns.size());
  require_finite_map(path, map);  // before the output exists: a non-finite result is no file
  AtomicFile af(path);
  {
    FitsFile f = FitsFile::create(af.temp_path(), path);
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
  FitsFile f = FitsFile::open(path);
  move_to_table(f, hdu);
  const std::string where = hdu_label(hdu);
  const int ncols = f.table_columns("TFIELDS");
  if (ncols < 3) throw IoError(path, "TFIELDS", "alm table needs INDEX, REAL and IMAG columns");
  const std::string n1 = upper(column_name(f, 1)), n2 = upper(column_name(f, 2)), n3 = upper(column_name(f, 3));
  if (n1 != "INDEX") throw IoError(path, "TTYPE1", "is '" + n1 + "', expected INDEX");
  if (n2 != "REAL") throw IoError(path, "TTYPE2", "is '" + n2 + "', expected REAL");
  if (n3 != "IMAG") throw IoError(path, "TTYPE3", "is '" + n3 + "', expected IMAG");
  const long long rows = f.table_rows(where);  // NAXIS2 x NAXIS1 fit in the file
  const std::string f_index = where + ", column INDEX", f_re = where + ", column REAL",
                    f_im = where + ", column IMAG";
  const long long repeat = f.column(1, f_index).repeat;
  const auto idx = f.read_int64s(1, f_index);
  const auto re = f.read_doubles(2, f_re);  // no null substitution: NaN and inf as stored
  const auto im = f.read_doubles(3, f_im);
  if (re.size() != idx.size() || im.size() != idx.size())
    throw IoError(path, f_re, "INDEX, REAL and IMAG have different lengths");
  auto row_of = [&](std::size_t i) { return static_cast<long long>(i) / std::max(repeat, 1LL) + 1; };
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (!std::isfinite(re[i]))
      throw IoError(path, f_re, fmt::format("row {} holds {}: alm values must be finite", row_of(i), re[i]));
    if (!std::isfinite(im[i]))
      throw IoError(path, f_im, fmt::format("row {} holds {}: alm values must be finite", row_of(i), im[i]));
  }
  // (l, m) of every INDEX = l^2 + l + m + 1 in unsigned 64-bit arithmetic (no overflow for any
  // INDEX), then the band limit is checked before the alm vector is sized from it.
  std::uint64_t lfound = 0;
  std::size_t lfound_at = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> lm(idx.size());
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 1)
      throw IoError(path, f_index, fmt::format("row {} holds INDEX {}; INDEX = l^2 + l + m + 1 is >= 1", row_of(i), idx[i]));
    const auto k = static_cast<std::uint64_t>(idx[i]) - 1;
    auto l = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(k)));
    while (l * l > k) --l;
    while ((l + 1) * (l + 1) <= k) ++l;
    if (k - l * l < l)
      throw IoError(path, f_index, fmt::format("row {} holds INDEX {}, which has m < 0", row_of(i), idx[i]));
    lm[i] = {l, k - l * l - l};
    if (l > lfound || i == 0) {
      lfound = l;
      lfound_at = i;
    }
  }
  if (lmax < 0) {
    const auto size_of = [](std::uint64_t l) { return (l + 1) * (l + 2) / 2; };
    const std::uint64_t limit = std::max<std::uint64_t>(
        kAlmRowsFactor * static_cast<std::uint64_t>(std::max(rows, 0LL)), size_of(kAlmFreeLmax));
    if (size_of(lfound) > limit)
      throw IoError(path, f_index,
                    fmt::format("row {} holds INDEX {} (l = {}): an alm set up to l = {} would have {} "
                                "entries, more than a table of {} rows may size (max({} x rows, "
                                "alm_size({}))); a corrupt INDEX, or a sparse file (give lmax to read it)",
                                row_of(lfound_at), idx[lfound_at], lfound, lfound, size_of(lfound),
                                rows, kAlmRowsFactor, kAlmFreeLmax));
  }
  const int L = lmax >= 0 ? lmax : static_cast<int>(lfound);
  std::vector<std::complex<double>> alm(alm_size(L), 0.0);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    auto [l, m] = lm[i];
    if (l > static_cast<std::uint64_t>(L)) continue;  // beyond a requested lmax: dropped
    alm[alm_index(L, static_cast<int>(l), static_cast<int>(m))] = {re[i], im[i]};
  }
  if (lmax_out) *lmax_out = L;
  return alm;
}

void write_alm(const std::string& path, const std::vector<std::vector<std::complex<double>>>& sets, int lmax) {
  if (lmax < 0) throw ConfigError("lmax", "must be >= 0");
  if (sets.empty()) throw ConfigError("alm", "no alm sets to write");
  for (const auto& s : sets)
    if (s.size() != alm_size(lmax)) throw ConfigError("alm", "each alm set needs alm_size(lmax) entries");
  require_finite_alm(path, sets, lmax);  // before the output exists: a non-finite result is no file
  AtomicFile af(path);
  {
    FitsFile f = FitsFile::create(af.temp_path(), path);
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
