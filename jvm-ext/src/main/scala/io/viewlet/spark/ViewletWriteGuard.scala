package io.viewlet.spark

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, V2WriteCommand}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * Refuses SQL writes (INSERT, UPDATE, DELETE, MERGE, overwrite) to an incremental view's
 * result table registered in the catalog: only Viewlet writes it, one batch at a time, and a
 * row written by hand would be wrong from then on. The table is known by its Delta property
 * `viewlet.incrementalView=true`.
 *
 * Injected as a check rule, so it sees the analyzed plan: INSERT as a V2 write command over
 * the table, and delta-spark's UPDATE/DELETE/MERGE as its own commands, which all carry the
 * target's `catalogTable: Option[CatalogTable]` (read reflectively: they are not on the
 * extension's compile classpath). A write by path (delta.`/path`) names no catalog table and is
 * left alone.
 */
class ViewletWriteGuard extends (LogicalPlan => Unit) {

  override def apply(plan: LogicalPlan): Unit = plan.foreach { node =>
    target(node).foreach { case (name, properties) =>
      if (properties.get(ViewletWriteGuard.Marker).exists(_.equalsIgnoreCase("true"))) {
        val view = properties.getOrElse("viewlet.view", name)
        throw new ViewletException(
          s"$name is the result table of incremental view $view: only Viewlet writes it. " +
            s"Change its base tables and run REFRESH INCREMENTAL VIEW $view (or REFRESH " +
            s"INCREMENTAL VIEW $view FULL to rebuild it).")
      }
    }
  }

  private def target(node: LogicalPlan): Option[(String, Map[String, String])] = node match {
    case w: V2WriteCommand => w.table match {
      case r: DataSourceV2Relation =>
        Some((r.table.name, r.table.properties.asScala.toMap))
      case _ => None
    }
    case other if other.getClass.getName.startsWith("org.apache.spark.sql.delta.") =>
      catalogTable(other).map(t => (t.identifier.unquotedString, deltaProperties(t)))
    case _ => None
  }

  private def catalogTable(node: LogicalPlan): Option[CatalogTable] =
    Try(node.getClass.getMethod("catalogTable").invoke(node)).toOption.flatMap {
      case Some(t: CatalogTable) => Some(t)
      case _ => None
    }

  /** The catalog entry's properties, and the Delta table's own (a table registered over an
   * existing location keeps them in its log). */
  private def deltaProperties(table: CatalogTable): Map[String, String] =
    table.properties ++ Try {
      val session = org.apache.spark.sql.SparkSession.active
      session.sessionState.catalogManager
        .catalog(table.identifier.catalog.getOrElse("spark_catalog"))
        .asInstanceOf[org.apache.spark.sql.connector.catalog.TableCatalog]
        .loadTable(org.apache.spark.sql.connector.catalog.Identifier.of(
          table.identifier.database.toArray, table.identifier.table))
        .properties.asScala.toMap
    }.getOrElse(Map.empty[String, String])
}

object ViewletWriteGuard {
  val Marker = "viewlet.incrementalView"
}
