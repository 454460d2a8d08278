#include "app/FileKind.hpp"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QSet>

#include <cstdlib>
#include <exception>

#include "almagest/io/hdf5_file.hpp"

namespace almagest::ui::app {

namespace {

constexpr qint64 kBlock = 2880;
constexpr int kMaxHdus = 16;
constexpr int kMaxHeaderBlocks = 64;  // 2,304 cards: far beyond any header Almagest reads

struct Hdu {
  QMap<QString, QString> keys;  // keyword -> value text (quotes removed)
  QSet<QString> columns;        // TTYPEn values, upper case
};

QString cardValue(const QByteArray& card) {
  QString v = QString::fromLatin1(card.mid(10)).trimmed();
  if (v.startsWith(QLatin1Char('\''))) {
    const int end = v.indexOf(QLatin1Char('\''), 1);
    return (end > 0 ? v.mid(1, end - 1) : v.mid(1)).trimmed();
  }
  const int slash = v.indexOf(QLatin1Char('/'));
  return (slash >= 0 ? v.left(slash) : v).trimmed();
}

/// Headers of the first HDUs (no data read); false when not FITS.
bool readFitsHeaders(QFile& f, QList<Hdu>* hdus) {
  qint64 pos = 0;
  const qint64 size = f.size();
  for (int h = 0; h < kMaxHdus && pos + kBlock <= size; ++h) {
    Hdu hdu;
    bool end = false;
    for (int b = 0; b < kMaxHeaderBlocks && !end; ++b) {
      if (!f.seek(pos)) return h > 0;
      const QByteArray block = f.read(kBlock);
      if (block.size() != kBlock) return h > 0;
      pos += kBlock;
      for (int c = 0; c < 36; ++c) {
        const QByteArray card = block.mid(c * 80, 80);
        const QString key = QString::fromLatin1(card.left(8)).trimmed();
        if (h == 0 && b == 0 && c == 0 && key != QLatin1String("SIMPLE")) return false;
        if (key == QLatin1String("END")) {
          end = true;
          break;
        }
        if (card.size() < 10 || card[8] != '=') continue;
        const QString value = cardValue(card);
        hdu.keys.insert(key, value);
        if (key.startsWith(QLatin1String("TTYPE"))) hdu.columns.insert(value.toUpper());
      }
    }
    if (!end) return h > 0;
    hdus->append(hdu);
    // Skip the data: |BITPIX|/8 * GCOUNT * (PCOUNT + prod NAXISn), rounded up to blocks.
    const long long bitpix = std::llabs(hdu.keys.value(QStringLiteral("BITPIX")).toLongLong());
    const int naxis = hdu.keys.value(QStringLiteral("NAXIS")).toInt();
    long double n = naxis > 0 ? 1 : 0;
    for (int k = 1; k <= naxis && k <= 999; ++k) n *= hdu.keys.value(QStringLiteral("NAXIS%1").arg(k)).toLongLong();
    const long long pcount = hdu.keys.value(QStringLiteral("PCOUNT")).toLongLong();
    const long long gcount = hdu.keys.contains(QStringLiteral("GCOUNT")) ? hdu.keys.value(QStringLiteral("GCOUNT")).toLongLong() : 1;
    const long double bytes = (bitpix / 8) * gcount * (pcount + n);
    if (bytes < 0 || bytes > static_cast<long double>(size)) break;  // claims more than the file
    pos += (static_cast<qint64>(bytes) + kBlock - 1) / kBlock * kBlock;
  }
  return !hdus->isEmpty();
}

FileSniff sniffFits(QFile& f) {
  QList<Hdu> hdus;
  if (!readFitsHeaders(f, &hdus)) return {FileKind::Unknown, QStringLiteral("not a FITS file (no SIMPLE card)")};
  int images = 0;
  for (int i = 0; i < hdus.size(); ++i) {
    const Hdu& h = hdus[i];
    if (h.keys.value(QStringLiteral("PIXTYPE")).toUpper() == QLatin1String("HEALPIX") ||
        (h.keys.contains(QStringLiteral("NSIDE")) && h.keys.contains(QStringLiteral("ORDERING"))))
      return {FileKind::HealpixMap, QStringLiteral("FITS: HDU %1 is a HEALPix map").arg(i)};
    if (h.keys.contains(QStringLiteral("NUMIMG")) || h.keys.value(QStringLiteral("EXTNAME")).startsWith(QLatin1String("SCI")))
      return {FileKind::Stack, QStringLiteral("FITS: HDU %1 is an exposure of a stack").arg(i)};
    const bool image = (i == 0 || h.keys.value(QStringLiteral("XTENSION")) == QLatin1String("IMAGE")) &&
                       h.keys.value(QStringLiteral("NAXIS")).toInt() >= 2;
    if (image && h.keys.value(QStringLiteral("NAXIS")).toInt() == 3)
      return {FileKind::Stack, QStringLiteral("FITS: HDU %1 is a data cube").arg(i)};
    images += image ? 1 : 0;
    if (h.keys.value(QStringLiteral("XTENSION")) == QLatin1String("BINTABLE")) {
      const auto& c = h.columns;
      if ((c.contains(QStringLiteral("RA")) && c.contains(QStringLiteral("DEC"))) ||
          (c.contains(QStringLiteral("X")) && c.contains(QStringLiteral("Y")) && c.contains(QStringLiteral("Z"))))
        return {FileKind::Catalogue, QStringLiteral("FITS: HDU %1 is a table of positions").arg(i)};
    }
  }
  if (images >= 2) return {FileKind::Stack, QStringLiteral("FITS: %1 image HDUs").arg(images)};
  return {FileKind::Unknown, QStringLiteral("FITS: no HEALPix map, stack or catalogue table found")};
}

FileSniff sniffHdf5(const QString& path) {
  try {
    almagest::io::Hdf5Reader r(path.toStdString());
    auto has = [&r](const char* p) { return r.exists(p); };
    if (has("/estimator")) return {FileKind::NpcfResult, QStringLiteral("HDF5: /estimator")};
    for (const std::string& g : r.list("/")) {
      if (r.exists("/" + g + "/estimator"))
        return {FileKind::NpcfResult, QStringLiteral("HDF5: /%1/estimator").arg(QString::fromStdString(g))};
    }
    if (has("/candidates")) return {FileKind::Candidates, QStringLiteral("HDF5: /candidates")};
    if (has("/sci") || has("/psi") || has("/exposures")) return {FileKind::Stack, QStringLiteral("HDF5: exposure planes")};
    if (has("/map") || has("/pixels")) return {FileKind::HealpixMap, QStringLiteral("HDF5: /map")};
    if ((has("/x") && has("/y") && has("/z")) || (has("/ra") && has("/dec")) || (has("/RA") && has("/DEC")))
      return {FileKind::Catalogue, QStringLiteral("HDF5: position datasets")};
    return {FileKind::Unknown, QStringLiteral("HDF5: no result, map, stack or catalogue datasets")};
  } catch (const std::exception& e) {
    return {FileKind::Unknown, QString::fromUtf8(e.what())};
  }
}

FileSniff sniffText(QFile& f) {
  const QByteArray head = f.read(16384);
  if (head.contains('\0')) return {FileKind::Unknown, QStringLiteral("binary file of unknown format")};
  if (head.contains("GRAMSCI v2 column layout") || head.contains("# statistic:"))
    return {FileKind::NpcfResult, QStringLiteral("text: an N-point result header")};
  return {FileKind::Catalogue, QStringLiteral("text: columns of numbers")};
}

}  // namespace

QString fileKindName(FileKind kind) {
  switch (kind) {
    case FileKind::Catalogue: return QStringLiteral("catalogue");
    case FileKind::NpcfResult: return QStringLiteral("N-point result");
    case FileKind::HealpixMap: return QStringLiteral("HEALPix map");
    case FileKind::Stack: return QStringLiteral("exposure stack");
    case FileKind::Candidates: return QStringLiteral("candidate list");
    case FileKind::Workspace: return QStringLiteral("workspace");
    case FileKind::Unknown: break;
  }
  return QStringLiteral("unknown");
}

FileSniff sniffFile(const QString& path) {
  const QFileInfo info(path);
  if (!info.isFile()) return {FileKind::Unknown, QStringLiteral("not a regular file")};
  const QString name = info.fileName().toLower();
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {FileKind::Unknown, f.errorString()};
  const QByteArray magic = f.peek(8);
  if (magic.startsWith("SIMPLE  ")) return sniffFits(f);
  if (magic == QByteArray("\x89HDF\r\n\x1a\n", 8)) {
    f.close();
    return sniffHdf5(path);
  }
  if (magic.startsWith("\x1f\x8b"))  // gzip: compressed FITS is read by cfitsio as a catalogue or map
    return name.contains(QLatin1String("map")) ? FileSniff{FileKind::HealpixMap, QStringLiteral("gzip, named as a map")}
                                               : FileSniff{FileKind::Catalogue, QStringLiteral("gzip-compressed table")};
  if (name.endsWith(QLatin1String(".ecsv"))) return {FileKind::Candidates, QStringLiteral("ECSV table")};
  if (name.endsWith(QLatin1String(".json"))) {
    if (f.size() > 64 * 1024 * 1024) return {FileKind::Unknown, QStringLiteral("JSON larger than 64 MiB")};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
    if (doc.isObject() && doc.object().contains(QStringLiteral("almagest_workspace")))
      return {FileKind::Workspace, QStringLiteral("JSON: almagest_workspace")};
    return {FileKind::Unknown, QStringLiteral("JSON, not a workspace")};
  }
  return sniffText(f);
}

}  // namespace almagest::ui::app
