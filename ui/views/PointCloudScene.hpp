#pragma once
// PointCloudScene: the catalogue as a 3D point cloud in a VtkView. Data points are drawn as
// shaded spheres in gold, randoms as small blue points, with the bounding box, labelled axes in
// Mpc/h and a caption. Built on the GUI thread from catalogues a finished job produced; the
// coordinates are copied (subsampled evenly above kMaxShownPoints), so the catalogues need not
// outlive the call. No VTK types appear in this header.
#include <QString>

#include <cstddef>
#include <memory>

#include "almagest/io/catalogue.hpp"

namespace almagest::ui {

class VtkView;

class PointCloudScene {
public:
  /// Points drawn per catalogue at most; larger catalogues show every k-th point.
  static constexpr std::size_t kMaxShownPoints = 250000;

  /// Adds the scene's props to view->renderer(). `view` must outlive the scene.
  explicit PointCloudScene(VtkView* view);
  ~PointCloudScene();
  PointCloudScene(const PointCloudScene&) = delete;
  PointCloudScene& operator=(const PointCloudScene&) = delete;

  /// Replaces the points. Either pointer may be null (nothing of that kind is drawn). Resets the
  /// camera when `resetCamera` is true and requests a render.
  void setCatalogues(const almagest::io::Catalogue* data, const almagest::io::Catalogue* randoms,
                     bool resetCamera = true);
  /// Second caption line (e.g. the last job's summary).
  void setStatusText(const QString& text);
  void setRandomsVisible(bool visible);
  void resetCamera();

  std::size_t shownData() const noexcept;
  std::size_t shownRandoms() const noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace almagest::ui
