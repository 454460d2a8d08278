#pragma once
// VtkView: a QOpenGLWidget that drives a vtkGenericOpenGLRenderWindow on Qt's own GL context
// (Debian's VTK Qt module is Qt 5 only). The recipe is the one in notes/qt6-vtk.md:
//  - QSurfaceFormat::setDefaultFormat(VtkView::defaultFormat()) and Qt::AA_ShareOpenGLContexts
//    before the QApplication is constructed;
//  - VTK renders into its own framebuffer during paintGL(), which is then blitted into the
//    widget's framebuffer;
//  - mouse, wheel and key events are forwarded to a trackball-camera interactor.
// This header includes no VTK headers, so widgets that only embed the view compile fast.
#include <QOpenGLWidget>

#include <memory>

class QSurfaceFormat;
class vtkRenderer;
class vtkGenericOpenGLRenderWindow;

namespace almagest::ui {

class VtkView : public QOpenGLWidget {
  Q_OBJECT
public:
  explicit VtkView(QWidget* parent = nullptr);
  ~VtkView() override;

  /// OpenGL 3.2 core, RGBA8, depth 24, no multisampling (VTK keeps its own framebuffer).
  static QSurfaceFormat defaultFormat();
  /// Sets defaultFormat() as Qt's default and shares contexts. Call before QApplication exists.
  static void prepareApplication();
  /// VTK's version ("9.1.0").
  static QString vtkVersionString();

  /// The scene's renderer (owned by the view). Add props, then call requestRender().
  vtkRenderer* renderer() const;
  vtkGenericOpenGLRenderWindow* renderWindow() const;

  /// Marks the VTK scene as changed: the next paint renders it again.
  void requestRender();
  /// Resets the camera to show every visible prop, then requests a render.
  void resetCamera();

  /// Number of times initializeGL() attached VTK to a context (for diagnostics and tests).
  int glInitCount() const noexcept;
  /// True once a GL context was created and VTK initialised on it.
  bool isGlReady() const noexcept;

signals:
  /// Emitted after each frame VTK rendered (on the GUI thread).
  void frameRendered();

protected:
  void initializeGL() override;
  void resizeGL(int w, int h) override;
  void paintGL() override;

  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void keyReleaseEvent(QKeyEvent* e) override;
  void enterEvent(QEnterEvent* e) override;
  void leaveEvent(QEvent* e) override;

private:
  struct Impl;
  void cleanupGL();
  std::unique_ptr<Impl> d_;
};

}  // namespace almagest::ui
