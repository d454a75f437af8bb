package io.viewlet.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, LogicalPlan}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/** Plans a Viewlet statement at parse time; its schema comes from the handler's describe(). */
object ViewletStatement {

  /**
   * The parser proxy may only throw ParseException (what parsePlan declares; anything else
   * checked becomes an UndeclaredThrowableException). Other errors are deferred into a
   * ViewletFailure node that ViewletResolution throws during analysis, right after parsing.
   */
  def plan(statementText: String): LogicalPlan =
    try ViewletCommand(statementText, describe(statementText))
    catch {
      case e: ParseException => throw e
      case e: ViewletException => ViewletFailure(e)
    }

  /**
   * A statement Spark also parses (DESCRIBE of a table): a ViewletCommand when the handler
   * claims it (the name is Viewlet's), None when it declines or no Python driver is there.
   */
  def planIfClaimed(statementText: String): Option[LogicalPlan] = {
    if (ViewletAttach.handlerForResolution().isEmpty) return None
    try {
      val reply = ViewletProtocol.describe(statementText)
      if (Option(reply.get("decline")).exists(_.asBoolean)) None
      else Some(ViewletCommand(statementText, attributes(reply)))
    } catch {
      case e: ParseException => throw e
      case e: ViewletException => Some(ViewletFailure(e))
    }
  }

  def describe(statementText: String): Seq[Attribute] =
    attributes(ViewletProtocol.describe(statementText))

  private def attributes(reply: com.fasterxml.jackson.databind.JsonNode): Seq[Attribute] = {
    val columns = Option(reply.get("columns")).map(_.elements().asScala.toSeq).getOrElse(Nil)
    val fields = columns.map { c =>
      val name = Option(c.get("name")).map(_.asText).getOrElse(
        throw new ViewletException(s"describe() returned a column without a name: $c"))
      val typ = Option(c.get("type")).map(_.asText).getOrElse("string")
      val dataType =
        try DataType.fromDDL(typ)
        catch {
          case e: Exception =>
            throw new ViewletException(
              s"describe() returned unknown type '$typ' for column '$name'", cause = Some(e))
        }
      StructField(name, dataType, nullable = true)
    }
    DataTypeUtils.toAttributes(StructType(fields))
  }
}

/** A Viewlet statement that failed before it could be planned; analysis throws `error`. */
case class ViewletFailure(error: ViewletException) extends LeafNode {
  override def output: Seq[Attribute] = Nil
  override lazy val resolved: Boolean = false
}
