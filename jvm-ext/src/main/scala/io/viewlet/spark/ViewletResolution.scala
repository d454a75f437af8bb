package io.viewlet.spark

import java.util.{Collections, IdentityHashMap}

import scala.collection.mutable

import org.apache.spark.sql.catalyst.analysis.{RelationTimeTravel, UnresolvedRelation}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.expressions.Cast
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.TimestampType

/**
 * Resolves table names Spark's catalog does not know through the Python handler, and throws
 * the deferred error of a ViewletFailure (see ViewletStatement.plan).
 *
 * Injected as a resolution rule, so it runs in the analyzer's Resolution batch after Spark's
 * ResolveRelations and ResolveSQLOnFile: any UnresolvedRelation left here is one Spark could not
 * resolve. (ResolveSQLOnFile leaves `delta.`/path`` alone when no delta data source is on the
 * classpath: the ClassNotFoundException is swallowed there, so such names reach this rule.)
 */
class ViewletResolution extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan.foreach {
      case ViewletFailure(error) => throw error
      case _ =>
    }
    val travelled = resolveTimeTravel(plan)
    if (travelled.find(_.isInstanceOf[UnresolvedRelation]).isEmpty) return travelled
    resolveNames(travelled)
  }

  /** ViewletTimeTravel nodes (ViewletRelations) whose timestamp is resolved: the relation's
   * rows at that version, from the handler. */
  private def resolveTimeTravel(plan: LogicalPlan): LogicalPlan =
    plan.transformUpWithSubqueries {
      case t: ViewletTimeTravel if t.timestamp.forall(_.resolved) =>
        val micros = t.timestamp.map { ts =>
          val zone = Some(conf.sessionLocalTimeZone)
          Cast(ts, TimestampType, zone).eval() match {
            case null => throw new ViewletException(s"TIMESTAMP AS OF ${ts.sql} is NULL")
            case v: java.lang.Long => v.longValue
            case other => throw new ViewletException(s"TIMESTAMP AS OF ${ts.sql}: $other")
          }
        }
        ViewletProtocol.resolveRelationAt(t.multipartIdentifier, t.version, micros) match {
          case p: LogicalPlan => SubqueryAlias(t.multipartIdentifier.last, p)
          case _ =>
            throw new ViewletException(
              s"${t.multipartIdentifier.mkString(".")} cannot be read at that version")
        }
    }

  private def resolveNames(plan: LogicalPlan): LogicalPlan = {
    val skip = notReadPositions(plan)
    val read = plan.find {
      case u: UnresolvedRelation => !u.isStreaming && !skip.contains(u)
      case _ => false
    }
    // In the spark-sql shell, the first read of a name Spark does not know attaches Python.
    if (read.isEmpty || ViewletAttach.handlerForResolution().isEmpty) return plan
    // One Python call per name per rule application.
    val resolved = mutable.HashMap.empty[Seq[String], Option[LogicalPlan]]
    plan.resolveOperatorsUp {
      case u: UnresolvedRelation if !u.isStreaming && !skip.contains(u) =>
        val found = resolved.getOrElseUpdate(u.multipartIdentifier, lookup(u.multipartIdentifier))
        found.map(p => SubqueryAlias(u.multipartIdentifier.last, p)).getOrElse(u)
    }
  }

  private def lookup(nameParts: Seq[String]): Option[LogicalPlan] =
    ViewletProtocol.resolveRelation(nameParts) match {
      case null => None
      case p: LogicalPlan => Some(p)
      case other =>
        throw new ViewletException(
          s"resolveRelation() must return a LogicalPlan or null, got ${other.getClass.getName}")
    }

  /** Relations (by identity) in write targets and time-travel specs: left to Spark. */
  private def notReadPositions(plan: LogicalPlan): java.util.Set[LogicalPlan] = {
    val out = Collections.newSetFromMap(new IdentityHashMap[LogicalPlan, java.lang.Boolean])
    def addAll(p: LogicalPlan): Unit = p.foreach {
      case u: UnresolvedRelation => out.add(u)
      case _ =>
    }
    plan.foreach {
      case i: InsertIntoStatement => addAll(i.table)
      case m: MergeIntoTable => addAll(m.targetTable)
      case u: UpdateTable => addAll(u.table)
      case d: DeleteFromTable => addAll(d.table)
      case w: V2WriteCommand => addAll(w.table)
      case t: RelationTimeTravel => addAll(t.relation)
      case _ =>
    }
    out
  }
}
