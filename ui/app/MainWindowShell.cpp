// MainWindow's application-shell members (ui/app/): opening any file in the right view, reading
// result files, workspaces, the remembered session, drag and drop, recent files and export.
// Kept beside MainWindow.cpp (the N-point window itself) so that each stays readable.
#include <QDir>
#include <QChart>
#include <QChartView>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMenu>
#include <QMimeData>
#include <QSplitter>
#include <QUrl>

#include "MainWindow.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/npcf/result.hpp"
#if __has_include("almagest/npcf/read_gramsci.hpp")
#include "almagest/npcf/read_gramsci.hpp"
#define ALMAGEST_HAS_READ_GRAMSCI 1
#endif
#include "app/AppSettings.hpp"
#include "app/Export.hpp"
#include "app/FileKind.hpp"
#include "app/JobQueue.hpp"
#include "app/ViewCamera.hpp"
#include "npcf/CataloguePanel.hpp"
#include "npcf/NpcfViews.hpp"
#include "panels/JobPanel.hpp"
#include "panels/LogPanel.hpp"
#include "sky/SkyMapWindow.hpp"
#include "stackview/StackWindow.hpp"
#include "views/CorrelationChart.hpp"
#include "views/VtkView.hpp"

namespace almagest::ui {

namespace npcf = almagest::npcf;

// ---- the application shell: files, results, workspaces, session, export ----------------------

namespace {
QString b64(const QByteArray& a) { return QString::fromLatin1(a.toBase64()); }
QByteArray unb64(const QJsonValue& v) { return QByteArray::fromBase64(v.toString().toLatin1()); }
}  // namespace

QJsonObject MainWindow::toolState(const QMainWindow* w) {
  if (auto* sky = qobject_cast<const SkyMapWindow*>(w)) return app::skyWindowState(*sky);
  if (auto* st = qobject_cast<const StackWindow*>(w)) return app::stackWindowState(*st);
  return app::genericWindowState(w);
}

bool MainWindow::openPath(const QString& path) {
  const app::FileSniff sniff = app::sniffFile(path);
  const QString name = QFileInfo(path).fileName();
  log_->info(tr("%1: %2 (%3)").arg(name, app::fileKindName(sniff.kind), sniff.why));
  switch (sniff.kind) {
    case app::FileKind::Catalogue: {
      const bool randoms = data_ && name.contains(QLatin1String("random"), Qt::CaseInsensitive);
      return randoms ? loadCatalogues({}, path) : loadCatalogues(path, {});
    }
    case app::FileKind::NpcfResult: return openResult(path);
    case app::FileKind::HealpixMap: {
      rememberFile(path);
      return showSkyMap()->openMap(path);
    }
    case app::FileKind::Stack: {
      rememberFile(path);
      return showMovingObjects()->openStack(path);
    }
    case app::FileKind::Workspace: return openWorkspace(path);
    case app::FileKind::Candidates:
      reportError(tr("Open the stack first"),
                  tr("%1 is a candidate list: open its stack in a Moving objects window and run or load the "
                     "search there.").arg(path));
      return false;
    case app::FileKind::Unknown: break;
  }
  reportError(tr("Unknown file"), tr("%1: not a catalogue, result, map, stack or workspace (%2)").arg(path, sniff.why));
  return false;
}

bool MainWindow::openResult(const QString& path) {
  if (resultRunner_ && !resultRunner_->isFinished()) {
    reportError(tr("Busy"), tr("A result is being read: wait for it before opening another."));
    return false;
  }
  const std::string p = path.toStdString();
  const bool text = app::sniffFile(path).why.startsWith(QLatin1String("text"));
#ifndef ALMAGEST_HAS_READ_GRAMSCI
  if (text) {
    reportError(tr("Cannot read the result"), tr("%1: GRAMSCI text results cannot be read by this build").arg(path));
    return false;
  }
#endif
  auto* runner = new JobRunner(tr("read result"), [p, text](const almagest::JobContext&) -> std::any {
    auto out = std::make_shared<NpcfJobOutput>();
#ifdef ALMAGEST_HAS_READ_GRAMSCI
    out->result = text ? npcf::read_gramsci(p) : npcf::read_hdf5(p);
#else
    (void)text;
    out->result = npcf::read_hdf5(p);
#endif
    out->backend = out->result.provenance.backend;
    return std::any(NpcfOutputPtr(std::move(out)));
  }, this);
  resultRunner_ = runner;
  connect(runner, &JobRunner::logMessage, log_, &LogPanel::append);
  connect(runner, &JobRunner::finished, this, [this, runner, path] { onResultRead(runner, path); });
  JobQueue::instance().submit(runner, QStringLiteral("cpu"), this);
  return true;
}

void MainWindow::onResultRead(JobRunner* runner, const QString& path) {
  runner->deleteLater();
  if (runner->state() == JobRunner::State::Completed) {
    if (const auto* out = runner->resultAs<NpcfOutputPtr>()) {
      result_ = *out;
      resultPath_ = QFileInfo(path).absoluteFilePath();
      chart_->setResult(result_->result, QFileInfo(path).fileName());
      // The result views show the file's result as they show a computed one.
      auto* views = findChild<NpcfViews*>();
      if (views) views->setResult(result_->result);
      cataloguePanel_->setResult(&result_->result);
      if (views && !pendingViews_.isEmpty()) views->restore_state(pendingViews_);  // selections of a workspace
      pendingViews_ = {};
      if (pendingMode_ >= 0) chart_->setMode(static_cast<CorrelationChart::Mode>(pendingMode_));
      pendingMode_ = -1;
      log_->info(tr("Opened %1: %2 rows of %3").arg(path).arg(result_->result.rows())
                     .arg(QString::fromLatin1(npcf::to_string(result_->result.statistic))));
      rememberFile(path);
      updateActions();
    }
  } else if (runner->state() == JobRunner::State::Failed) {
    reportError(tr("Could not read the result"), runner->errorMessage());
  }
}

QJsonObject MainWindow::save_state() const {
  QJsonObject o;
  o[QStringLiteral("kind")] = state_kind();
  o[QStringLiteral("geometry")] = b64(saveGeometry());
  o[QStringLiteral("window_state")] = b64(saveState());
  o[QStringLiteral("splitter")] = b64(splitter_->saveState());
  if (!dataPath_.isEmpty()) o[QStringLiteral("data")] = QFileInfo(dataPath_).absoluteFilePath();
  if (!randomsPath_.isEmpty()) o[QStringLiteral("randoms")] = QFileInfo(randomsPath_).absoluteFilePath();
  if (!resultPath_.isEmpty()) o[QStringLiteral("result")] = resultPath_;
  almagest::schema::Values values = panel_->values();
  values.erase("data");  // the files are above, loaded through the window
  values.erase("randoms");
  o[QStringLiteral("values")] = app::valuesToJson(values);
  o[QStringLiteral("chart_mode")] = static_cast<int>(chart_->mode());
  o[QStringLiteral("camera")] = app::cameraState(view_);
  o[QStringLiteral("catalogue")] = cataloguePanel_->save_state();
  if (result_)
    if (auto* views = findChild<NpcfViews*>()) o[QStringLiteral("views")] = views->save_state();
  return o;
}

void MainWindow::restore_state(const QJsonObject& st) {
  if (st.contains(QStringLiteral("geometry"))) restoreGeometry(unb64(st.value(QStringLiteral("geometry"))));
  if (st.contains(QStringLiteral("window_state"))) restoreState(unb64(st.value(QStringLiteral("window_state"))));
  if (st.contains(QStringLiteral("splitter"))) splitter_->restoreState(unb64(st.value(QStringLiteral("splitter"))));
  app::fitToScreen(this);
  if (st.contains(QStringLiteral("values")))
    panel_->setValues(app::valuesFromJson(st.value(QStringLiteral("values")).toObject(), npcf::npcf_schema()));
  const QString data = st.value(QStringLiteral("data")).toString();
  const QString randoms = st.value(QStringLiteral("randoms")).toString();
  pendingState_ = {};
  pendingViews_ = {};
  if (st.contains(QStringLiteral("camera"))) pendingState_[QStringLiteral("camera")] = st.value(QStringLiteral("camera"));
  if (st.contains(QStringLiteral("catalogue"))) pendingState_[QStringLiteral("catalogue")] = st.value(QStringLiteral("catalogue"));
  if (st.contains(QStringLiteral("views"))) pendingState_[QStringLiteral("views")] = st.value(QStringLiteral("views"));
  if (st.contains(QStringLiteral("result"))) {
    pendingState_[QStringLiteral("result")] = st.value(QStringLiteral("result"));
    pendingState_[QStringLiteral("chart_mode")] = st.value(QStringLiteral("chart_mode"));
  }
  if (!data.isEmpty() || !randoms.isEmpty()) {
    loadCatalogues(data, randoms);  // the camera and the result follow once they are loaded
  } else if (st.contains(QStringLiteral("result"))) {
    pendingMode_ = st.value(QStringLiteral("chart_mode")).toInt(-1);
    pendingViews_ = st.value(QStringLiteral("views")).toObject();
    pendingState_ = {};
    openResult(st.value(QStringLiteral("result")).toString());
  }
}

bool MainWindow::saveWorkspace(const QString& path) {
  QJsonArray windows;
  windows.append(save_state());
  for (QMainWindow* t : toolWindows()) windows.append(toolState(t));
  QString error;
  if (!app::writeWorkspace(path, windows, &error)) {
    reportError(tr("Could not save the workspace"), error);
    return false;
  }
  rememberFile(path);
  log_->info(tr("Workspace saved to %1 (%n window(s))", nullptr, int(windows.size())).arg(path));
  return true;
}

bool MainWindow::openWorkspace(const QString& path) {
  QJsonArray windows;
  QString error;
  if (!app::readWorkspace(path, &windows, &error)) {
    reportError(tr("Could not open the workspace"), error);
    return false;
  }
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait before opening a workspace."));
    return false;
  }
  // The workspace replaces the open tool windows (they have no running jobs: asked above).
  for (QMainWindow* t : toolWindows()) {
    if (JobQueue::instance().activeCount(t) > 0) {
      reportError(tr("Busy"), tr("A job is running in %1: cancel it or wait first.").arg(t->windowTitle()));
      return false;
    }
  }
  for (QMainWindow* t : toolWindows()) t->close();
  for (const QJsonValue& v : windows) {
    const QJsonObject st = v.toObject();
    const QString kind = st.value(QStringLiteral("kind")).toString();
    if (kind == QLatin1String("npcf")) restore_state(st);
    else if (kind == QLatin1String("sky")) app::restoreSkyWindow(*showSkyMap(), st);
    else if (kind == QLatin1String("stack")) app::restoreStackWindow(*showMovingObjects(), st);
    else log_->warning(tr("%1: window kind '%2' is not known to this version; skipped").arg(path, kind));
  }
  rememberFile(path);
  log_->info(tr("Workspace %1 opened (%n window(s))", nullptr, int(windows.size())).arg(path));
  return true;
}

void MainWindow::restoreSession() {
  rememberSession_ = true;
  app::restoreGeometry(this);
  QJsonObject st = app::lastState(state_kind());
  // Last parameters only: files are under File > Open recent (opening them is the user's call).
  for (const char* key : {"data", "randoms", "result", "geometry", "camera", "catalogue", "views"}) st.remove(QLatin1String(key));
  if (!st.isEmpty()) restore_state(st);
  app::fitToScreen(this);
}

void MainWindow::saveSession() {
  app::saveGeometry(this);
  app::saveLastState(state_kind(), save_state());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) {
    for (const QUrl& u : event->mimeData()->urls())
      if (u.isLocalFile()) {
        event->acceptProposedAction();
        return;
      }
  }
  QMainWindow::dragEnterEvent(event);
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& u : event->mimeData()->urls())
    if (u.isLocalFile()) paths << u.toLocalFile();
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  // A data and a random catalogue dropped together load together (one job).
  if (paths.size() == 2 && app::sniffFile(paths[0]).kind == app::FileKind::Catalogue &&
      app::sniffFile(paths[1]).kind == app::FileKind::Catalogue) {
    const bool firstIsRandoms = QFileInfo(paths[0]).fileName().contains(QLatin1String("random"), Qt::CaseInsensitive);
    loadCatalogues(firstIsRandoms ? paths[1] : paths[0], firstIsRandoms ? paths[0] : paths[1]);
    return;
  }
  for (const QString& p : paths) openPath(p);
}

void MainWindow::rememberFile(const QString& path) {
  if (path.isEmpty() || !rememberSession_) return;
  app::addRecentFile(path);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  if (!recentMenu_) return;
  recentMenu_->clear();
  const QStringList files = rememberSession_ ? app::recentFiles() : QStringList();
  for (const QString& f : files)
    recentMenu_->addAction(QDir::toNativeSeparators(f), this, [this, f] { openPath(f); });
  if (files.isEmpty()) recentMenu_->addAction(tr("(none)"))->setEnabled(false);
  else {
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear"), this, [this] {
      app::clearRecentFiles();
      rebuildRecentMenu();
    });
  }
}

QString MainWindow::resultProvenance() const {
  if (result_) return QString::fromStdString(result_->result.provenance.to_json());
  QJsonObject o;  // no result: what the view shows
  o[QStringLiteral("software")] = QStringLiteral("Almagest");
  o[QStringLiteral("version")] = QString::fromStdString(almagest::version());
  QJsonArray inputs;
  for (const QString& p : {dataPath_, randomsPath_})
    if (!p.isEmpty()) inputs.append(QFileInfo(p).absoluteFilePath());
  o[QStringLiteral("inputs")] = inputs;
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

void MainWindow::exportChart() {
  app::exportWithDialog(chart_->chartView(), [this] {
    return app::ExportMeta{chart_->plotTitle().isEmpty() ? tr("chart") : chart_->plotTitle(), resultProvenance()};
  }, QStringLiteral("chart"));
}

void MainWindow::export3dView() {
  app::exportWithDialog(view_, [this] {
    return app::ExportMeta{tr("catalogue %1").arg(QFileInfo(dataPath_).fileName()), resultProvenance()};
  }, QStringLiteral("catalogue"));
}

}  // namespace almagest::ui
