// The one place outside views/ that touches VTK: only the camera of a VtkView's renderer.
#include "app/ViewCamera.hpp"

#include <QJsonArray>

#include <vtkCamera.h>
#include <vtkRenderer.h>

#include "views/VtkView.hpp"

namespace almagest::ui::app {

namespace {
QJsonArray vec(const double* v) { return QJsonArray{v[0], v[1], v[2]}; }
bool read(const QJsonObject& o, const char* key, double out[3]) {
  const QJsonArray a = o.value(QLatin1String(key)).toArray();
  if (a.size() != 3) return false;
  for (int i = 0; i < 3; ++i) {
    if (!a[i].isDouble()) return false;
    out[i] = a[i].toDouble();
  }
  return true;
}
}  // namespace

QJsonObject cameraState(const VtkView* view) {
  vtkCamera* cam = view->renderer()->GetActiveCamera();
  QJsonObject o;
  o[QStringLiteral("position")] = vec(cam->GetPosition());
  o[QStringLiteral("focal_point")] = vec(cam->GetFocalPoint());
  o[QStringLiteral("view_up")] = vec(cam->GetViewUp());
  o[QStringLiteral("view_angle")] = cam->GetViewAngle();
  return o;
}

void setCameraState(VtkView* view, const QJsonObject& state) {
  double pos[3], focal[3], up[3];
  if (!read(state, "position", pos) || !read(state, "focal_point", focal) || !read(state, "view_up", up)) return;
  vtkCamera* cam = view->renderer()->GetActiveCamera();
  cam->SetPosition(pos);
  cam->SetFocalPoint(focal);
  cam->SetViewUp(up);
  const double angle = state.value(QStringLiteral("view_angle")).toDouble(0);
  if (angle > 0 && angle < 180) cam->SetViewAngle(angle);
  view->renderer()->ResetCameraClippingRange();
  view->requestRender();
}

}  // namespace almagest::ui::app
