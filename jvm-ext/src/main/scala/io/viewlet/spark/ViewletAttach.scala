package io.viewlet.spark

import java.util.Locale
import java.util.concurrent.locks.ReentrantLock

import org.apache.spark.sql.SparkSession

/**
 * Starts a Python driver attached to this JVM when a Viewlet statement needs the handler and
 * none is registered: the spark-sql shell and the Thrift server have no Python process.
 *
 * As spark-submit runs Python apps (PythonRunner): Spark's Py4J server in this JVM, then
 * `python -m viewlet.api.attach` given its port and secret. The Python side wraps this JVM's
 * SparkSession (session()) and calls viewlet.enable(spark); the handler registration ends the
 * wait. One attach per JVM: a lock serializes attempts and later callers find the handler.
 *
 * Where a Python driver owns the JVM (PySpark), the user calls viewlet.enable(spark) and
 * nothing is started (spark.viewlet.attach=auto, the default).
 */
object ViewletAttach {
  val ProtocolVersion = 3
  val AttachConf = "spark.viewlet.attach"
  val PythonConf = "spark.viewlet.python"
  val TimeoutConf = "spark.viewlet.attach.timeoutSeconds"
  val DefaultTimeoutSeconds = 120L

  private val lock = new ReentrantLock()
  private val changed = new Object
  @volatile private var attachedSession: SparkSession = _
  @volatile private var current: AttachedPython = _
  @volatile private var resolutionMayAttach = true

  /** The attach protocol this jar speaks; viewlet.api.attach checks it matches its own. */
  def protocolVersion(): Int = ProtocolVersion

  /** The session the attached Python wraps (called from Python during the attach). */
  def session(): SparkSession = attachedSession

  /** Whether this JVM runs an attached Python driver now. */
  def isAttached(): Boolean = current != null

  /** The registered handler, attaching a Python driver first where allowed. */
  def handler(): ViewletHandler = {
    val registered = ViewletBridge.handler()
    if (registered != null) return registered
    val session = activeSession().getOrElse(throw ViewletException.notEnabled())
    if (!allowed(session)) throw notEnabled(session)
    lock.lock()
    try {
      val meanwhile = ViewletBridge.handler()
      if (meanwhile != null) meanwhile
      else {
        resolutionMayAttach = true // a statement retries; resolution follows its outcome
        attach(session)
      }
    } catch {
      case e: ViewletException =>
        resolutionMayAttach = false
        throw e
    } finally lock.unlock()
  }

  /**
   * For name resolution (`SELECT * FROM v` before any Viewlet statement): attach like handler(),
   * but never wait for an attach in progress (its Python may be resolving names itself) and do
   * not retry after a failure until a Viewlet statement does. None: leave names to Spark.
   */
  def handlerForResolution(): Option[ViewletHandler] = {
    val registered = ViewletBridge.handler()
    if (registered != null) return Some(registered)
    if (!resolutionMayAttach) return None
    val session = activeSession().filter(s => allowedQuietly(s)).orNull
    if (session == null || !lock.tryLock()) return None
    try Option(ViewletBridge.handler()).orElse(Some(attach(session)))
    catch {
      case e: ViewletException =>
        resolutionMayAttach = false
        System.err.println(s"Viewlet: table names are left to Spark: ${e.getMessage}")
        None
    } finally lock.unlock()
  }

  /** Called by ViewletBridge on every (un)registration: wakes an attach waiting for it. */
  private[spark] def handlerChanged(): Unit = changed.synchronized(changed.notifyAll())

  /** Called when an attached Python process ended: forget its handler so a new one can start. */
  private[spark] def pythonExited(python: AttachedPython): Unit = {
    changed.synchronized(changed.notifyAll())
    if (current eq python) {
      current = null
      if (python.handler != null && (ViewletBridge.handler() eq python.handler)) {
        ViewletBridge.unregister()
      }
      if (!python.stopping) System.err.println(
        s"Viewlet: its attached Python process exited (${python.exitDescription}); the next " +
          "Viewlet statement starts a new one.")
    }
  }

  /**
   * Waits until a handler is registered, `python` has exited or the deadline passed.
   * True when a handler is registered.
   */
  private[spark] def awaitHandler(python: AttachedPython, deadlineNanos: Long): Boolean =
    changed.synchronized {
      while (!ViewletBridge.isRegistered && python.isAlive && System.nanoTime() < deadlineNanos) {
        val waitMs = math.max(1L, (deadlineNanos - System.nanoTime()) / 1000000L)
        changed.wait(waitMs)
      }
      ViewletBridge.isRegistered
    }

  private def attach(session: SparkSession): ViewletHandler = {
    attachedSession = engineSession(session)
    val choice = PythonChoice.of(session)
    val timeout = timeoutSeconds(session)
    val python = AttachedPython.start(choice, session.sparkContext.getConf)
    val deadline = System.nanoTime() + timeout * 1000000000L
    if (!awaitHandler(python, deadline)) {
      val reason =
        if (python.isAlive) s"did not register its handler within $timeout s ($TimeoutConf)"
        else s"exited (${python.exitDescription}) before registering its handler"
      python.stop()
      throw new ViewletException(AttachedPython.failureMessage(choice, reason, python.outputTail))
    }
    python.ready(ViewletBridge.handler())
    ShellInterrupt.install() // Ctrl-C in the spark-sql shell reaches the Python side too
    current = python
    python.handler
  }

  /**
   * The session the attached Python wraps: the JVM's default session when it runs. A Spark
   * Connect or Thrift server gives each client a session of its own, which ends with the
   * client; the Python side outlives them and serves every client's statements.
   */
  private def engineSession(statementSession: SparkSession): SparkSession =
    SparkSession.getDefaultSession.filterNot(_.sparkContext.isStopped).getOrElse(statementSession)

  private def activeSession(): Option[SparkSession] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession)

  private def mode(session: SparkSession): String =
    session.conf.get(AttachConf, "auto").trim.toLowerCase(Locale.ROOT)

  private def allowed(session: SparkSession): Boolean = mode(session) match {
    case "auto" => !pythonDriverPresent
    case "true" => true
    case "false" => false
    case other =>
      throw new ViewletException(
        s"$AttachConf must be auto, true or false, not '$other': auto (the default) starts a " +
          "Python driver for Viewlet statements unless PySpark already drives this JVM.")
  }

  private def allowedQuietly(session: SparkSession): Boolean =
    try allowed(session)
    catch { case _: ViewletException => false }

  /**
   * A Python driver owns this JVM: PySpark launched it (launch_gateway sets the env variable
   * and runs PythonGatewayServer) or spark-submit runs a Python app (PythonRunner). Both main
   * methods block for the app's lifetime, so the main thread's stack shows them.
   */
  private lazy val pythonDriverPresent: Boolean =
    sys.env.contains("_PYSPARK_DRIVER_CONN_INFO_PATH") || {
      import scala.jdk.CollectionConverters._
      Thread.getAllStackTraces.asScala.exists { case (thread, frames) =>
        thread.getName == "main" && frames.exists(f => PythonMains.contains(f.getClassName))
      }
    }

  private val PythonMains = Set(
    "org.apache.spark.api.python.PythonGatewayServer",
    "org.apache.spark.api.python.PythonGatewayServer$",
    "org.apache.spark.deploy.PythonRunner",
    "org.apache.spark.deploy.PythonRunner$")

  private def notEnabled(session: SparkSession): ViewletException =
    if (mode(session) == "false") {
      new ViewletException(
        "Viewlet is configured on this Spark session but not enabled, and " +
          s"$AttachConf=false keeps it from starting its Python side: remove that setting (or " +
          "set it to true), or call viewlet.enable(spark) from a PySpark driver.")
    } else ViewletException.notEnabled()

  private def timeoutSeconds(session: SparkSession): Long = {
    val text = session.conf.get(TimeoutConf, DefaultTimeoutSeconds.toString).trim
    text.toLongOption.filter(_ > 0).getOrElse(
      throw new ViewletException(
        s"$TimeoutConf must be a positive number of seconds, not '$text'."))
  }
}
