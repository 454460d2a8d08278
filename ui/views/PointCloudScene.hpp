#pragma once
// PointCloudScene: the catalogue as a 3D point cloud in a VtkView. Data points are drawn as
// shaded spheres in gold, randoms as small blue points, with the bounding box, labelled axes in
// Mpc/h and a caption. Built on the GUI thread from catalogues a finished job produced; the
// coordinates are copied (subsampled evenly above kMaxShownPoints), so the catalogues need not
// outlive the call. No VTK types appear in this header.
//
// Level of detail: while the camera moves (an interaction of the trackball style, or
// beginInteraction()), clouds above kLodPoints[l] are drawn as an even subsample of that many
// flat points (one of kLodLevels precomputed actors of the same colour, chosen from the last
// frame's render time), so 10^6 points stay interactive on a software renderer; at rest every
// shown point is drawn as before. Also: colour by sample (data gold, randoms blue) or by weight, a clipping box,
// and the neighbour graph of one point (NeighbourGraph: spokes coloured by radial bin, the
// matching triangles/tetrahedra through it in orange).
#include <QString>

#include <QJsonObject>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "almagest/io/catalogue.hpp"

namespace almagest::ui {

class VtkView;
struct NeighbourGraph;

class PointCloudScene {
public:
  /// Points drawn per catalogue at most; larger catalogues show every k-th point.
  static constexpr std::size_t kMaxShownPoints = 1200000;
  /// Levels of detail while the camera moves: at most kLodPoints[l] data points and a third as
  /// many randoms (a uniform backdrop), drawn as flat points; the level is chosen from the last frame's render time (coarser above
  /// kFrameBudget seconds, finer below a third of it), starting at level 1.
  static constexpr int kLodLevels = 4;
  static constexpr std::size_t kLodPoints[kLodLevels] = {120000, 40000, 12000, 4000};
  static constexpr double kFrameBudget = 0.040;
  enum class ColourBy { Sample, Weight };

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

  /// Level of detail on (drawn subsample) until endInteraction(); the trackball style calls
  /// them at the start and end of every mouse interaction.
  void beginInteraction();
  void endInteraction();
  bool lodActive() const noexcept;
  /// The level of detail in use while interacting (0 finest).
  int lodLevel() const noexcept;
  /// Sets the level; with `adaptive` false it stays there (benchmarks), else the frame time
  /// moves it again.
  void setLodLevel(int level, bool adaptive = true);
  /// Points drawn in the next frame (both clouds, the level of detail's while interacting).
  std::size_t drawnPoints() const noexcept;

  void setColourBy(ColourBy c);
  ColourBy colourBy() const noexcept;
  /// Clips the clouds to the box (xmin, xmax, ymin, ymax, zmin, zmax).
  void setClipBox(const std::array<double, 6>& box);
  void clearClipBox();
  bool hasClipBox() const noexcept;

  /// Draws `g` (null clears) with spokes coloured by bin among `nbins`.
  void setNeighbourGraph(const NeighbourGraph* g, int nbins);
  std::size_t neighbourEdges() const noexcept;
  std::size_t tupleEdges() const noexcept;
  /// One drawn spoke, read back from the drawn geometry: its far end and its RGB colour.
  struct Spoke {
    std::array<double, 3> end;
    std::array<int, 3> rgb;
  };
  /// The spokes as drawn (hub -> neighbour), in drawing order; empty without a graph.
  std::vector<Spoke> drawnSpokes() const;
  /// The hub of the drawn graph (engine index), or -1.
  long long neighbourHub() const noexcept;
  /// Bounds (xmin, xmax, ymin, ymax, zmin, zmax) of the loaded points (0s when none).
  std::array<double, 6> pointBounds() const;
  /// Engine index (data first, then randoms) of the shown point nearest to the view position
  /// (x, y in widget pixels), or -1.
  long long pickPoint(int x, int y) const;

  /// Colouring, clip box and camera, for workspaces.
  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace almagest::ui
