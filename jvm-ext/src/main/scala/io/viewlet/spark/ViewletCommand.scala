package io.viewlet.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.command.LeafRunnableCommand

/** A Viewlet statement; Python does the work when it runs (never at parse time). */
case class ViewletCommand(statementText: String, override val output: Seq[Attribute])
  extends LeafRunnableCommand {

  override def run(sparkSession: SparkSession): Seq[Row] = {
    val rows = ViewletProtocol.execute(statementText).get("rows")
    if (rows == null || rows.isNull) Seq.empty
    else rows.elements().asScala.map(ViewletValues.toRow(_, output)).toSeq
  }

  override def simpleString(maxFields: Int): String =
    s"ViewletCommand ${statementText.replaceAll("\\s+", " ").take(200)}"
}
