package io.viewlet.spark

/**
 * Holds the one Python handler of this JVM. A top-level object, so Java and Py4J see static
 * methods: `ViewletBridge.register(h)`, `unregister()`, `isRegistered()`, `handler()`.
 */
object ViewletBridge {
  @volatile private var current: ViewletHandler = _

  def register(handler: ViewletHandler): Unit = {
    if (handler == null) throw new IllegalArgumentException("handler is null; use unregister()")
    current = handler
    ViewletAttach.handlerChanged()
  }

  def unregister(): Unit = {
    current = null
    ViewletAttach.handlerChanged()
  }

  def isRegistered(): Boolean = current != null

  /** The registered handler, or null. */
  def handler(): ViewletHandler = current
}
