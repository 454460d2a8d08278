#pragma once
// ConfigurationView: the selected configuration drawn to scale in a VtkView: vertices, edges
// coloured by their radial bin, the bins of the hub's spokes as translucent annuli (inner and
// outer bin edge) in the plane of the first face, and for 4pCF the signed volume with a mirror
// toggle (the handedness the parity channel measures). Geometry: npcf/ConfigurationGeometry.
// No VTK types in this header.
#include <QJsonObject>
#include <QList>
#include <QWidget>

#include <memory>

#include "almagest/npcf/result.hpp"
#include "npcf/ConfigurationGeometry.hpp"

class QCheckBox;
class QLabel;

namespace almagest::ui {

class VtkView;

class ConfigurationView : public QWidget {
  Q_OBJECT
public:
  explicit ConfigurationView(QWidget* parent = nullptr);
  ~ConfigurationView() override;

  void setResult(const almagest::npcf::NpcfResult& result);
  void clear();
  /// Draws the first of `rows` (result rows); empty: nothing drawn.
  void showRows(const QList<int>& rows);
  int shownRow() const noexcept { return row_; }
  void setMirrored(bool on);
  bool mirrored() const;
  const ConfigurationGeometry& geometry() const noexcept { return geometry_; }
  /// Bin of each drawn edge (same order as geometry().edges).
  const std::vector<int>& edgeBins() const noexcept { return edgeBins_; }
  /// RGB (0..1) of radial bin b among n: the colour of its edges and annulus.
  static std::array<double, 3> binColour(int b, int n);

  VtkView* vtkView() const noexcept { return view_; }
  QCheckBox* mirrorBox() const noexcept { return mirror_; }
  QString caption() const;

  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

private:
  struct Impl;
  void redraw();

  std::unique_ptr<Impl> d_;
  VtkView* view_ = nullptr;
  QCheckBox* mirror_ = nullptr;
  QLabel* caption_ = nullptr;
  int order_ = 0, epr_ = 1, row_ = -1;
  std::vector<std::uint8_t> bins_;
  almagest::npcf::Binning binning_;
  bool parity_ = false;
  ConfigurationGeometry geometry_;
  std::vector<int> edgeBins_;
};

}  // namespace almagest::ui
