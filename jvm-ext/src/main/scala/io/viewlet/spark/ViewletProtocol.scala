package io.viewlet.spark

import com.fasterxml.jackson.databind.{DeserializationFeature, JsonNode, ObjectMapper}

/** Calls into the Python handler and decodes its JSON replies; every failure is a ViewletException. */
object ViewletProtocol {
  private val mapper = new ObjectMapper()
    .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
    .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)

  /** The registered handler; where no Python driver exists, one is attached first. */
  def handler(): ViewletHandler = ViewletAttach.handler()

  /** describe(): the reply node; error replies throw (kind "parse" as a ParseException). */
  def describe(statement: String): JsonNode =
    decode(call(handler().describe(statement)), statement, parsePhase = true)

  /**
   * execute(): the reply node; error replies throw ViewletException. The statement runs in
   * Python while this thread waits in a Py4J socket read, which Thread.interrupt does not end:
   * a watcher passes an interrupt of this thread (Spark Connect interrupting the client's
   * operation) on to the statement, which stops at its next step like on Ctrl-C.
   */
  def execute(statement: String): JsonNode = {
    val h = handler()
    val id = java.util.UUID.randomUUID().toString
    val watch = InterruptWatch.start(Thread.currentThread(), () =>
      h.cancelStatement(id, "its Spark Connect operation was interrupted"))
    try decode(call(h.executeStatement(id, statement)), statement, parsePhase = false)
    finally watch.finish()
  }

  /** resolveRelation(): the plan object Python returned, or null. */
  def resolveRelation(nameParts: Seq[String]): AnyRef = {
    val json = mapper.writeValueAsString(nameParts.toArray)
    call(handler().resolveRelation(json))
  }

  /** resolveRelationAt(): the plan of a name at a version or timestamp, or null. */
  def resolveRelationAt(nameParts: Seq[String], version: Option[String],
                        timestampMicros: Option[Long]): AnyRef = {
    val json = mapper.writeValueAsString(nameParts.toArray)
    call(handler().resolveRelationAt(json, version.orNull,
      timestampMicros.map(java.lang.Long.valueOf).orNull))
  }

  /** Runs a handler call, turning Py4J failures (a Python exception) into ViewletException. */
  def call[T](body: => T): T =
    try body
    catch {
      case e: ViewletException => throw e
      case e: Exception if e.getClass.getName.startsWith("py4j.") =>
        throw new ViewletException(pythonMessage(e.getMessage), cause = Some(e))
    }

  /** The Python exception line(s) out of a Py4J "Return Message: Traceback ..." text. */
  def pythonMessage(raw: String): String = {
    if (raw == null) return "Viewlet's Python handler failed"
    val marker = "Traceback (most recent call last):"
    val at = raw.lastIndexOf(marker)
    if (at < 0) return raw.trim
    val lines = raw.substring(at + marker.length).split("\n").toSeq
    val lastFrameLine = lines.lastIndexWhere(l => l.startsWith(" ") || l.startsWith("\t"))
    val msg = lines.drop(lastFrameLine + 1).mkString("\n").trim
    if (msg.isEmpty) raw.trim else msg
  }

  private def decode(reply: String, statement: String, parsePhase: Boolean): JsonNode = {
    if (reply == null) throw new ViewletException("Viewlet's Python handler returned no reply")
    val node =
      try mapper.readTree(reply)
      catch {
        case e: Exception =>
          throw new ViewletException(
            s"Viewlet's Python handler returned invalid JSON: ${e.getMessage}", cause = Some(e))
      }
    val err = node.get("error")
    if (err != null && !err.isNull) throw errorOf(err, statement, parsePhase)
    node
  }

  private def errorOf(err: JsonNode, statement: String, parsePhase: Boolean): Exception = {
    val message = Option(err.get("message")).filterNot(_.isNull).map(_.asText)
      .getOrElse(err.toString)
    val kind = Option(err.get("kind")).filterNot(_.isNull).map(_.asText).getOrElse("")
    val position = Option(err.get("position")).filter(_.canConvertToInt).map(_.asInt)
    if (parsePhase && kind == "parse") new ViewletParseException(message, statement, position)
    else new ViewletException(message, Some(statement), position)
  }
}

/** Watches a thread for an interrupt while it waits on Python; runs `onInterrupt` once. */
private[spark] class InterruptWatch private (caller: Thread, onInterrupt: () => Unit)
  extends Thread("viewlet-interrupt-watch") {
  @volatile private var running = true
  setDaemon(true)

  override def run(): Unit = {
    // caller.isInterrupted only reads the flag (the caller's own code may still see it)
    while (running && !caller.isInterrupted) {
      try Thread.sleep(InterruptWatch.PollMillis)
      catch { case _: InterruptedException => return }
    }
    if (running) {
      try onInterrupt()
      catch { case e: Exception => System.err.println(s"Viewlet: cancelling failed: $e") }
    }
  }

  def finish(): Unit = {
    running = false
    interrupt()
  }
}

private[spark] object InterruptWatch {
  val PollMillis = 100L

  def start(caller: Thread, onInterrupt: () => Unit): InterruptWatch = {
    val w = new InterruptWatch(caller, onInterrupt)
    w.start()
    w
  }
}
