// read_provenance: the provenance record of an output of any engine, from the container it is
// in (almagest/jobs/batch.hpp). The engines write it as
//   HDF5  root attribute "provenance" (npcf results, sht maps/alm/C_l, stack candidates)
//   FITS  HISTORY cards of 70 characters on the table HDUs (sht maps, alm, C_l)
//   text  a "# provenance: {...}" header line (npcf GRAMSCI text, sht C_l text) or an ECSV meta
//         entry "# - {provenance: '...'}" with '' for ' (stack candidates)
#include <fitsio.h>

#include <cstring>
#include <fstream>

#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/jobs/batch.hpp"

namespace almagest::jobs {

namespace {

std::string leading(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "", "cannot open to read its provenance");
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return s;
}

std::string from_fits(const std::string& path) {
  io::FitsFile f = io::FitsFile::open(path);
  const int nhdu = f.hdu_count();
  for (int h = 1; h <= nhdu; ++h) {
    int type = 0;
    if (!f.try_move(h, &type, "HDU " + std::to_string(h - 1))) break;
    int nkeys = 0, more = 0, st = 0;
    f.check(fits_get_hdrspace(f.get(), &nkeys, &more, &st), "HISTORY", "cannot read the header");
    std::string text;
    for (int k = 1; k <= nkeys; ++k) {
      char card[FLEN_CARD] = {0};
      f.check(fits_read_record(f.get(), k, card, &st), "HISTORY", "cannot read a header card");
      if (std::strncmp(card, "HISTORY ", 8) != 0) continue;
      // The writer cuts the record into chunks of 70 characters; cfitsio pads each card with
      // blanks, so every chunk is taken at its full width and only the end is trimmed.
      std::string body(card + 8);
      body.resize(70, ' ');
      text += body;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (!text.empty() && text.front() == '{') return text;
  }
  throw IoError(path, "HISTORY", "no provenance record in any HDU");
}

std::string from_text(const std::string& path) {
  // The provenance is a header line: read the header only (at most 4 MiB).
  const std::string head = leading(path, std::size_t{4} << 20);
  std::size_t pos = 0;
  while (pos < head.size()) {
    std::size_t end = head.find('\n', pos);
    if (end == std::string::npos) end = head.size();
    std::string_view line(head.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() != '#') {
      if (line.empty()) continue;
      break;  // the data rows begin: no provenance in the header
    }
    constexpr std::string_view plain = "# provenance: ";
    constexpr std::string_view ecsv = "# - {provenance: '";
    if (line.substr(0, plain.size()) == plain) return std::string(line.substr(plain.size()));
    if (line.substr(0, ecsv.size()) == ecsv) {
      std::string_view body = line.substr(ecsv.size());
      if (body.size() >= 2 && body.substr(body.size() - 2) == "'}") body.remove_suffix(2);
      std::string out;
      for (std::size_t i = 0; i < body.size(); ++i) {
        out += body[i];
        if (body[i] == '\'' && i + 1 < body.size() && body[i + 1] == '\'') ++i;
      }
      return out;
    }
  }
  throw IoError(path, "provenance", "no provenance line in the file's header");
}

}  // namespace

Provenance read_provenance(const std::string& path) {
  const std::string magic = leading(path, 9);
  std::string json;
  if (magic.size() >= 8 && std::memcmp(magic.data(), "\x89HDF\r\n\x1a\n", 8) == 0) {
    io::Hdf5Reader in(path);
    if (!in.has_attr("/", "provenance")) throw IoError(path, "/ provenance", "the file has no provenance attribute");
    json = in.read_attr_string("/", "provenance");
  } else if (magic == "SIMPLE  =") {
    json = from_fits(path);
  } else {
    json = from_text(path);
  }
  Provenance p = Provenance::from_json(json);
  if (p.software.empty() && p.config_json.empty() && p.inputs.empty())
    throw IoError(path, "provenance", "the provenance record is not a JSON object");
  return p;
}

}  // namespace almagest::jobs
