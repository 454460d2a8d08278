#include "app/Export.hpp"

#include <QAbstractItemModel>
#include <QAbstractItemView>
#include <QAction>
#include <QBuffer>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QImageWriter>
#include <QMenu>
#include <QMessageBox>
#include <QOpenGLWidget>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QTextDocument>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

#include "almagest/core/provenance.hpp"

namespace almagest::ui::app {

namespace {

QString software() { return QStringLiteral("Almagest %1").arg(QString::fromStdString(almagest::version())); }

bool fail(QString* error, const QString& path, const QString& message) {
  if (error) *error = QStringLiteral("%1: %2").arg(path, message);
  return false;
}

bool writeAtomically(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return fail(error, path, f.errorString());
  if (f.write(bytes) != bytes.size()) return fail(error, path, f.errorString());
  if (!f.commit()) return fail(error, path, f.errorString());
  return true;
}

bool isGl(const QWidget* w) { return qobject_cast<const QOpenGLWidget*>(w) != nullptr; }

/// The widget's frame as an image: the GL frame buffer for a QOpenGLWidget (grab() of a GL
/// widget may be empty on some platforms), else the widget's own painting.
QImage frameOf(QWidget* view) {
  if (auto* gl = qobject_cast<QOpenGLWidget*>(view)) return gl->grabFramebuffer();
  return view->grab().toImage();
}

QString oneLine(QString s) {
  s.replace(QLatin1Char('\r'), QLatin1Char(' '));
  s.replace(QLatin1Char('\n'), QLatin1Char(' '));
  return s;
}

QString xmlEscape(const QString& s) { return s.toHtmlEscaped(); }

/// Inserts a <metadata> element holding the provenance after the SVG's <desc> (or its opening
/// <svg> tag).
QByteArray addSvgMetadata(QByteArray svg, const ExportMeta& meta) {
  const QByteArray element = "<metadata id=\"almagest-provenance\">" +
                             xmlEscape(meta.provenance).toUtf8() + "</metadata>\n";
  int at = svg.indexOf("</desc>");
  if (at >= 0) at += 7;
  else {
    at = svg.indexOf("<svg");
    at = at >= 0 ? svg.indexOf('>', at) + 1 : 0;
  }
  svg.insert(at, "\n" + element);
  return svg;
}

}  // namespace

QString plainTitle(const QString& title) {
  static const QRegularExpression br(QStringLiteral("<\\s*br\\s*/?\\s*>"), QRegularExpression::CaseInsensitiveOption);
  static const QRegularExpression tag(QStringLiteral("<[^<>]*>"));
  if (!Qt::mightBeRichText(title) && !br.match(title).hasMatch()) return oneLine(title);
  QString s = title;
  s.replace(br, QStringLiteral(" "));
  s.remove(tag);
  // Entities (after the tags, so that a decoded "&lt;b&gt;" stays text).
  s.replace(QStringLiteral("&nbsp;"), QStringLiteral(" "));
  s.replace(QStringLiteral("&lt;"), QStringLiteral("<"));
  s.replace(QStringLiteral("&gt;"), QStringLiteral(">"));
  s.replace(QStringLiteral("&quot;"), QStringLiteral("\""));
  s.replace(QStringLiteral("&#39;"), QStringLiteral("'"));
  s.replace(QStringLiteral("&amp;"), QStringLiteral("&"));
  return oneLine(s).simplified();
}

QStringList exportFormats(const QWidget* view) {
  if (qobject_cast<const QAbstractItemView*>(view)) return {QStringLiteral("csv")};
  return {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")};
}

bool exportImage(const QImage& image, const QString& path, const ExportMeta& meta, QString* error) {
  if (image.isNull()) return fail(error, path, QStringLiteral("nothing to export (the view has no frame yet)"));
  QImage img = image;
  img.setText(QStringLiteral("Title"), plainTitle(meta.title));
  img.setText(QStringLiteral("Software"), software());
  if (!meta.provenance.isEmpty()) img.setText(QStringLiteral("Provenance"), meta.provenance);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QImageWriter writer(&buffer, "png");
  if (!writer.write(img)) return fail(error, path, writer.errorString());
  return writeAtomically(path, bytes, error);
}

bool exportView(QWidget* view, const QString& path, const ExportMeta& meta, QString* error) {
  const QString ext = QFileInfo(path).suffix().toLower();
  if (qobject_cast<QAbstractItemView*>(view)) {
    if (ext != QLatin1String("csv")) return fail(error, path, QStringLiteral("a table exports as .csv"));
    return exportTable(static_cast<QAbstractItemView*>(view)->model(), path, meta, error);
  }
  if (ext == QLatin1String("png")) return exportImage(frameOf(view), path, meta, error);
  const QSize size = view->size();
  if (size.isEmpty()) return fail(error, path, QStringLiteral("the view has no size (not shown)"));
  if (ext == QLatin1String("svg")) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(plainTitle(meta.title));
    svg.setDescription(software() + (meta.provenance.isEmpty() ? QString() : QStringLiteral("; provenance: ") + meta.provenance));
    {
      QPainter p(&svg);
      if (isGl(view)) p.drawImage(QRect(QPoint(0, 0), size), frameOf(view));
      else view->render(&p, QPoint(), QRegion(), QWidget::DrawChildren);
    }
    return writeAtomically(path, addSvgMetadata(bytes, meta), error);
  }
  if (ext == QLatin1String("pdf")) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    {
      QPdfWriter pdf(&buffer);
      pdf.setTitle(plainTitle(meta.title));
      pdf.setCreator(software() + (meta.provenance.isEmpty() ? QString() : QStringLiteral("; provenance: ") + oneLine(meta.provenance)));
      pdf.setResolution(96);
      pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
      pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
      QPainter p(&pdf);
      const QRect target(QPoint(0, 0), QSize(pdf.width(), pdf.height()));
      if (isGl(view)) {
        p.drawImage(target, frameOf(view));
      } else {
        p.scale(double(pdf.width()) / size.width(), double(pdf.height()) / size.height());
        view->render(&p, QPoint(), QRegion(), QWidget::DrawChildren);
      }
    }
    return writeAtomically(path, bytes, error);
  }
  return fail(error, path, QStringLiteral("unknown export format '.%1' (use .png, .svg or .pdf)").arg(ext));
}

bool exportTable(const QAbstractItemModel* model, const QString& path, const ExportMeta& meta, QString* error) {
  if (!model) return fail(error, path, QStringLiteral("no table to export"));
  auto csv = [](QString s) {
    if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n'))) {
      s.replace(QStringLiteral("\""), QStringLiteral("\"\""));
      s = QLatin1Char('"') + s + QLatin1Char('"');
    }
    return s;
  };
  QString out;
  out += QStringLiteral("# %1\n").arg(plainTitle(meta.title));
  out += QStringLiteral("# software: %1\n").arg(software());
  if (!meta.provenance.isEmpty()) out += QStringLiteral("# provenance: %1\n").arg(oneLine(meta.provenance));
  const int rows = model->rowCount(), cols = model->columnCount();
  QStringList header;
  for (int c = 0; c < cols; ++c) header << csv(model->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
  out += header.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < rows; ++r) {
    QStringList line;
    for (int c = 0; c < cols; ++c) line << csv(model->index(r, c).data(Qt::DisplayRole).toString());
    out += line.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return writeAtomically(path, out.toUtf8(), error);
}

void exportWithDialog(QWidget* view, const std::function<ExportMeta()>& meta, const QString& suggestedName) {
  const QStringList formats = exportFormats(view);
  QStringList filters;
  for (const QString& f : formats) filters << QObject::tr("%1 (*.%2)").arg(f.toUpper(), f);
  QString selected;
  const QString name = (suggestedName.isEmpty() ? QStringLiteral("almagest-export") : suggestedName) +
                       QLatin1Char('.') + formats.first();
  QString path = QFileDialog::getSaveFileName(view->window(), QObject::tr("Export"), name,
                                              filters.join(QStringLiteral(";;")), &selected);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + formats.value(filters.indexOf(selected), formats.first());
  QString error;
  if (!exportView(view, path, meta(), &error)) {
    auto* box = new QMessageBox(QMessageBox::Warning, QObject::tr("Export failed"), error, QMessageBox::Ok, view->window());
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
  }
}

void installExportMenu(QWidget* view, std::function<ExportMeta()> meta, const QString& suggestedName) {
  auto* action = new QAction(qobject_cast<QAbstractItemView*>(view) ? QObject::tr("Export as CSV…")
                                                                      : QObject::tr("Export as PNG, SVG or PDF…"),
                             view);
  action->setObjectName(QStringLiteral("exportAction"));
  QObject::connect(action, &QAction::triggered, view,
                   [view, meta = std::move(meta), suggestedName] { exportWithDialog(view, meta, suggestedName); });
  view->setContextMenuPolicy(Qt::ActionsContextMenu);
  view->addAction(action);
}

}  // namespace almagest::ui::app
