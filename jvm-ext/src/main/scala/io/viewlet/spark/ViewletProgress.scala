package io.viewlet.spark

import java.io.PrintStream
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.SparkContext
import org.apache.spark.scheduler._

/**
 * What Viewlet's progress display (python/viewlet/engine/runtime/progress.py) asks the JVM: the rows
 * the Spark jobs of a job group have read so far, and Spark's console progress bar held off
 * while the display owns the console line.
 */
object ViewletProgress {
  private val listeners = new java.util.WeakHashMap[SparkContext, GroupRows]()

  /** Rows read by the jobs of `group` so far: finished tasks, plus running tasks as their
   * last heartbeat reported. Starts counting on the first call for a SparkContext. */
  def rowsRead(sc: SparkContext, group: String): Long = listener(sc).rows(group)

  /** Stop counting `group` (its operation ended). */
  def forget(sc: SparkContext, group: String): Unit = listener(sc).forget(group)

  /** Starts counting now, before the group's first job (rows of earlier jobs are missed). */
  def watch(sc: SparkContext): Unit = listener(sc)

  private def listener(sc: SparkContext): GroupRows = listeners.synchronized {
    var l = listeners.get(sc)
    if (l == null) {
      l = new GroupRows
      sc.addSparkListener(l)
      listeners.put(sc, l)
    }
    l
  }

  /** Holds the console progress bar of `sc` off (nested holds count); see ConsoleBars. */
  def holdConsole(sc: SparkContext): Unit = ConsoleBars.hold(sc)

  def releaseConsole(): Unit = ConsoleBars.release()
}

/** Input rows per job group, from task ends and executor heartbeats. */
private class GroupRows extends SparkListener {
  private val RecordsRead = "internal.metrics.input.recordsRead"
  private val stageGroup = new ConcurrentHashMap[Integer, String]()
  private val finished = new ConcurrentHashMap[String, AtomicLong]()
  private val running = new ConcurrentHashMap[java.lang.Long, (String, Long)]()

  def rows(group: String): Long = {
    var total = Option(finished.get(group)).map(_.get).getOrElse(0L)
    running.values().forEach { case (g, n) => if (g == group) total += n }
    total
  }

  def forget(group: String): Unit = {
    finished.remove(group)
    running.entrySet().removeIf(e => e.getValue._1 == group)
    stageGroup.entrySet().removeIf(e => e.getValue == group)
  }

  override def onJobStart(jobStart: SparkListenerJobStart): Unit = {
    val group = Option(jobStart.properties).map(_.getProperty("spark.jobGroup.id")).orNull
    if (group != null) jobStart.stageIds.foreach(id => stageGroup.put(id, group))
  }

  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit = {
    running.remove(taskEnd.taskInfo.taskId)
    val group = stageGroup.get(taskEnd.stageId)
    if (group != null && taskEnd.taskMetrics != null) {
      finished.computeIfAbsent(group, _ => new AtomicLong())
        .addAndGet(taskEnd.taskMetrics.inputMetrics.recordsRead)
    }
  }

  override def onExecutorMetricsUpdate(update: SparkListenerExecutorMetricsUpdate): Unit =
    update.accumUpdates.foreach { case (taskId, stageId, _, accums) =>
      val group = stageGroup.get(stageId)
      if (group != null) {
        accums.find(_.name.contains(RecordsRead)).flatMap(_.update).foreach {
          case n: java.lang.Long => running.put(taskId, (group, n.longValue))
          case n: Long => running.put(taskId, (group, n))
          case _ =>
        }
      }
    }
}

/**
 * Spark's ConsoleProgressBar draws `\r[Stage ...]\r` on System.err every 200 ms, on the line
 * where Viewlet's display draws its own. While held, System.err (wrapped once, on the first
 * hold) drops the bar's drawings and clearings; the line the bar left, if any, is cleared
 * first. Everything else passes through unchanged.
 *
 * Spark 4.0's bar prints to System.err as it is at each drawing; newer ones (4.3) keep the
 * System.err of their construction in a field (`console`), made before any extension loads,
 * so the bar of the context is pointed at the filter too (when it has such a field).
 */
object ConsoleBars {
  private var holds = 0
  @volatile private var holding = false
  @volatile private var barShown = false
  private var original: PrintStream = _
  private var filter: BarFilter = _

  def hold(sc: SparkContext): Unit = synchronized {
    if (original == null) {
      original = System.err
      filter = new BarFilter(original)
      System.setErr(filter)
    }
    filterBarStream(sc)
    holds += 1
    if (!holding) {
      holding = true
      if (barShown) { // the bar's last drawing is still on the line: clear it as Spark would
        original.print("\r" + " " * terminalWidth + "\r")
        original.flush()
        barShown = false
      }
    }
  }

  def release(): Unit = synchronized {
    holds = math.max(0, holds - 1)
    holding = holds > 0
  }

  /** The context's bar, if it keeps a stream of its own, prints through a filter. */
  private def filterBarStream(sc: SparkContext): Unit =
    try {
      // progressBar is private[spark]: public in bytecode, out of reach of Scala code here
      classOf[SparkContext].getMethod("progressBar").invoke(sc) match {
        case Some(bar: AnyRef) =>
          val field = bar.getClass.getDeclaredField("console")
          field.setAccessible(true)
          field.get(bar) match {
            case _: BarFilter =>
            case stream: PrintStream =>
              field.set(bar, if (stream eq original) filter else new BarFilter(stream))
            case _ =>
          }
        case _ =>
      }
    } catch {
      case _: NoSuchFieldException => // a bar that prints to System.err itself (Spark 4.0)
      // a bar out of reflection's reach still draws, over Viewlet's line: cosmetic only
      case _: ReflectiveOperationException | _: RuntimeException =>
    }

  private def terminalWidth: Int =
    sys.env.get("COLUMNS").flatMap(_.trim.toIntOption).filter(_ > 0).getOrElse(80)

  /** A drawing (`\r[Stage 3:==>  (2 + 1) / 4]\r`) or a clearing (`\r    \r`) of the bar. */
  private[spark] def isBar(s: String): Boolean =
    s != null && s.length > 1 && s.charAt(0) == '\r' && s.charAt(s.length - 1) == '\r' &&
      (s.startsWith("\r[Stage ") || s.trim.isEmpty)

  /** Whether to drop `s`; tracks whether a bar drawing is left on the line. */
  private def drop(s: String): Boolean =
    if (!isBar(s)) false
    else if (holding) true
    else {
      barShown = !s.trim.isEmpty
      false
    }

  private class BarFilter(out: PrintStream) extends PrintStream(out, true) {
    override def print(s: String): Unit = if (!drop(s)) out.print(s)

    override def printf(format: String, args: Object*): PrintStream = {
      if (!drop(format)) out.printf(format, args: _*)
      this
    }

    override def format(format: String, args: Object*): PrintStream = {
      if (!drop(format)) out.format(format, args: _*)
      this
    }
  }
}
