#pragma once
// Workspaces: everything open -- the windows, their files, job settings, selections and view
// cameras -- saved as one JSON file and restored from it (File > Save workspace / Open
// workspace, and drag and drop of a .almagest.json file). Each window (or view) states itself as
// a QJsonObject through the small StatefulView interface; the same objects are what a window
// remembers across restarts (AppSettings::saveLastState).
//
//   {"almagest_workspace": 1, "windows": [{"kind": "npcf", ...}, {"kind": "sky", ...}]}
//
// Restoring opens the files through the windows' own jobs, so a missing file is reported as that
// window's job failure naming it, never a crash; an unreadable or malformed workspace is one
// message naming the file and the field.
#include <QJsonArray>
#include <QJsonObject>
#include <QString>

#include "almagest/core/schema.hpp"

class QWidget;

namespace almagest::ui {

class SkyMapWindow;
class StackWindow;

/// A window or view whose state a workspace keeps. `kind` names the window type ("npcf",
/// "sky", "stack", or a view's own name).
class StatefulView {
public:
  virtual ~StatefulView() = default;
  virtual QString state_kind() const = 0;
  virtual QJsonObject save_state() const = 0;
  /// Applies what it can of `state` (unknown keys are ignored: later versions may add some).
  virtual void restore_state(const QJsonObject& state) = 0;
};

namespace app {

constexpr int kWorkspaceVersion = 1;
/// File-name suffix of workspaces (recognised on drop and by FileKind sniffing).
inline constexpr const char* kWorkspaceSuffix = ".almagest.json";

/// Schema values as JSON (strings, string lists, integers, numbers, booleans).
QJsonObject valuesToJson(const almagest::schema::Values& values);
/// Back, typed by `schema` (an integer field gives int64, a number double); keys the schema does
/// not know are dropped.
almagest::schema::Values valuesFromJson(const QJsonObject& json, const almagest::schema::Schema& schema);

/// Geometry (base64 of QWidget::saveGeometry) and the values of every SchemaForm in `w`, by the
/// form's position among them (their order is fixed by the window's construction).
QJsonObject genericWindowState(const QWidget* w);
void restoreGenericWindowState(QWidget* w, const QJsonObject& state);

/// The Sky map window: generic state + map file, column, lmax, backend index.
QJsonObject skyWindowState(const SkyMapWindow& w);
void restoreSkyWindow(SkyMapWindow& w, const QJsonObject& state);
/// The Moving objects window: generic state + stack file, shown exposure, selected candidate.
QJsonObject stackWindowState(const StackWindow& w);
void restoreStackWindow(StackWindow& w, const QJsonObject& state);

/// Writes `{"almagest_workspace": 1, "windows": windows}` atomically (QSaveFile). False with a
/// message naming the file on error.
bool writeWorkspace(const QString& path, const QJsonArray& windows, QString* error);
/// Reads a workspace's windows. False with "file: field: message" on error.
bool readWorkspace(const QString& path, QJsonArray* windows, QString* error);

}  // namespace app
}  // namespace almagest::ui
