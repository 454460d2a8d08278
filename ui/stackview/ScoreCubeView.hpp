#pragma once
// ScoreCubeView: the score cube Z(x, y, v) of a search (almagest/stack/score_cube.hpp) in VTK,
// inside the Moving objects window's "Score cube" dock:
//  - a volume rendering (GPU ray casting; transparent below half the threshold, viridis above),
//  - or one axis slice: x-y at a velocity plane, x-v at a row y, y-v at a column x,
//  - an isosurface at the detection threshold (flying edges on the cube padded by one layer of
//    zeros, so surfaces close at the cube's faces),
//  - markers (white spheres) at the candidates' positions in the cube.
// World coordinates: x = ix, y = iy (pixels of the region, y up as in the exposure view) and
// z = iv * vScale(), with vScale() stretching the v axis to about the region's size.
// Only this file's .cpp includes VTK; the header includes none.
#include <QWidget>

#include <array>
#include <memory>
#include <vector>

#include "almagest/stack/score_cube.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace almagest::ui {

class VtkView;

namespace stackview {

class ScoreCubeView : public QWidget {
  Q_OBJECT
public:
  enum class Mode { Volume, Slice };
  enum class SliceAxis { XY, XV, YV };  ///< slice at a velocity plane, at a row y, at a column x

  explicit ScoreCubeView(QWidget* parent = nullptr);
  ~ScoreCubeView() override;

  /// Shows `cube` with markers at `candidates` (cube positions ix, iy, iv; may be empty).
  void setCube(std::shared_ptr<const almagest::stack::ScoreCube> cube, std::vector<std::array<int, 3>> candidates);
  void clear();
  const almagest::stack::ScoreCube* cube() const noexcept { return cube_.get(); }
  const std::vector<std::array<int, 3>>& candidates() const noexcept { return candidates_; }

  void setMode(Mode m);
  Mode mode() const noexcept { return mode_; }
  void setSlice(SliceAxis axis, int index);
  SliceAxis sliceAxis() const noexcept { return axis_; }
  int sliceIndex() const noexcept { return sliceIndex_; }
  void setIsosurfaceVisible(bool on);
  bool isosurfaceVisible() const noexcept { return isoOn_; }

  /// Spacing of the v axis in world units.
  double vScale() const noexcept { return vScale_; }
  /// World position of cube voxel (ix, iy, iv).
  std::array<double, 3> world(double ix, double iy, double iv) const noexcept;
  /// Points of the threshold isosurface (0 without a cube or when nothing reaches it).
  long long isosurfacePoints() const;
  /// Bounds (xmin, xmax, ymin, ymax, zmin, zmax, world units) of the connected piece of the
  /// isosurface closest to world point `p`; all zero when there is no surface.
  std::array<double, 6> isosurfacePieceBounds(const std::array<double, 3>& p) const;
  /// The slice shown as an image of Z values ([rows][cols] row-major, rows along the second
  /// axis of the slice), for tests; empty in volume mode.
  std::vector<float> sliceValues(int* cols, int* rows) const;
  /// Candidate markers drawn: all in volume mode, those on the slice in slice mode.
  int markersShown() const noexcept { return markersShown_; }

  VtkView* vtkView() const noexcept { return view_; }

signals:
  void changed();

private:
  void rebuild();
  void updateSliceRange();
  struct Impl;
  std::unique_ptr<Impl> d_;
  std::shared_ptr<const almagest::stack::ScoreCube> cube_;
  std::vector<std::array<int, 3>> candidates_;
  Mode mode_ = Mode::Volume;
  SliceAxis axis_ = SliceAxis::XY;
  int sliceIndex_ = 0;
  bool isoOn_ = true;
  double vScale_ = 1.0;
  int markersShown_ = 0;
  VtkView* view_ = nullptr;
  QComboBox* modeBox_ = nullptr;
  QComboBox* axisBox_ = nullptr;
  QSpinBox* sliceSpin_ = nullptr;
  QCheckBox* isoCheck_ = nullptr;
  QLabel* caption_ = nullptr;
};

}  // namespace stackview
}  // namespace almagest::ui
