package io.viewlet.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.command.LeafRunnableCommand

/**
 * A Viewlet statement; Python does the work when it runs (never at parse time). Each run is
 * logged through Spark's log4j (logger io.viewlet.spark.ViewletCommand: INFO when it starts
 * and ends, WARN when it fails), quiet at Spark's default WARN level.
 */
case class ViewletCommand(statementText: String, override val output: Seq[Attribute])
  extends LeafRunnableCommand {

  private def summary: String = statementText.replaceAll("\\s+", " ").trim.take(200)

  override def run(sparkSession: SparkSession): Seq[Row] = {
    val started = System.nanoTime()
    logInfo(s"Viewlet statement started: $summary")
    val rows =
      try ViewletProtocol.execute(statementText).get("rows")
      catch {
        case e: Exception =>
          logWarning(s"Viewlet statement failed: $summary: ${e.getMessage}")
          throw e
      }
    val seconds = (System.nanoTime() - started) / 1e9
    logInfo(f"Viewlet statement finished in $seconds%.3f s: $summary")
    if (rows == null || rows.isNull) Seq.empty
    else rows.elements().asScala.map(ViewletValues.toRow(_, output)).toSeq
  }

  override def simpleString(maxFields: Int): String = s"ViewletCommand $summary"
}
