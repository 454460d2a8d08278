#pragma once
// The camera of a 3D view (VtkView) as JSON, for workspaces: position, focal point, view up and
// view angle (clipping range is recomputed from the scene).
#include <QJsonObject>

namespace almagest::ui {
class VtkView;
namespace app {

QJsonObject cameraState(const VtkView* view);
/// Applies a cameraState() (ignored when incomplete) and requests a render.
void setCameraState(VtkView* view, const QJsonObject& state);

}  // namespace app
}  // namespace almagest::ui
