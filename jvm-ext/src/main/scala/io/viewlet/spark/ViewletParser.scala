package io.viewlet.spark

import java.lang.reflect.{InvocationHandler, InvocationTargetException, Method, Proxy}
import java.util.regex.Pattern

import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Wraps Spark's parser: Viewlet statements become a ViewletCommand, all else goes to Spark
 * (statements about tables that name Viewlet's relations: see ViewletRelations).
 *
 * A dynamic proxy rather than a class implementing ParserInterface: Spark keeps adding abstract
 * methods to that interface (4.3 added splitStatements), and a class compiled against 4.0 fails
 * with AbstractMethodError there. The proxy implements whatever the running Spark declares.
 */
class ViewletParser private (delegate: ParserInterface) extends InvocationHandler {

  override def invoke(proxy: AnyRef, method: Method, args: Array[AnyRef]): AnyRef = {
    val name = method.getName
    // parsePlan and parsePlanWithParameters (newer Sparks) both take the statement text first.
    if (name.startsWith("parsePlan") && args != null && args.nonEmpty) args(0) match {
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
        case e: InvocationTargetException => throw e.getCause
      }
    parsed match {
      case plan: LogicalPlan if name.startsWith("parsePlan") => ViewletRelations.rewrite(plan)
      case other => other
    }
  }
}

object ViewletParser {
  // MATERIALIZED is Databricks' spelling of the same statements (CREATE OR REFRESH too).
  private val Statement = Pattern.compile(
    "(?is)^(CREATE(\\s+OR\\s+(REPLACE|REFRESH))?|DROP|REFRESH|SHOW|DESCRIBE|DESC|EXPLAIN|ALTER)" +
      "\\s+(INCREMENTAL|MATERIALIZED)\\s+VIEWS?\\b.*")

  def wrap(delegate: ParserInterface): ParserInterface =
    Proxy.newProxyInstance(
      classOf[ParserInterface].getClassLoader,
      Array[Class[_]](classOf[ParserInterface]),
      new ViewletParser(delegate)).asInstanceOf[ParserInterface]

  /** True when the text, after leading whitespace and comments, is a Viewlet statement. */
  def isViewletStatement(sql: String): Boolean =
    sql != null && Statement.matcher(statementText(sql.substring(skipLeadingComments(sql))))
      .matches()

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
