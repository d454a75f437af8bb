package io.viewlet.spark

import org.antlr.v4.runtime.{CharStreams, CommonToken, ParserRuleContext, Token, TokenSource}
import org.antlr.v4.runtime.misc.Pair
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.parser.ParseException

/**
 * A Viewlet error with the handler's message verbatim (PySpark: AnalysisException).
 * Uses the 7-argument AnalysisException constructor: it exists unchanged in Spark 4.0-4.3, so
 * no error class is needed and the message is not re-templated.
 */
class ViewletException(
    val viewletMessage: String,
    val statement: Option[String] = None,
    val position: Option[Int] = None,
    cause: Option[Throwable] = None)
  extends AnalysisException(viewletMessage, None, None, cause, None, Map.empty, Array.empty) {

  override def getMessage: String =
    viewletMessage + statement.map(ViewletException.renderPosition(_, position)).getOrElse("")

  // The analyzer re-creates errors thrown while resolving a node (a table function) as plain
  // AnalysisExceptions with the node's position; without an error class PySpark then fails
  // to render them. Keep ours intact (its message names what failed).
  override def withPosition(origin: org.apache.spark.sql.catalyst.trees.Origin): AnalysisException =
    this
}

/**
 * A syntax error in a Viewlet statement (PySpark: ParseException). getMessage is the handler's
 * message verbatim plus Spark's usual "(line l, pos p) == SQL ==" pointer; the error condition
 * is Spark's PARSE_SYNTAX_ERROR. Built through ParseException's (errorClass, params, ctx)
 * constructor because it is the only one present in both Spark 4.0 and 4.3.
 */
class ViewletParseException(val viewletMessage: String, statement: String, position: Option[Int])
  extends ParseException(
    "PARSE_SYNTAX_ERROR",
    Map(
      "error" -> ViewletException.tokenAt(statement, position),
      "hint" -> (": " + viewletMessage)),
    ViewletException.context(statement, position)) {

  override def getMessage: String =
    viewletMessage + ViewletException.renderPosition(statement, position)

  // Spark's parser driver re-creates ParseExceptions through withCommand; keep ours intact.
  override def withCommand(cmd: String): ParseException = this
}

object ViewletException {
  val NotEnabled: String =
    "Viewlet is configured on this Spark session but not enabled: call viewlet.enable(spark) " +
      "in Python (the spark-sql shell: start it with 'viewlet sql')."

  def notEnabled(): ViewletException = new ViewletException(NotEnabled)

  /** (line 1-based, column 0-based) of a char offset, clamped into the text. */
  def lineAndColumn(text: String, offset: Int): (Int, Int) = {
    val end = math.max(0, math.min(offset, text.length))
    val before = text.substring(0, end)
    (before.count(_ == '\n') + 1, end - (before.lastIndexOf('\n') + 1))
  }

  /** Spark's ParseException layout: " (line l, pos p)" and the statement with a pointer. */
  def renderPosition(text: String, position: Option[Int]): String = position match {
    case None => ""
    case Some(offset) =>
      val (line, col) = lineAndColumn(text, offset)
      val lines = text.split("\n", -1)
      val (above, below) = lines.splitAt(line)
      val sb = new StringBuilder(s" (line $line, pos $col)\n\n== SQL ==\n")
      above.foreach(l => sb.append(l).append('\n'))
      sb.append("-" * col).append("^^^\n")
      below.foreach(l => sb.append(l).append('\n'))
      sb.toString
  }

  /** The word at the error position, quoted as in Spark's "Syntax error at or near 'x'". */
  def tokenAt(text: String, position: Option[Int]): String = {
    val start = position.getOrElse(0)
    if (start >= text.length) "end of input"
    else {
      val word = text.substring(math.max(0, start)).trim.takeWhile(c => !c.isWhitespace)
      if (word.isEmpty) "end of input" else s"'$word'"
    }
  }

  /** A parser context whose start token sits at the error position, over the statement text. */
  def context(text: String, position: Option[Int]): ParserRuleContext = {
    val offset = math.max(0, math.min(position.getOrElse(0), text.length))
    val (line, col) = lineAndColumn(text, offset)
    val source = new Pair[TokenSource, org.antlr.v4.runtime.CharStream](
      null, CharStreams.fromString(text))
    val token = new CommonToken(source, Token.INVALID_TYPE, Token.DEFAULT_CHANNEL, offset, offset)
    token.setLine(line)
    token.setCharPositionInLine(col)
    val ctx = new ParserRuleContext()
    ctx.start = token
    ctx.stop = token
    ctx
  }
}
