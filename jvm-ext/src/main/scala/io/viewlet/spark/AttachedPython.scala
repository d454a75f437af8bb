package io.viewlet.spark

import java.io.IOException
import java.lang.reflect.InvocationTargetException
import java.nio.charset.StandardCharsets

import scala.collection.mutable

import org.apache.spark.SparkConf
import org.apache.spark.sql.SparkSession

/** Which Python runs the attached driver, and where that choice came from (for errors). */
case class PythonChoice(executable: String, source: String)

object PythonChoice {
  def of(session: SparkSession): PythonChoice = {
    val conf = session.conf.getOption(ViewletAttach.PythonConf).map(_.trim).filter(_.nonEmpty)
    def env(name: String) = sys.env.get(name).map(_.trim).filter(_.nonEmpty)
    conf.map(PythonChoice(_, ViewletAttach.PythonConf))
      .orElse(env("PYSPARK_DRIVER_PYTHON").map(PythonChoice(_, "PYSPARK_DRIVER_PYTHON")))
      .orElse(env("PYSPARK_PYTHON").map(PythonChoice(_, "PYSPARK_PYTHON")))
      .getOrElse(PythonChoice("python3", "the default; set " + ViewletAttach.PythonConf))
  }
}

/**
 * One `python -m viewlet.api.attach` process and the Py4J server it connects to. Its output
 * (stdout and stderr merged) is kept as a short tail for error messages until it is ready,
 * then passed on to this JVM's stderr. Its stdin stays open and unused: the Python side exits
 * when it reaches end of file, i.e. when this JVM is gone.
 */
class AttachedPython private (
    val choice: PythonChoice,
    server: Py4JGateway,
    process: Process) {

  @volatile private var forwarding = false
  @volatile private[spark] var stopping = false
  @volatile private[spark] var handler: ViewletHandler = _
  private val tail = mutable.Queue.empty[String]
  private val hook = new Thread(() => stopNow(), "viewlet-attach-shutdown")

  private val drain = new Thread(() => pump(), "viewlet-attach-output")
  drain.setDaemon(true)

  private def start(): Unit = {
    Runtime.getRuntime.addShutdownHook(hook)
    drain.start()
  }

  def isAlive: Boolean = process.isAlive

  def exitDescription: String =
    if (process.isAlive) "still running" else s"exit code ${process.exitValue()}"

  /** The last lines the process printed (while it was starting). */
  def outputTail: Seq[String] = tail.synchronized(tail.toList)

  /** Moves the complete lines of `pending` (all of it with `flushAll`) into the tail, or
   * to stderr once forwarding. */
  private def keepLines(pending: java.io.ByteArrayOutputStream, flushAll: Boolean): Unit = {
    val text = new String(pending.toByteArray, StandardCharsets.UTF_8)
    val end = if (flushAll) text.length else text.lastIndexOf('\n') + 1
    if (end <= 0) return
    val rest = text.substring(end)
    pending.reset()
    pending.write(rest.getBytes(StandardCharsets.UTF_8))
    if (forwarding) System.err.print(text.substring(0, end))
    else text.substring(0, end).split("\n").foreach { line =>
      tail.synchronized {
        tail.enqueue(line)
        while (tail.size > AttachedPython.TailLines) tail.dequeue()
      }
    }
  }

  private[spark] def ready(registered: ViewletHandler): Unit = {
    handler = registered
    forwarding = true
    outputTail.foreach(System.err.println) // what it printed while starting, e.g. warnings
  }

  /** Ends the process and the gateway (a failed attach). */
  def stop(): Unit = {
    try Runtime.getRuntime.removeShutdownHook(hook)
    catch { case _: IllegalStateException => } // already shutting down
    stopNow()
  }

  private def stopNow(): Unit = {
    stopping = true
    process.destroy()
    server.shutdown()
  }

  /**
   * Its output: kept as lines for the tail until it is ready, then passed on as it comes,
   * byte for byte (Viewlet's progress line on a terminal rewrites itself with `\r`).
   */
  private def pump(): Unit = {
    val in = process.getInputStream
    val buffer = new Array[Byte](8192)
    val pending = new java.io.ByteArrayOutputStream()
    try {
      var n = in.read(buffer)
      while (n >= 0) {
        if (forwarding) {
          if (pending.size > 0) { keepLines(pending, flushAll = true) }
          System.err.write(buffer, 0, n)
          System.err.flush()
        } else {
          pending.write(buffer, 0, n)
          keepLines(pending, flushAll = false)
        }
        n = in.read(buffer)
      }
    } catch {
      case _: IOException => // the process is gone
    }
    try process.waitFor()
    catch { case _: InterruptedException => }
    server.shutdown()
    ViewletAttach.pythonExited(this)
  }
}

object AttachedPython {
  val TailLines = 30
  val Module = "viewlet.api.attach"

  /** Starts the gateway and the Python process; throws ViewletException if either cannot start. */
  def start(choice: PythonChoice, conf: SparkConf): AttachedPython = {
    val server = Py4JGateway.start(conf)
    val builder = new ProcessBuilder(choice.executable, "-m", Module).redirectErrorStream(true)
    val env = builder.environment()
    env.put("PYSPARK_GATEWAY_PORT", server.port.toString)
    env.put("PYSPARK_GATEWAY_SECRET", server.secret)
    env.put("PYTHONUNBUFFERED", "YES")
    // Its stderr is a pipe to this JVM; whether this JVM's console is a terminal decides how
    // Viewlet's progress shows (python/viewlet/engine/runtime/console.py).
    env.put("VIEWLET_STDERR_TTY", if (System.console() != null) "1" else "0")
    val process =
      try builder.start()
      catch {
        case e: IOException =>
          server.shutdown()
          throw new ViewletException(
            s"Viewlet could not start its Python side: cannot run '${choice.executable}' " +
              s"(${choice.source}): ${e.getMessage}. " + remedy(choice), cause = Some(e))
      }
    val attached = new AttachedPython(choice, server, process)
    attached.start()
    attached
  }

  def failureMessage(choice: PythonChoice, reason: String, output: Seq[String]): String = {
    val text = output.mkString("\n")
    // A module or any module under it, as Python names the first one it cannot find.
    def says(missing: String) = text.contains(s"No module named '$missing")
    val hint =
      if (says("viewlet.api")) {
        "The Viewlet installed in that Python is older than this jar (no viewlet.api.attach). "
      } else if (says("viewlet")) "Viewlet is not installed in that Python. "
      else if (says("pyspark")) "PySpark is not installed in that Python. "
      else ""
    val shown =
      if (output.isEmpty) "" else output.mkString("\nIts output (last lines):\n", "\n", "\n")
    s"Viewlet could not start its Python side: '${choice.executable} -m $Module' " +
      s"(${choice.source}) $reason.$shown$hint${remedy(choice)}"
  }

  private def remedy(choice: PythonChoice): String =
    s"Set ${ViewletAttach.PythonConf} to a Python where Viewlet is installed, e.g. --conf " +
      s"${ViewletAttach.PythonConf}=/path/to/venv/bin/python (`viewlet sql` starts the shell " +
      "with the right one)."
}

/**
 * Spark's own Py4J server (what PythonRunner starts for spark-submit'ed Python apps). It is
 * private[spark] in Scala, so it is reached by reflection; it picks the secret and the
 * pinned-thread mode (PYSPARK_PIN_THREAD) that pyspark's client expects.
 */
class Py4JGateway private (server: AnyRef) {
  private val cls = server.getClass
  val port: Int = cls.getMethod("getListeningPort").invoke(server).asInstanceOf[Int]
  val secret: String = cls.getMethod("secret").invoke(server).asInstanceOf[String]

  def shutdown(): Unit =
    try cls.getMethod("shutdown").invoke(server)
    catch { case _: Exception => } // already shut down
}

object Py4JGateway {
  private val ServerClass = "org.apache.spark.api.python.Py4JServer"

  def start(conf: SparkConf): Py4JGateway =
    try {
      val cls = Class.forName(ServerClass)
      val server = cls.getConstructor(classOf[SparkConf]).newInstance(conf).asInstanceOf[AnyRef]
      cls.getMethod("start").invoke(server)
      new Py4JGateway(server)
    } catch {
      case e: InvocationTargetException =>
        throw new ViewletException(
          s"Viewlet could not start a Py4J gateway for its Python side: ${e.getCause}",
          cause = Some(e.getCause))
      case e: ReflectiveOperationException =>
        throw new ViewletException(
          s"Viewlet cannot attach a Python driver to this Spark: $ServerClass is missing or " +
            s"changed ($e). Use Viewlet from PySpark (viewlet.enable(spark)) instead.",
          cause = Some(e))
    }
}
