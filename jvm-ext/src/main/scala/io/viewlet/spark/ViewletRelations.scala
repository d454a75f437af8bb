package io.viewlet.spark

import java.util.regex.Pattern

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.catalyst.analysis.{RelationTimeTravel, UnresolvedRelation}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical._

/**
 * Spark statements about tables, answered for the names Viewlet owns where Spark's catalog
 * cannot: an incremental view that is not a Delta table of the catalog (every view in a
 * session without delta-spark, where it is a temporary view over its result table), and,
 * without delta-spark, `delta.`/path`` and registered tables.
 *
 *  - `DESCRIBE [TABLE] [EXTENDED|FORMATTED] name`, `DESCRIBE HISTORY name` and `ALTER TABLE
 *    name SET TBLPROPERTIES (...)`: the handler's describe() claims the statement (a
 *    ViewletCommand) or declines it (Spark parses it).
 *  - `... FROM name VERSION AS OF n | TIMESTAMP AS OF t`: Spark refuses time travel on a
 *    temporary view and knows no `delta` source without delta-spark, so the parsed
 *    RelationTimeTravel becomes a ViewletTimeTravel that ViewletResolution resolves through
 *    the handler, at the version asked for.
 *  - INSERT / UPDATE / DELETE / MERGE into an incremental view: refused with a message that
 *    says what to do (only Viewlet writes a view's result table).
 *
 * Python is asked only when a statement has one of these shapes, once per statement.
 */
object ViewletRelations {
  private val mapper = new ObjectMapper()

  private val Describe = Pattern.compile(
    "(?is)^(DESC|DESCRIBE)\\s+(?:(?:HISTORY|TABLE|EXTENDED|FORMATTED)\\s+)*" +
      "(?:`(?:[^`]|``)*`|[^\\s`(;])+$")

  private val SetProperties = Pattern.compile(
    "(?is)^ALTER\\s+TABLE\\s+\\S.*\\s+SET\\s+TBLPROPERTIES\\s*\\(.*\\)$")

  /** True for text shaped like a DESCRIBE of one table or an ALTER TABLE ... SET
   * TBLPROPERTIES (Python decides whose table it is). */
  def maybeTableStatement(sql: String): Boolean = {
    if (sql == null) return false
    val text = ViewletParser.statementText(sql.substring(ViewletParser.skipLeadingComments(sql)))
    SetProperties.matcher(text).matches() || (Describe.matcher(text).matches() &&
      !text.toUpperCase(java.util.Locale.ROOT).matches("(?s)(DESC|DESCRIBE)\\s+" +
        "(INCREMENTAL|MATERIALIZED|FUNCTION|DATABASE|SCHEMA|NAMESPACE|CATALOG|QUERY|DETAIL)\\b.*"))
  }

  /** The plan after Spark parsed it: time travel and writes on Viewlet's names handled. */
  def rewrite(plan: LogicalPlan): LogicalPlan = {
    val travels = plan.collectWithSubqueries {
      case RelationTimeTravel(u: UnresolvedRelation, _, _) => u.multipartIdentifier
    }
    val written = writeTargets(plan)
    if (travels.isEmpty && written.isEmpty) return plan
    val handler = ViewletAttach.handlerForResolution()
    if (handler.isEmpty) return plan
    val names = (travels ++ written).distinct
    val kinds = ask(handler.get, names)
    written.flatMap(n => Option(kinds(n).get("write")).filterNot(_.isNull)).headOption match {
      case Some(message) => return ViewletFailure(new ViewletException(message.asText))
      case None =>
    }
    plan.transformUpWithSubqueries {
      case RelationTimeTravel(u: UnresolvedRelation, timestamp, version)
          if Option(kinds(u.multipartIdentifier).get("travel")).exists(_.asBoolean) =>
        ViewletTimeTravel(u.multipartIdentifier, timestamp, version)
    }
  }

  private def ask(handler: ViewletHandler, names: Seq[Seq[String]]): Map[Seq[String], JsonNode] = {
    val json = mapper.writeValueAsString(names.map(_.toArray).toArray)
    val reply = mapper.readTree(ViewletProtocol.call(handler.relationKinds(json)))
    names.zip(reply.elements().asScala.toSeq).toMap
  }

  private def writeTargets(plan: LogicalPlan): Seq[Seq[String]] = {
    def names(p: LogicalPlan) = p.collect { case u: UnresolvedRelation => u.multipartIdentifier }
    plan.collect {
      case i: InsertIntoStatement => names(i.table)
      case u: UpdateTable => names(u.table)
      case d: DeleteFromTable => names(d.table)
      case m: MergeIntoTable => names(m.targetTable)
    }.flatten
  }
}

/**
 * `name VERSION AS OF v` / `TIMESTAMP AS OF t` of a relation Viewlet owns; ViewletResolution
 * replaces it by the relation's rows at that version once `timestamp` is resolved.
 */
case class ViewletTimeTravel(
    multipartIdentifier: Seq[String],
    timestamp: Option[Expression],
    version: Option[String]) extends LeafNode {
  override def output: Seq[Attribute] = Nil
  override lazy val resolved: Boolean = false
}
