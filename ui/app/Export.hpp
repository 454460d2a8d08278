#pragma once
// Export of what a window shows, with the result's provenance in the file (docs/gui.md,
// "Export"): every chart (QChartView) to PNG, SVG and PDF as vectors where Qt draws it, every 3D
// view (VtkView, a QOpenGLWidget) to PNG, SVG and PDF from its rendered frame, every table to
// CSV. The provenance (the result's Provenance::to_json()) goes where each format keeps text:
//   PNG  text chunks (QImage::setText: Title, Software, Provenance; Qt writes long values as
//        zTXt, the compressed tEXt),
//   SVG  <title>, <desc> (QSvgGenerator) and a <metadata> element with the JSON,
//   PDF  the document title and creator (QPdfWriter),
//   CSV  '#' header lines before the column names (as the engine's text outputs).
// Files are written atomically (QSaveFile): a failed export leaves nothing.
//
//   app::installExportMenu(chartView, [this] { return app::ExportMeta{tr("xi(r)"), provenance}; });
#include <QString>
#include <QStringList>

#include <functional>

class QAbstractItemModel;
class QImage;
class QWidget;

namespace almagest::ui::app {

struct ExportMeta {
  QString title;       ///< what the figure or table shows ("xi(r) of data.txt")
  QString provenance;  ///< the result's provenance (JSON), "" when there is none
};

/// `title` as plain text for file metadata: a chart title is Qt rich text once it wraps
/// ("xi(r) of a long<br>file name"): line breaks become spaces, other tags are dropped and
/// entities (&amp; &lt; ...) decoded. Plain text (no tag) is returned as it is. Every export
/// below writes its title through this.
QString plainTitle(const QString& title);

/// Formats a widget can be exported to ("png", "svg", "pdf"; "csv" for tables).
QStringList exportFormats(const QWidget* view);

/// Writes `view` to `path`, the format from the extension (.png, .svg, .pdf). False with a
/// message naming the file. QChartView and other QWidgets render as vectors in SVG/PDF; a
/// QOpenGLWidget (VtkView) exports its frame buffer.
bool exportView(QWidget* view, const QString& path, const ExportMeta& meta, QString* error);
/// Writes `image` as PNG with the metadata text chunks.
bool exportImage(const QImage& image, const QString& path, const ExportMeta& meta, QString* error);
/// Writes `model` (display text, header row) as CSV with '#' lines for the title and provenance.
bool exportTable(const QAbstractItemModel* model, const QString& path, const ExportMeta& meta, QString* error);

/// Asks for a file (the formats of `view`) and exports; errors in a non-blocking message box.
void exportWithDialog(QWidget* view, const std::function<ExportMeta()>& meta, const QString& suggestedName = {});
/// Adds "Export as PNG/SVG/PDF…" (or "Export as CSV…" for a QAbstractItemView) to `view`'s
/// context menu. `meta` is called when the user exports (the provenance of what is shown then).
void installExportMenu(QWidget* view, std::function<ExportMeta()> meta, const QString& suggestedName = {});

}  // namespace almagest::ui::app
