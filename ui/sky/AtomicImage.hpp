#pragma once
// Writes a QImage through the output layer (core/atomic_file.hpp): the PNG (or any format Qt
// writes, chosen by the destination's suffix) goes to a temporary that is renamed over the
// destination only when complete, so a failed or cancelled save leaves nothing behind.
#include <QImage>
#include <QString>

namespace almagest::ui {

/// False with `error` (file and reason) when the image is null, the suffix is not a format Qt
/// writes, or the destination cannot be written.
bool saveImageAtomic(const QImage& image, const QString& path, QString* error = nullptr);

}  // namespace almagest::ui
