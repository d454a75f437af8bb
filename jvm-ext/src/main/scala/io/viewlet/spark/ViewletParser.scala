package io.viewlet.spark

import java.lang.reflect.{InvocationHandler, InvocationTargetException, Method, Proxy}
import java.util.Locale

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.parser.{ParseException, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SingleStatement}
import org.apache.spark.sql.execution.command.ExplainCommand

/**
 * Wraps Spark's parser: Viewlet statements become a ViewletCommand, all else goes to Spark
 * (statements about tables that name Viewlet's relations: see ViewletRelations).
 *
 * A dynamic proxy rather than a class implementing ParserInterface: Spark keeps adding abstract
 * methods to that interface (4.3 added splitStatements), and a class compiled against 4.0 fails
 * with AbstractMethodError there. The proxy implements whatever the running Spark declares.
 *
 * Spark 4.1+ parses `CREATE MATERIALIZED VIEW` itself (a Declarative Pipelines dataset, which
 * runs only inside a pipeline). Viewlet's statements are decided on the text before Spark sees
 * it, so in a Viewlet session they are Viewlet's; Spark's node can only come from a statement
 * nested where the text check does not look (a SQL script), and is refused (nestedPipelineView).
 *
 * In a session without delta-spark, Delta statements (CREATE TABLE ... USING delta, writes to
 * Delta tables, Delta Lake's own SQL) fail with what to do instead (ViewletDeltaHint).
 */
class ViewletParser private (session: SparkSession, delegate: ParserInterface)
  extends InvocationHandler {

  override def invoke(proxy: AnyRef, method: Method, args: Array[AnyRef]): AnyRef = {
    val name = method.getName
    // parsePlan and parsePlanWithParameters (newer Sparks) both take the statement text first.
    if (name.startsWith("parsePlan") && args != null && args.nonEmpty &&
        !ViewletParser.sparkParses) args(0) match {
      case sql: String if ViewletParser.isViewletStatement(sql) =>
        return ViewletStatement.plan(ViewletParser.statementText(sql))
      case sql: String if ViewletRelations.maybeTableStatement(sql) =>
        ViewletStatement.planIfClaimed(ViewletParser.statementText(
          sql.substring(ViewletParser.skipLeadingComments(sql)))) match {
          case Some(plan) => return plan
          case None =>
        }
      case _ =>
    }
    if (method.getDeclaringClass == classOf[Object]) name match {
      case "equals" => return java.lang.Boolean.valueOf(proxy eq args(0))
      case "hashCode" => return Integer.valueOf(System.identityHashCode(proxy))
      case "toString" => return s"ViewletParser($delegate)"
      case _ =>
    }
    val parsed =
      try method.invoke(delegate, (if (args == null) Array.empty[AnyRef] else args): _*)
      catch {
        case e: InvocationTargetException => e.getCause match {
          case p: ParseException if name.startsWith("parsePlan") => throw deltaHint(args(0), p)
          case other => throw other
        }
      }
    parsed match {
      case plan: LogicalPlan if name.startsWith("parsePlan") && !ViewletParser.sparkParses =>
        ViewletParser.nestedPipelineView(plan).foreach { node =>
          throw ViewletParser.nestedStatementError(args(0).asInstanceOf[String], node)
        }
        needsDeltaSpark(plan).getOrElse(ViewletRelations.rewrite(plan))
      case other => other
    }
  }

  /** A Delta statement (CREATE TABLE ... USING delta, a write to a Delta table) in a session
   * without delta-spark: a ViewletFailure that analysis throws (ViewletDeltaHint). */
  private def needsDeltaSpark(plan: LogicalPlan): Option[LogicalPlan] =
    if (session == null || ViewletDeltaHint.deltaSparkIn(session)) None
    else ViewletDeltaHint.needsDeltaSpark(session, plan).map { what =>
      ViewletFailure(new ViewletException(ViewletDeltaHint.message(what)))
    }

  /** Spark's syntax error, or, for Delta's own statement in a session without delta-spark,
   * one that says what is missing. */
  private def deltaHint(text: AnyRef, error: ParseException): ParseException = text match {
    case sql: String if session != null =>
      ViewletDeltaHint.deltaStatement(sql) match {
        case Some(statement) if !ViewletDeltaHint.deltaSparkIn(session) =>
          ViewletDeltaHint.parseError(sql, statement)
        case _ => error
      }
    case _ => error
  }
}

object ViewletParser {
  // MATERIALIZED is Databricks' spelling of the same statements (CREATE OR REFRESH too).
  private val Kinds = Set("INCREMENTAL", "MATERIALIZED")
  private val Verbs = Set("DROP", "REFRESH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "ALTER")
  // Spark's EXPLAIN modes: `EXPLAIN EXTENDED CREATE MATERIALIZED VIEW` is claimed too, so that
  // Spark 4.1+ never plans it as a pipeline dataset (Python refuses the mode with a remedy).
  private val ExplainModes = Set("LOGICAL", "FORMATTED", "EXTENDED", "CODEGEN", "COST")
  // Spark 4.1+'s plan node of its own CREATE MATERIALIZED VIEW (absent before: found by name).
  private val PipelineView = "CreateMaterializedViewAsSelect"

  /**
   * While set on a thread, every statement that thread parses is Spark's alone: `viewlet
   * pipelines` has Spark's Declarative Pipelines code (SqlGraphRegistrationContext) parse a
   * pipeline's SQL files in a Viewlet session, where CREATE MATERIALIZED VIEW must come back
   * as Spark's pipeline dataset, not as a Viewlet statement. Thread-local: PySpark pins each
   * Python thread to a JVM thread, so other threads' statements stay Viewlet's meanwhile.
   */
  private val sparkParsing: ThreadLocal[java.lang.Boolean] =
    ThreadLocal.withInitial[java.lang.Boolean](() => java.lang.Boolean.FALSE)

  def sparkParses: Boolean = sparkParsing.get().booleanValue()

  def setSparkParses(on: Boolean): Unit = sparkParsing.set(java.lang.Boolean.valueOf(on))

  def wrap(session: SparkSession, delegate: ParserInterface): ParserInterface =
    Proxy.newProxyInstance(
      classOf[ParserInterface].getClassLoader,
      Array[Class[_]](classOf[ParserInterface]),
      new ViewletParser(session, delegate)).asInstanceOf[ParserInterface]

  /**
   * True when the statement is Viewlet's: `<verb> INCREMENTAL|MATERIALIZED VIEW[S] ...`,
   * `CREATE [OR REPLACE | OR REFRESH] ...` or `EXPLAIN [mode] CREATE ...`, its words separated
   * by whitespace or comments as Spark's lexer allows (`CREATE /* c */ MATERIALIZED VIEW`).
   */
  def isViewletStatement(sql: String): Boolean = {
    if (sql == null) return false
    val w = leadingWords(sql, 6)
    def word(i: Int) = if (i < w.length) w(i) else ""
    def view(i: Int) = Kinds(word(i)) && (word(i + 1) == "VIEW" || word(i + 1) == "VIEWS")
    def create(i: Int) = word(i) == "CREATE" &&
      (view(i + 1) || word(i + 1) == "OR" && Set("REPLACE", "REFRESH")(word(i + 2)) && view(i + 3))
    word(0) match {
      case "CREATE" => create(0)
      case "EXPLAIN" => view(1) || create(1) || ExplainModes(word(1)) && create(2)
      case verb => Verbs(verb) && view(1)
    }
  }

  /**
   * Up to `n` leading words, upper-cased, with whitespace and comments between them skipped;
   * reading stops at anything else (a quote, a parenthesis), so a later word is never taken
   * from inside a literal.
   */
  def leadingWords(sql: String, n: Int): Seq[String] = {
    val words = ArrayBuffer.empty[String]
    var i = skipLeadingComments(sql)
    while (words.length < n && i < sql.length && isWordChar(sql.charAt(i))) {
      val start = i
      while (i < sql.length && isWordChar(sql.charAt(i))) i += 1
      words += sql.substring(start, i).toUpperCase(Locale.ROOT)
      i += skipLeadingComments(sql.substring(i))
    }
    words.toSeq
  }

  private def isWordChar(c: Char): Boolean = c.isLetterOrDigit || c == '_'

  /**
   * Spark's own CREATE MATERIALIZED VIEW node in a plan Spark parsed (Spark 4.1+): a Viewlet
   * statement inside a SQL script, directly or under EXPLAIN, which Spark would otherwise
   * refuse as a pipeline dataset run outside a pipeline.
   */
  def nestedPipelineView(plan: LogicalPlan): Option[LogicalPlan] = plan.find {
    // a script's statement and an EXPLAIN's hold their plan outside their children
    case s: SingleStatement => nestedPipelineView(s.parsedPlan).isDefined
    case e: ExplainCommand => nestedPipelineView(e.logicalPlan).isDefined
    case p => p.getClass.getSimpleName == PipelineView
  }

  def nestedStatementError(sql: String, node: LogicalPlan): ParseException =
    new ViewletParseException(
      "Viewlet's CREATE MATERIALIZED VIEW runs as a statement of its own (one spark.sql " +
        "call), not inside a SQL script (BEGIN ... END), where Spark takes it for a " +
        "Declarative Pipelines dataset, which runs only in a pipeline.",
      sql, node.origin.startIndex)

  /** The text handed to Python: as written, minus trailing semicolons and whitespace. */
  def statementText(sql: String): String = {
    var end = sql.length
    while (end > 0 && (sql.charAt(end - 1).isWhitespace || sql.charAt(end - 1) == ';')) end -= 1
    sql.substring(0, end)
  }

  /** Offset after leading whitespace, `--` line comments and (nested) block comments. */
  def skipLeadingComments(s: String): Int = {
    var i = 0
    var done = false
    while (!done && i < s.length) {
      if (s.charAt(i).isWhitespace) i += 1
      else if (s.startsWith("--", i)) {
        val nl = s.indexOf('\n', i)
        i = if (nl < 0) s.length else nl + 1
      } else if (s.startsWith("/*", i)) {
        var depth = 0
        var closed = false
        while (!closed && i < s.length) {
          if (s.startsWith("/*", i)) { depth += 1; i += 2 }
          else if (s.startsWith("*/", i)) { depth -= 1; i += 2; closed = depth == 0 }
          else i += 1
        }
      } else done = true
    }
    i
  }
}
