#include "app/Workspace.hpp"

#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>
#include <QSpinBox>
#include <QWidget>

#include <cmath>

#include "panels/SchemaForm.hpp"
#include "sky/SkyMapWindow.hpp"
#include "stackview/StackWindow.hpp"

namespace almagest::ui::app {

namespace sc = almagest::schema;

QJsonObject valuesToJson(const sc::Values& values) {
  QJsonObject o;
  for (const auto& [key, value] : values) {
    const QString k = QString::fromStdString(key);
    if (auto s = std::get_if<std::string>(&value)) o[k] = QString::fromStdString(*s);
    else if (auto l = std::get_if<std::vector<std::string>>(&value)) {
      QJsonArray a;
      for (const auto& e : *l) a.append(QString::fromStdString(e));
      o[k] = a;
    } else if (auto i = std::get_if<std::int64_t>(&value)) o[k] = static_cast<qint64>(*i);
    else if (auto d = std::get_if<double>(&value)) o[k] = *d;
    else if (auto b = std::get_if<bool>(&value)) o[k] = *b;
  }
  return o;
}

sc::Values valuesFromJson(const QJsonObject& json, const sc::Schema& schema) {
  sc::Values v;
  for (const auto& f : schema.fields) {
    const QJsonValue j = json.value(QString::fromStdString(f.key));
    if (j.isUndefined() || j.isNull()) continue;
    if (j.isBool()) v[f.key] = j.toBool();
    else if (j.isArray()) {
      std::vector<std::string> l;
      for (const QJsonValue& e : j.toArray()) l.push_back(e.toString().toStdString());
      v[f.key] = l;
    } else if (j.isDouble()) {
      const double x = j.toDouble();
      if (f.kind == sc::Kind::Integer && std::floor(x) == x) v[f.key] = static_cast<std::int64_t>(x);
      else v[f.key] = x;
    } else {
      v[f.key] = j.toString().toStdString();
    }
  }
  return v;
}

QJsonObject genericWindowState(const QWidget* w) {
  QJsonObject o;
  o[QStringLiteral("geometry")] = QString::fromLatin1(w->saveGeometry().toBase64());
  QJsonArray forms;
  for (const SchemaForm* f : w->findChildren<SchemaForm*>()) {
    QJsonObject fo;
    fo[QStringLiteral("schema")] = QString::fromStdString(f->schema().engine);
    fo[QStringLiteral("operation")] = f->operation();
    fo[QStringLiteral("values")] = valuesToJson(f->values());
    forms.append(fo);
  }
  o[QStringLiteral("forms")] = forms;
  return o;
}

void restoreGenericWindowState(QWidget* w, const QJsonObject& state) {
  const QByteArray g = QByteArray::fromBase64(state.value(QStringLiteral("geometry")).toString().toLatin1());
  if (!g.isEmpty()) w->restoreGeometry(g);
  const QJsonArray forms = state.value(QStringLiteral("forms")).toArray();
  const QList<SchemaForm*> mine = w->findChildren<SchemaForm*>();
  for (int i = 0; i < forms.size() && i < mine.size(); ++i) {
    const QJsonObject fo = forms[i].toObject();
    SchemaForm* f = mine[i];
    if (fo.value(QStringLiteral("schema")).toString() != QString::fromStdString(f->schema().engine)) continue;
    const QString op = fo.value(QStringLiteral("operation")).toString();
    if (!op.isEmpty()) f->setOperation(op);
    f->setValues(valuesFromJson(fo.value(QStringLiteral("values")).toObject(), f->schema()));
  }
}

QJsonObject skyWindowState(const SkyMapWindow& w) {
  QJsonObject o = genericWindowState(&w);
  o[QStringLiteral("kind")] = QStringLiteral("sky");
  if (const auto map = w.map()) {
    const QString src = QString::fromStdString(map->source);
    if (QFileInfo(src).isFile()) o[QStringLiteral("map")] = QFileInfo(src).absoluteFilePath();
    else o[QStringLiteral("demo_map")] = map->nside;
  }
  o[QStringLiteral("column")] = w.column();
  o[QStringLiteral("lmax")] = w.lmaxSpin()->value();
  o[QStringLiteral("backend")] = w.backendCombo()->currentIndex();
  return o;
}

void restoreSkyWindow(SkyMapWindow& w, const QJsonObject& state) {
  restoreGenericWindowState(&w, state);
  const int backend = state.value(QStringLiteral("backend")).toInt(-1);
  if (backend >= 0 && backend < w.backendCombo()->count()) w.backendCombo()->setCurrentIndex(backend);
  const int lmax = state.value(QStringLiteral("lmax")).toInt(-1);
  if (lmax >= 0) {
    // The map's load resets lmax to 3 nside - 1: apply the saved one once it is loaded.
    auto* conn = new QMetaObject::Connection;
    *conn = QObject::connect(&w, &SkyMapWindow::mapLoaded, &w, [&w, lmax, conn] {
      w.lmaxSpin()->setValue(lmax);
      QObject::disconnect(*conn);
      delete conn;
    });
  }
  const int column = state.value(QStringLiteral("column")).toInt(0);
  if (state.contains(QStringLiteral("map"))) w.openMap(state.value(QStringLiteral("map")).toString(), column);
  else if (state.contains(QStringLiteral("demo_map"))) w.openDemoMap(state.value(QStringLiteral("demo_map")).toInt());
}

QJsonObject stackWindowState(const StackWindow& w) {
  QJsonObject o = genericWindowState(&w);
  o[QStringLiteral("kind")] = QStringLiteral("stack");
  if (const auto st = w.stack()) {
    const QString src = QString::fromStdString(st->stack.source);
    if (QFileInfo(src).isFile()) o[QStringLiteral("stack")] = QFileInfo(src).absoluteFilePath();
  }
  o[QStringLiteral("exposure")] = w.exposure();
  o[QStringLiteral("selected_candidate")] = w.selectedCandidate();
  return o;
}

void restoreStackWindow(StackWindow& w, const QJsonObject& state) {
  restoreGenericWindowState(&w, state);
  const int exposure = state.value(QStringLiteral("exposure")).toInt(0);
  if (state.contains(QStringLiteral("stack"))) {
    auto* conn = new QMetaObject::Connection;
    *conn = QObject::connect(&w, &StackWindow::stackLoaded, &w, [&w, exposure, conn] {
      w.setExposure(exposure);
      QObject::disconnect(*conn);
      delete conn;
    });
    w.openStack(state.value(QStringLiteral("stack")).toString());
  }
}

bool writeWorkspace(const QString& path, const QJsonArray& windows, QString* error) {
  QJsonObject root;
  root[QStringLiteral("almagest_workspace")] = kWorkspaceVersion;
  root[QStringLiteral("windows")] = windows;
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(root).toJson(QJsonDocument::Indented)) < 0 ||
      !f.commit()) {
    if (error) *error = QStringLiteral("%1: could not write the workspace: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

bool readWorkspace(const QString& path, QJsonArray* windows, QString* error) {
  auto fail = [&](const QString& field, const QString& message) {
    if (error) *error = field.isEmpty() ? QStringLiteral("%1: %2").arg(path, message)
                                        : QStringLiteral("%1: %2: %3").arg(path, field, message);
    return false;
  };
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return fail({}, f.errorString());
  if (f.size() > 64 * 1024 * 1024) return fail({}, QStringLiteral("larger than 64 MiB, not a workspace"));
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
  if (pe.error != QJsonParseError::NoError)
    return fail({}, QStringLiteral("not JSON (%1 at byte %2)").arg(pe.errorString()).arg(pe.offset));
  if (!doc.isObject()) return fail({}, QStringLiteral("not a JSON object"));
  const QJsonObject root = doc.object();
  const QJsonValue version = root.value(QStringLiteral("almagest_workspace"));
  if (!version.isDouble()) return fail(QStringLiteral("almagest_workspace"), QStringLiteral("missing: not an Almagest workspace"));
  if (version.toInt() > kWorkspaceVersion)
    return fail(QStringLiteral("almagest_workspace"),
                QStringLiteral("version %1 is newer than this Almagest reads (%2)").arg(version.toInt()).arg(kWorkspaceVersion));
  const QJsonValue w = root.value(QStringLiteral("windows"));
  if (!w.isArray()) return fail(QStringLiteral("windows"), QStringLiteral("must be an array"));
  const QJsonArray a = w.toArray();
  for (int i = 0; i < a.size(); ++i) {
    if (!a[i].isObject() || !a[i].toObject().value(QStringLiteral("kind")).isString())
      return fail(QStringLiteral("windows[%1].kind").arg(i), QStringLiteral("each window must be an object with a kind"));
  }
  if (windows) *windows = a;
  return true;
}

}  // namespace almagest::ui::app
