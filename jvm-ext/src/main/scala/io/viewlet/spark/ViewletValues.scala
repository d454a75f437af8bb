package io.viewlet.spark

import java.time.{Instant, LocalDate, LocalDateTime, OffsetDateTime, ZoneId}
import java.util.Base64

import scala.jdk.CollectionConverters._
import scala.util.Try

import com.fasterxml.jackson.databind.JsonNode
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

/** JSON values from execute() to the external Row types Spark's command executor expects. */
object ViewletValues {
  def toRow(values: JsonNode, output: Seq[Attribute]): Row = {
    if (!values.isArray || values.size != output.size) {
      throw new ViewletException(
        s"execute() returned a row with ${values.size} values for ${output.size} columns: $values")
    }
    Row.fromSeq(output.indices.map(i => convert(values.get(i), output(i).dataType)))
  }

  def convert(v: JsonNode, dataType: DataType): Any =
    if (v == null || v.isNull) null
    else dataType match {
      case _: StringType => if (v.isTextual) v.asText else v.toString
      case LongType => v.asLong
      case IntegerType => v.asInt
      case ShortType => v.asInt.toShort
      case ByteType => v.asInt.toByte
      case DoubleType => v.asDouble
      case FloatType => v.asDouble.toFloat
      case BooleanType => v.asBoolean
      case _: DecimalType => if (v.isNumber) v.decimalValue else new java.math.BigDecimal(v.asText)
      case TimestampType => timestamp(v.asText)
      case TimestampNTZType => LocalDateTime.parse(v.asText.trim.replace(' ', 'T'))
      case DateType => LocalDate.parse(v.asText.trim.take(10))
      case BinaryType => Base64.getDecoder.decode(v.asText)
      case ArrayType(elementType, _) => v.elements().asScala.map(convert(_, elementType)).toSeq
      case MapType(keyType, valueType, _) =>
        v.properties().asScala.map { e =>
          convert(com.fasterxml.jackson.databind.node.TextNode.valueOf(e.getKey), keyType) ->
            convert(e.getValue, valueType)
        }.toMap
      case s: StructType =>
        val fields = s.fields.toSeq
        Row.fromSeq(fields.zipWithIndex.map { case (f, i) =>
          convert(if (v.isArray) v.get(i) else v.get(f.name), f.dataType)
        })
      case other =>
        throw new ViewletException(s"Viewlet cannot convert values of type ${other.simpleString}")
    }

  /** ISO timestamp; without an offset it is a wall-clock time in the session time zone. */
  def timestamp(text: String): Instant = {
    val s = text.trim.replace(' ', 'T')
    Try(OffsetDateTime.parse(s).toInstant)
      .orElse(Try(Instant.parse(s)))
      .orElse(Try(LocalDateTime.parse(s).atZone(sessionZone).toInstant))
      .orElse(Try(LocalDate.parse(s).atStartOfDay(sessionZone).toInstant))
      .getOrElse(throw new ViewletException(s"execute() returned an invalid timestamp '$text'"))
  }

  private def sessionZone: ZoneId = ZoneId.of(SQLConf.get.sessionLocalTimeZone)
}
