#include "sky/AtomicImage.hpp"

#include <QFileInfo>
#include <QImageWriter>

#include "almagest/core/atomic_file.hpp"

namespace almagest::ui {

bool saveImageAtomic(const QImage& image, const QString& path, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = QStringLiteral("%1: %2").arg(path, why);
    return false;
  };
  if (image.isNull()) return fail(QStringLiteral("no image to save"));
  QByteArray format = QFileInfo(path).suffix().toLower().toLatin1();
  if (format.isEmpty()) format = "png";
  if (!QImageWriter::supportedImageFormats().contains(format))
    return fail(QStringLiteral("'%1' is not an image format this build writes (use .png)").arg(QString::fromLatin1(format)));
  try {
    AtomicFile out(path.toStdString());
    QImageWriter w(QString::fromStdString(out.temp_path()), format);
    if (!w.write(image)) return fail(w.errorString());
    out.commit();
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

}  // namespace almagest::ui
