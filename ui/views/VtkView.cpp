#include "views/VtkView.hpp"

#include <QApplication>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QSurfaceFormat>
#include <QWheelEvent>

#include <vtkCallbackCommand.h>
#include <vtkCommand.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkNew.h>
#include <vtkOpenGLFramebufferObject.h>
#include <vtkOpenGLState.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>
#include <vtkVersion.h>

namespace almagest::ui {

struct VtkView::Impl {
  VtkView* q = nullptr;
  vtkNew<vtkGenericOpenGLRenderWindow> renWin;
  vtkNew<vtkRenderer> renderer;
  vtkNew<vtkGenericRenderWindowInteractor> iren;
  vtkNew<vtkInteractorStyleTrackballCamera> style;
  bool glReady = false;
  bool needVtkRender = true;
  bool inPaint = false;
  int glInits = 0;
  QMetaObject::Connection contextConnection;

  // Observer of the render window: VTK asks us to make Qt's context current, whether it is
  // current, and tells us when a frame is done.
  void onWindowEvent(vtkObject*, unsigned long event, void* callData) {
    switch (event) {
      case vtkCommand::WindowMakeCurrentEvent:
        // Only switch when needed: QOpenGLWidget::makeCurrent() rebinds Qt's framebuffer behind
        // VTK's state cache, which breaks VTK's own framebuffers (notes/qt6-vtk.md, gotcha 1).
        if (glReady && QOpenGLContext::currentContext() != q->context()) q->makeCurrent();
        break;
      case vtkCommand::WindowIsCurrentEvent:
        *static_cast<bool*>(callData) =
            glReady && QOpenGLContext::currentContext() == q->context();
        break;
      case vtkCommand::WindowFrameEvent:
        needVtkRender = false;
        if (!inPaint) q->update();  // a render triggered by interaction: show it
        break;
      default: break;
    }
  }

  int dprScaled(double v) const { return static_cast<int>(v * q->devicePixelRatioF() + 0.5); }

  // Sets position and modifiers, then fires `event` at the interactor.
  void mouseEvent(QMouseEvent* e, unsigned long event, int repeat = 0) {
    if (!glReady) return;
    const QPointF p = e->position();
    iren->SetEventInformationFlipY(dprScaled(p.x()), dprScaled(p.y()),
                                   (e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                   (e->modifiers() & Qt::ShiftModifier) ? 1 : 0, 0, repeat);
    iren->SetAltKey((e->modifiers() & Qt::AltModifier) ? 1 : 0);
    iren->InvokeEvent(event, e);
  }
};

VtkView::VtkView(QWidget* parent) : QOpenGLWidget(parent), d_(std::make_unique<Impl>()) {
  d_->q = this;
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setUpdateBehavior(QOpenGLWidget::NoPartialUpdate);
  setMinimumSize(200, 200);

  auto& w = d_->renWin;
  w->SetReadyForRendering(false);  // no Render() before initializeGL()
  w->AddRenderer(d_->renderer);
  w->SetMultiSamples(0);
  w->AddObserver(vtkCommand::WindowMakeCurrentEvent, d_.get(), &Impl::onWindowEvent);
  w->AddObserver(vtkCommand::WindowIsCurrentEvent, d_.get(), &Impl::onWindowEvent);
  w->AddObserver(vtkCommand::WindowFrameEvent, d_.get(), &Impl::onWindowEvent);

  d_->iren->SetRenderWindow(w);
  d_->iren->EnableRenderOn();
  d_->iren->SetInteractorStyle(d_->style);
  d_->iren->Initialize();
}

VtkView::~VtkView() {
  if (d_->contextConnection) disconnect(d_->contextConnection);
  if (context()) {
    makeCurrent();
    cleanupGL();
    doneCurrent();
  }
  d_->renWin->RemoveAllObservers();
}

QSurfaceFormat VtkView::defaultFormat() {
  QSurfaceFormat fmt;
  fmt.setRenderableType(QSurfaceFormat::OpenGL);
  fmt.setVersion(3, 2);  // VTK's OpenGL2 backend needs 3.2 core
  fmt.setProfile(QSurfaceFormat::CoreProfile);
  fmt.setSwapBehavior(QSurfaceFormat::DoubleBuffer);
  fmt.setRedBufferSize(8);
  fmt.setGreenBufferSize(8);
  fmt.setBlueBufferSize(8);
  fmt.setAlphaBufferSize(8);
  fmt.setDepthBufferSize(24);
  fmt.setStencilBufferSize(0);
  fmt.setSamples(0);  // VTK renders into its own framebuffer
  return fmt;
}

void VtkView::prepareApplication() {
  QSurfaceFormat::setDefaultFormat(defaultFormat());
  QApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
}

QString VtkView::vtkVersionString() { return QString::fromLatin1(vtkVersion::GetVTKVersion()); }

vtkRenderer* VtkView::renderer() const { return d_->renderer; }
vtkGenericOpenGLRenderWindow* VtkView::renderWindow() const { return d_->renWin; }
int VtkView::glInitCount() const noexcept { return d_->glInits; }
bool VtkView::isGlReady() const noexcept { return d_->glReady; }

void VtkView::requestRender() {
  d_->needVtkRender = true;
  update();
}

void VtkView::resetCamera() {
  d_->renderer->ResetCamera();
  requestRender();
}

void VtkView::initializeGL() {
  auto& w = d_->renWin;
  w->SetOwnContext(false);
  w->SetForceMaximumHardwareLineWidth(1);
  w->SetReadyForRendering(true);
  d_->glReady = true;
  w->OpenGLInitContext();  // GL function pointers and VTK's state cache on Qt's context
  if (d_->contextConnection) disconnect(d_->contextConnection);
  d_->contextConnection = connect(context(), &QOpenGLContext::aboutToBeDestroyed, this,
                                  &VtkView::cleanupGL, Qt::UniqueConnection);
  const qreal dpr = devicePixelRatioF();
  d_->iren->UpdateSize(static_cast<int>(width() * dpr), static_cast<int>(height() * dpr));
  d_->needVtkRender = true;
  ++d_->glInits;
}

void VtkView::resizeGL(int w, int h) {
  const qreal dpr = devicePixelRatioF();
  d_->iren->UpdateSize(static_cast<int>(w * dpr), static_cast<int>(h * dpr));
  d_->needVtkRender = true;
}

void VtkView::paintGL() {
  if (!d_->glReady) return;
  d_->inPaint = true;
  const bool rendered = d_->needVtkRender;
  if (d_->needVtkRender) d_->iren->Render();
  d_->needVtkRender = false;
  d_->inPaint = false;

  makeCurrent();  // rendering may have switched the current context
  QOpenGLExtraFunctions* f = context()->extraFunctions();
  f->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, defaultFramebufferObject());
  const GLenum buffer = GL_COLOR_ATTACHMENT0;
  f->glDrawBuffers(1, &buffer);
  if (f->glIsEnabled(GL_SCISSOR_TEST)) {
    d_->renWin->GetState()->vtkglDisable(GL_SCISSOR_TEST);
    f->glDisable(GL_SCISSOR_TEST);
  }
  const int* s = d_->renWin->GetRenderFramebuffer()->GetLastSize();
  const qreal dpr = devicePixelRatioF();
  d_->renWin->BlitDisplayFramebuffer(0, 0, 0, s[0], s[1], 0, 0, static_cast<int>(width() * dpr),
                                     static_cast<int>(height() * dpr), GL_COLOR_BUFFER_BIT,
                                     GL_LINEAR);
  // The widget is composited with its alpha: force it opaque.
  f->glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
  f->glClearColor(0, 0, 0, 1);
  f->glClear(GL_COLOR_BUFFER_BIT);
  f->glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  if (rendered) emit frameRendered();
}

void VtkView::cleanupGL() {
  if (!d_->glReady) return;
  if (QOpenGLContext::currentContext() != context()) makeCurrent();
  d_->renWin->Finalize();
  d_->renWin->SetReadyForRendering(false);
  d_->glReady = false;
}

void VtkView::mousePressEvent(QMouseEvent* e) {
  switch (e->button()) {
    case Qt::LeftButton: d_->mouseEvent(e, vtkCommand::LeftButtonPressEvent); break;
    case Qt::MiddleButton: d_->mouseEvent(e, vtkCommand::MiddleButtonPressEvent); break;
    case Qt::RightButton: d_->mouseEvent(e, vtkCommand::RightButtonPressEvent); break;
    default: break;
  }
  e->accept();
}

void VtkView::mouseReleaseEvent(QMouseEvent* e) {
  switch (e->button()) {
    case Qt::LeftButton: d_->mouseEvent(e, vtkCommand::LeftButtonReleaseEvent); break;
    case Qt::MiddleButton: d_->mouseEvent(e, vtkCommand::MiddleButtonReleaseEvent); break;
    case Qt::RightButton: d_->mouseEvent(e, vtkCommand::RightButtonReleaseEvent); break;
    default: break;
  }
  e->accept();
}

void VtkView::mouseDoubleClickEvent(QMouseEvent* e) {
  switch (e->button()) {
    case Qt::LeftButton: d_->mouseEvent(e, vtkCommand::LeftButtonPressEvent, 1); break;
    case Qt::MiddleButton: d_->mouseEvent(e, vtkCommand::MiddleButtonPressEvent, 1); break;
    case Qt::RightButton: d_->mouseEvent(e, vtkCommand::RightButtonPressEvent, 1); break;
    default: break;
  }
  e->accept();
}

void VtkView::mouseMoveEvent(QMouseEvent* e) {
  d_->mouseEvent(e, vtkCommand::MouseMoveEvent);
  e->accept();
}

void VtkView::wheelEvent(QWheelEvent* e) {
  if (d_->glReady) {
    const QPointF p = e->position();
    d_->iren->SetEventInformationFlipY(d_->dprScaled(p.x()), d_->dprScaled(p.y()),
                                       (e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                       (e->modifiers() & Qt::ShiftModifier) ? 1 : 0);
    const int dy = e->angleDelta().y();
    if (dy > 0) d_->iren->InvokeEvent(vtkCommand::MouseWheelForwardEvent, e);
    else if (dy < 0) d_->iren->InvokeEvent(vtkCommand::MouseWheelBackwardEvent, e);
  }
  e->accept();
}

namespace {

// VTK key symbols for the keys the trackball style and its users care about.
const char* keySym(int key) {
  switch (key) {
    case Qt::Key_Left: return "Left";
    case Qt::Key_Right: return "Right";
    case Qt::Key_Up: return "Up";
    case Qt::Key_Down: return "Down";
    case Qt::Key_Escape: return "Escape";
    case Qt::Key_Return: return "Return";
    case Qt::Key_Space: return "space";
    case Qt::Key_Plus: return "plus";
    case Qt::Key_Minus: return "minus";
    default: return nullptr;
  }
}

}  // namespace

void VtkView::keyPressEvent(QKeyEvent* e) {
  if (!d_->glReady) return QOpenGLWidget::keyPressEvent(e);
  const QString text = e->text();
  const char ascii = (text.size() == 1 && text.at(0).unicode() < 128) ? text.at(0).toLatin1() : 0;
  const char* sym = keySym(e->key());
  std::string symText = sym ? sym : std::string(ascii ? 1 : 0, ascii);
  d_->iren->SetKeyEventInformation((e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                   (e->modifiers() & Qt::ShiftModifier) ? 1 : 0, ascii,
                                   e->isAutoRepeat() ? 1 : 0, symText.empty() ? nullptr : symText.c_str());
  d_->iren->InvokeEvent(vtkCommand::KeyPressEvent, e);
  d_->iren->InvokeEvent(vtkCommand::CharEvent, e);
  e->accept();
}

void VtkView::keyReleaseEvent(QKeyEvent* e) {
  if (!d_->glReady) return QOpenGLWidget::keyReleaseEvent(e);
  const QString text = e->text();
  const char ascii = (text.size() == 1 && text.at(0).unicode() < 128) ? text.at(0).toLatin1() : 0;
  d_->iren->SetKeyEventInformation((e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                   (e->modifiers() & Qt::ShiftModifier) ? 1 : 0, ascii,
                                   e->isAutoRepeat() ? 1 : 0, nullptr);
  d_->iren->InvokeEvent(vtkCommand::KeyReleaseEvent, e);
  e->accept();
}

void VtkView::enterEvent(QEnterEvent* e) {
  if (d_->glReady) d_->iren->InvokeEvent(vtkCommand::EnterEvent, e);
  QOpenGLWidget::enterEvent(e);
}

void VtkView::leaveEvent(QEvent* e) {
  if (d_->glReady) d_->iren->InvokeEvent(vtkCommand::LeaveEvent, e);
  QOpenGLWidget::leaveEvent(e);
}

}  // namespace almagest::ui
