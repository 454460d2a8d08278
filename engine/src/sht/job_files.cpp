// The file side of the sht job layer (see job_files.hpp; every front end reads and writes sht files here): input checks on top of the engine's
// HEALPix readers, atomic writers with provenance keywords and attributes.
#include "job_files.hpp"

#include <fitsio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <numeric>
#include <sstream>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"

namespace almagest::sht::files {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string extension(const std::string& path) {
  std::string name = lower(fs::path(path).filename().string());
  for (const char* z : {".gz", ".fz", ".bz2"})
    if (name.size() > 3 && name.ends_with(z)) name.erase(name.size() - std::string(z).size());
  return fs::path(name).extension().string();
}

std::string leading_bytes(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return s;
}

bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

/// Every FITS file of the CLI goes through io::FitsFile (literal names, RAII, checksums, checked
/// sizes; errors name the file shown to the user).
using FitsHandle = io::FitsFile;

/// Writes the provenance keywords on the current HDU.
void put_keys(const FitsHandle& f, const OutputMeta& meta) {
  for (const Key& k : meta.keys) {
    int st = 0;
    char* comment = const_cast<char*>(k.comment.c_str());
    if (const auto* s = std::get_if<std::string>(&k.value)) {
      if (s->size() > 68)
        fits_update_key_longstr(f.get(), k.name.c_str(), s->c_str(), comment, &st);
      else
        fits_update_key(f.get(), TSTRING, k.name.c_str(), const_cast<char*>(s->c_str()), comment,
                        &st);
    } else if (const auto* i = std::get_if<long long>(&k.value)) {
      long long v = *i;
      fits_update_key(f.get(), TLONGLONG, k.name.c_str(), &v, comment, &st);
    } else {
      double v = std::get<double>(k.value);
      fits_update_key(f.get(), TDOUBLE, k.name.c_str(), &v, comment, &st);
    }
    f.check(st, k.name, "cannot write keyword");
  }
  // The provenance record as HISTORY cards of 70 characters.
  const std::string& p = meta.provenance;
  for (std::size_t i = 0; i < p.size(); i += 70) {
    int st = 0;
    f.check(fits_write_history(f.get(), p.substr(i, 70).c_str(), &st), "HISTORY",
            "cannot write keyword");
  }
}

/// Adds the provenance keywords to every table HDU of a FITS file written by the engine.
void annotate_fits(const std::string& temp, const std::string& shown, const OutputMeta& meta) {
  FitsHandle f = FitsHandle::open(temp, true, shown);
  const int nhdu = f.hdu_count();
  for (int h = 2; h <= nhdu; ++h) {
    f.move(h, "HDU " + std::to_string(h - 1));
    put_keys(f, meta);
  }
  f.close();
}

void put_attrs(io::Hdf5Writer& w, const OutputMeta& meta) {
  w.attr("/", "provenance", meta.provenance);
  for (const Key& k : meta.keys) {
    const std::string name = lower(k.name);
    if (const auto* s = std::get_if<std::string>(&k.value))
      w.attr("/", name, *s);
    else if (const auto* i = std::get_if<long long>(&k.value))
      w.attr("/", name, static_cast<std::int64_t>(*i));
    else
      w.attr("/", name, std::get<double>(k.value));
  }
}

/// Copies an alm vector from band limit `from` to band limit `to` (healpy layout, mmax = lmax).
std::vector<Complex> relayout(const std::vector<Complex>& a, int from, int to) {
  if (from == to) return a;
  std::vector<Complex> out(sht::alm_size(to), 0.0);
  const int L = std::min(from, to);
  for (int m = 0; m <= L; ++m)
    for (int l = m; l <= L; ++l) out[sht::alm_index(to, l, m)] = a[sht::alm_index(from, l, m)];
  return out;
}

void nested_to_ring(sht::HealpixMap& m, const std::string& path) {
  if (!is_pow2(m.nside))
    throw IoError(path, "/map nside", "NESTED ordering needs a power-of-two nside, got " +
                                          std::to_string(m.nside));
  if (!m.partial()) {
    for (auto& c : m.columns) c = sht::nest_to_ring(c, m.nside);
  } else {
    std::vector<std::int64_t> rp(m.pixels.size());
    for (std::size_t i = 0; i < rp.size(); ++i) rp[i] = sht::nest2ring(m.nside, m.pixels[i]);
    std::vector<std::size_t> order(rp.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return rp[a] < rp[b]; });
    for (auto& c : m.columns) {
      std::vector<double> nc(c.size());
      for (std::size_t i = 0; i < c.size(); ++i) nc[i] = c[order[i]];
      c = std::move(nc);
    }
    for (std::size_t i = 0; i < rp.size(); ++i) m.pixels[i] = rp[order[i]];
  }
  m.ordering = sht::Ordering::Ring;
}

}  // namespace

void require_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw IoError(path, "", "file does not exist");
  if (fs::is_directory(path, ec)) throw IoError(path, "", "is a directory, not a file");
  if (::access(path.c_str(), R_OK) != 0) throw IoError(path, "", "file is not readable");
}

Format input_format(const std::string& path) {
  const std::string ext = extension(path);
  if (ext == ".h5" || ext == ".hdf5" || ext == ".he5") return Format::Hdf5;
  if (leading_bytes(path, 8) == std::string("\x89HDF\r\n\x1a\n", 8)) return Format::Hdf5;
  return Format::Fits;
}

Format output_format(const std::string& path, const std::string& requested, bool text_allowed,
                     const std::string& field) {
  const std::string r = lower(requested);
  Format f;
  if (r == "fits") {
    f = Format::Fits;
  } else if (r == "hdf5" || r == "h5") {
    f = Format::Hdf5;
  } else if (r == "text" || r == "txt") {
    f = Format::Text;
  } else if (r == "auto") {
    const std::string ext = extension(path);
    if (ext == ".h5" || ext == ".hdf5" || ext == ".he5")
      f = Format::Hdf5;
    else if (ext == ".txt" || ext == ".dat" || ext == ".csv")
      f = text_allowed ? Format::Text : Format::Fits;
    else
      f = Format::Fits;
  } else {
    throw ConfigError(field, "unknown format '" + requested +
                                      "' (expected auto, fits, hdf5" +
                                      (text_allowed ? ", text)" : ")"));
  }
  if (f == Format::Text && !text_allowed)
    throw ConfigError(field, "text output is only available for spectra (sht cl)");
  return f;
}

bool holds_alm(const std::string& path) {
  require_file(path);
  if (input_format(path) == Format::Hdf5) {
    io::Hdf5Reader r(path);
    return r.exists("/alm") && !r.exists("/map");
  }
  FitsHandle f = FitsHandle::open(path);
  int type = 0;
  if (!f.try_move(2, &type, "HDU 1") || type != BINARY_TBL) return false;
  std::string name;
  if (!f.read_key("TTYPE1", name)) return false;
  return lower(name) == "index";
}

int probe_map_nside(const std::string& path) {
  require_file(path);
  if (input_format(path) == Format::Hdf5) {
    io::Hdf5Reader r(path);
    if (!r.exists("/map")) return -1;
    const std::int64_t n = r.read_attr_int64("/map", "nside");
    return n >= 1 && n <= 8192 ? static_cast<int>(n) : -1;
  }
  FitsHandle f = FitsHandle::open(path);
  int type = 0;
  if (!f.try_move(2, &type, "HDU 1") || type != BINARY_TBL) return -1;
  long long n = 0;
  if (!f.read_key("NSIDE", n)) return -1;
  return n >= 1 && n <= 8192 ? static_cast<int>(n) : -1;
}

sht::HealpixMap read_map(const std::string& path) {
  require_file(path);
  const bool hdf5 = input_format(path) == Format::Hdf5;
  sht::HealpixMap m = hdf5 ? sht::read_map_hdf5(path) : sht::read_healpix_map(path, true);
  const std::string nside_key = hdf5 ? "/map nside" : "NSIDE";
  if (m.nside < 1 || m.nside > 8192)
    throw IoError(path, nside_key, "is " + std::to_string(m.nside) +
                                       "; the transforms support NSIDE 1..8192");
  if (m.ordering == sht::Ordering::Nested) nested_to_ring(m, path);
  if (m.columns.empty()) throw IoError(path, hdf5 ? "/map" : "TFIELDS", "no map columns");
  if (m.partial())
    for (std::size_t i = 1; i < m.pixels.size(); ++i)
      if (m.pixels[i] == m.pixels[i - 1])
        throw IoError(path, hdf5 ? "/pixels" : "PIXEL",
                      "pixel " + std::to_string(m.pixels[i]) + " is listed twice");
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    const std::string name =
        hdf5 ? "/map row " + std::to_string(c)
             : (c < m.names.size() && !m.names[c].empty() ? m.names[c] : "column " + std::to_string(c + 1));
    for (std::size_t i = 0; i < m.columns[c].size(); ++i) {
      double& x = m.columns[c][i];
      if (std::isnan(x)) x = sht::kUnseen;
      if (std::isinf(x))
        throw IoError(path, name, fmt::format("value {} at pixel {} is not finite", x,
                                              m.partial() ? m.pixels[i] : static_cast<std::int64_t>(i)));
    }
  }
  return m;
}

int count_alm_sets(const std::string& path) {
  require_file(path);
  if (input_format(path) == Format::Hdf5) {
    io::Hdf5Reader r(path);
    if (!r.exists("/alm")) throw IoError(path, "/alm", "dataset missing (not an alm file)");
    const auto shape = r.shape("/alm");
    if (shape.size() != 3 || shape[2] != 2)
      throw IoError(path, "/alm", "expected shape [nsets][nalm][2]");
    return static_cast<int>(shape[0]);
  }
  FitsHandle f = FitsHandle::open(path);
  const int nhdu = f.hdu_count();
  if (nhdu < 2) throw IoError(path, "HDU 1", "no alm table (the file has no extension)");
  return nhdu - 1;
}

std::vector<std::vector<Complex>> read_alm_sets(const std::string& path,
                                                const std::vector<int>& which, int lmax,
                                                int& lmax_out) {
  const int nsets = count_alm_sets(path);
  const bool hdf5 = input_format(path) == Format::Hdf5;
  for (int w : which)
    if (w < 0 || w >= nsets)
      throw IoError(path, hdf5 ? "/alm" : "HDU " + std::to_string(w + 1),
                    fmt::format("the file holds {} alm set{}; set {} (0-based) was asked for", nsets,
                                nsets == 1 ? "" : "s", w));
  std::vector<std::vector<Complex>> sets;
  std::vector<int> lfound;
  if (hdf5) {
    int lf = 0;
    auto all = sht::read_alm_hdf5(path, &lf);
    for (int w : which) {
      sets.push_back(std::move(all[static_cast<std::size_t>(w)]));
      lfound.push_back(lf);
    }
  } else {
    // A requested lmax sizes the sets directly (entries above it dropped); without one, the
    // engine bounds the largest l of INDEX by the table's rows.
    for (int w : which) {
      int lf = 0;
      sets.push_back(sht::read_alm(path, w + 1, lmax, &lf));
      lfound.push_back(lf);
    }
  }
  const int L = lmax >= 0 ? lmax : *std::max_element(lfound.begin(), lfound.end());
  for (std::size_t i = 0; i < sets.size(); ++i) {
    sets[i] = relayout(sets[i], lfound[i], L);
    for (const Complex& a : sets[i])
      if (!std::isfinite(a.real()) || !std::isfinite(a.imag()))
        throw IoError(path, hdf5 ? "/alm" : "HDU " + std::to_string(which[i] + 1) + " REAL/IMAG",
                      "an alm value is not finite");
  }
  lmax_out = L;
  return sets;
}

std::vector<std::int64_t> read_mask(const std::string& path, int nside) {
  require_file(path);
  const std::int64_t npix = sht::npix_of(nside);
  const std::string ext = extension(path);
  const bool text = (ext == ".txt" || ext == ".dat" || ext == ".csv") ||
                    (input_format(path) == Format::Fits && leading_bytes(path, 9) != "SIMPLE  =" &&
                     ext != ".fits" && ext != ".fit" && ext != ".fts");
  std::vector<std::int64_t> obs;
  if (text) {
    // A regular file of bounded size, every row terminated (a cut index would be another pixel).
    const std::string text = io::read_text_file(path, "pixel list");
    io::TextLines lines(text);
    std::string_view view;
    std::string line;
    std::size_t lineno = 0;
    while (lines.next(view)) {
      lineno = lines.number();
      line.assign(view);
      const auto h = line.find('#');
      if (h != std::string::npos) line.erase(h);
      else if (line.find_first_not_of(" \t,;") != std::string::npos && line.back() != ';')
        lines.require_terminated(path);
      for (char& c : line)
        if (c == ',' || c == ';') c = ' ';
      std::istringstream ls(line);
      std::string tok;
      while (ls >> tok) {
        std::size_t used = 0;
        long long v = -1;
        try {
          v = std::stoll(tok, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != tok.size())
          throw IoError(path, "line " + std::to_string(lineno), "'" + tok + "' is not a pixel index");
        if (v < 0 || v >= npix)
          throw IoError(path, "line " + std::to_string(lineno),
                        fmt::format("pixel {} is outside 0..{} (NSIDE {})", v, npix - 1, nside));
        obs.push_back(v);
      }
    }
    std::sort(obs.begin(), obs.end());
    obs.erase(std::unique(obs.begin(), obs.end()), obs.end());
    if (obs.empty()) throw IoError(path, "", "the pixel list is empty");
    return obs;
  }
  const sht::HealpixMap m = read_map(path);
  const bool hdf5 = input_format(path) == Format::Hdf5;
  if (m.nside != nside)
    throw IoError(path, hdf5 ? "/map nside" : "NSIDE",
                  fmt::format("is {}, but the map's NSIDE is {}", m.nside, nside));
  const auto& v = m.columns[0];
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i]) && v[i] != 0.0 && v[i] != sht::kUnseen)
      obs.push_back(m.partial() ? m.pixels[i] : static_cast<std::int64_t>(i));
  if (obs.empty())
    throw IoError(path, m.names.empty() ? "" : m.names[0],
                  "no observed pixel (every value is zero or UNSEEN)");
  return obs;
}

void write_map(const std::string& path, Format format, const sht::HealpixMap& map,
               const OutputMeta& meta) {
  sht::require_finite_map(path, map);  // a non-finite result is an error, never a file
  if (format == Format::Hdf5) {
    const std::size_t n = map.columns.at(0).size();
    std::vector<double> flat;
    flat.reserve(n * map.columns.size());
    for (const auto& c : map.columns) flat.insert(flat.end(), c.begin(), c.end());
    // The layout of sht::write_map_hdf5 (read back by sht::read_map_hdf5) plus provenance.
    io::Hdf5Writer w(path);
    w.write("/map", flat, {map.columns.size(), n});
    w.attr("/map", "nside", static_cast<std::int64_t>(map.nside));
    w.attr("/map", "ordering", std::string(map.ordering == sht::Ordering::Ring ? "RING" : "NESTED"));
    std::string names;
    for (std::size_t i = 0; i < map.names.size(); ++i) names += (i ? "," : "") + map.names[i];
    w.attr("/map", "names", names);
    w.attr("/map", "coordsys", map.coordsys);
    if (map.partial()) w.write("/pixels", map.pixels);
    put_attrs(w, meta);
    w.commit();
    return;
  }
  AtomicFile af(path);
  sht::write_healpix_map(af.temp_path(), map);
  annotate_fits(af.temp_path(), path, meta);
  af.commit();
}

void write_alm(const std::string& path, Format format,
               const std::vector<std::vector<Complex>>& sets, int lmax, const OutputMeta& meta) {
  sht::require_finite_alm(path, sets, lmax);  // a non-finite result is an error, never a file
  if (format == Format::Hdf5) {
    const std::size_t n = sht::alm_size(lmax);
    std::vector<double> flat;
    flat.reserve(2 * n * sets.size());
    for (const auto& s : sets)
      for (const auto& a : s) {
        flat.push_back(a.real());
        flat.push_back(a.imag());
      }
    // The layout of sht::write_alm_hdf5 (read back by sht::read_alm_hdf5) plus provenance.
    io::Hdf5Writer w(path);
    w.write("/alm", flat, {sets.size(), n, 2});
    w.attr("/alm", "lmax", static_cast<std::int64_t>(lmax));
    w.attr("/alm", "mmax", static_cast<std::int64_t>(lmax));
    w.attr("/alm", "layout",
           std::string("healpy triangular: index(l,m) = m(2lmax+1-m)/2 + l; last axis (re, im)"));
    put_attrs(w, meta);
    w.commit();
    return;
  }
  AtomicFile af(path);
  sht::write_alm(af.temp_path(), sets, lmax);
  annotate_fits(af.temp_path(), path, meta);
  af.commit();
}

void write_cl(const std::string& path, Format format, const std::vector<std::string>& labels,
              const std::vector<std::vector<double>>& cl, const OutputMeta& meta) {
  const std::size_t nl = cl.at(0).size();
  for (std::size_t i = 0; i < cl.size(); ++i)  // a non-finite result is an error, never a file
    for (std::size_t l = 0; l < cl[i].size(); ++l)
      if (!std::isfinite(cl[i][l]))
        throw IoError(path, i < labels.size() ? labels[i] : "spectrum " + std::to_string(i),
                      fmt::format("the result is not finite ({} at l = {}, the first such value); "
                                  "the spectra were not written", cl[i][l], l));
  std::string joined;
  for (std::size_t i = 0; i < labels.size(); ++i) joined += (i ? "," : "") + labels[i];
  if (format == Format::Text) {
    std::string s = "# angular power spectra C_l (healpy conventions), written by almagest-cli\n";
    s += "# provenance: " + meta.provenance + "\n";
    s += "# l";
    for (const auto& l : labels) s += " " + l;
    s += "\n";
    for (std::size_t l = 0; l < nl; ++l) {
      s += std::to_string(l);
      for (const auto& c : cl) s += fmt::format(" {:.17g}", c[l]);
      s += "\n";
    }
    write_text_atomic(path, s);
    return;
  }
  if (format == Format::Hdf5) {
    io::Hdf5Writer w(path);
    std::vector<double> flat;
    for (const auto& c : cl) flat.insert(flat.end(), c.begin(), c.end());
    w.write("/cl", flat, {cl.size(), nl});
    w.attr("/cl", "spectra", joined);
    w.attr("/cl", "lmax", static_cast<std::int64_t>(nl - 1));
    w.attr("/cl", "description", std::string("C_l = sum_m Re(a_lm b_lm*) / (2l + 1), healpy alm2cl"));
    std::vector<std::int64_t> ell(nl);
    std::iota(ell.begin(), ell.end(), std::int64_t{0});
    w.write("/ell", ell);
    put_attrs(w, meta);
    w.commit();
    return;
  }
  // healpy write_cl: column names by position for the (T, E, B) spectra in anafast's order.
  std::vector<std::string> names;
  static const char* healpy_names[] = {"TEMPERATURE", "GRADIENT", "CURL", "G-T", "C-T", "C-G"};
  const bool tbe = !labels.empty() && labels[0] == "TT";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (tbe && i < 6) names.emplace_back(healpy_names[i]);
    else if (labels[i] == "EE") names.emplace_back("GRADIENT");
    else if (labels[i] == "BB") names.emplace_back("CURL");
    else if (labels[i] == "EB") names.emplace_back("C-G");
    else names.push_back(labels[i]);
  }
  AtomicFile af(path);
  {
    FitsHandle f = FitsHandle::create(af.temp_path(), path);
    int st = 0;
    f.check(fits_create_img(f.get(), 8, 0, nullptr, &st), "PRIMARY", "cannot write the primary HDU");
    std::vector<std::string> tform(names.size(), "D");
    std::vector<char*> tt, tf, tu;
    char empty[] = "";
    for (std::size_t i = 0; i < names.size(); ++i) {
      tt.push_back(names[i].data());
      tf.push_back(tform[i].data());
      tu.push_back(empty);
    }
    f.check(fits_create_tbl(f.get(), BINARY_TBL, static_cast<LONGLONG>(nl),
                            static_cast<int>(names.size()), tt.data(), tf.data(), tu.data(),
                            nullptr, &st),
            "BINTABLE", "cannot create the table");
    f.check(fits_update_key(f.get(), TSTRING, "SPECTRA", joined.data(),
                            const_cast<char*>("spectra in column order"), &st),
            "SPECTRA", "cannot write keyword");
    for (std::size_t i = 0; i < cl.size(); ++i)
      f.check(fits_write_col(f.get(), TDOUBLE, static_cast<int>(i + 1), 1, 1,
                             static_cast<LONGLONG>(nl), const_cast<double*>(cl[i].data()), &st),
              names[i], "cannot write column");
    put_keys(f, meta);
    f.close();
  }
  af.commit();
}

}  // namespace almagest::sht::files

namespace almagest::sht {

const char* to_string(FileFormat f) {
  switch (f) {
    case FileFormat::Hdf5: return "HDF5";
    case FileFormat::Text: return "text";
    default: return "FITS";
  }
}

}  // namespace almagest::sht
