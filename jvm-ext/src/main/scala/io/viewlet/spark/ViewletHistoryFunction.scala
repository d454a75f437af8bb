package io.viewlet.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.types.StringType

/**
 * `SELECT * FROM viewlet_history('v')`: a view's history (DESCRIBE INCREMENTAL VIEW v HISTORY)
 * as a table, to filter, join and aggregate like Databricks' event_log(). The rows are read
 * from the Python handler when the query is analyzed.
 */
object ViewletHistoryFunction {
  val Name = "viewlet_history"

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    (FunctionIdentifier(Name), new ExpressionInfo(getClass.getName.stripSuffix("$"), Name), build)

  def build(args: Seq[Expression]): LogicalPlan = {
    val name = args match {
      case Seq(e) if e.foldable && e.dataType == StringType && e.eval() != null =>
        e.eval().toString
      case _ =>
        throw new ViewletException(
          s"$Name takes one argument, the incremental view's name as a string: " +
            s"SELECT * FROM $Name('v').")
    }
    val statement = s"DESCRIBE INCREMENTAL VIEW `${name.replace("`", "``")}` HISTORY"
    val output = ViewletStatement.describe(statement)
    val rows = ViewletProtocol.execute(statement).get("rows")
    val data =
      if (rows == null || rows.isNull) Seq.empty
      else rows.elements().asScala.map(ViewletValues.toRow(_, output)).toSeq
    LocalRelation.fromExternalRows(output, data)
  }
}
